"""Layer 0: the kernel foundation every other layer compiles through.

- :mod:`pbsim.jit.build`: ``@kernel`` (numba ``njit`` for the CPU, the Python source kept for a
  CUDA twin), batch drivers, ``bind``/``entry``/``specialize`` and ``Variants``;
- :mod:`pbsim.jit.watch`: ``CompileWatch``, the first-run compile notice and its timing;
- :mod:`pbsim.jit.twin`: ``cuda_twin`` and the CUDA cache's kernel-tree identity.

Nothing here imports a pbsim module above it; ``pbsim.backends`` holds only the batch drivers.
"""
from pbsim.jit.build import (PARALLEL_MIN_BATCH, BatchKernel, InnerKernel, Variants, bind, cuda_cache_dir, entry,
                             is_kernel, kernel, python_source, python_tree, source_hash, specialize, unused,
                             unused_float, variants_policy)
from pbsim.jit.twin import CUDA_NOINLINE_DEFAULT, code_digest, cuda_noinline, cuda_twin, kernel_tree_hash
from pbsim.jit.watch import COMPILE_ESTIMATE_S, CompileWatch

__all__ = ["PARALLEL_MIN_BATCH", "BatchKernel", "InnerKernel", "Variants", "bind", "cuda_cache_dir", "entry",
           "is_kernel", "kernel", "python_source", "python_tree", "source_hash", "specialize", "unused", "unused_float", "variants_policy",
           "CUDA_NOINLINE_DEFAULT",
           "code_digest", "cuda_noinline", "cuda_twin", "kernel_tree_hash", "COMPILE_ESTIMATE_S", "CompileWatch"]
