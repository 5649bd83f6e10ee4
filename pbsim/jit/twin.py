"""The CUDA side of a kernel: its ``cuda.jit(device=True)`` twin, the device functions kept out of
line, and the identity of a kernel tree (part of the CUDA cache key).  Nothing here imports CUDA
until a twin is asked for."""
from __future__ import annotations

import hashlib
import os
import types

from pbsim.jit.build import _PY_FUNCS, is_kernel

_CUDA_TWINS: dict[tuple, object] = {}  # (id(kernel), noinline set) -> its CUDA twin


def cuda_twin(disp, noinline=None):
    """``numba.cuda.jit(device=True)`` compilation of the same source as ``disp``, its callees'
    twins bound in its globals.  ``noinline``: the names of the device functions of this tree kept
    out of line (None: :func:`cuda_noinline`); each set gets its own twins."""
    ni = cuda_noinline() if noinline is None else frozenset(noinline)
    key = (id(disp), ni)
    if key in _CUDA_TWINS:
        return _CUDA_TWINS[key]
    from numba import cuda  # imported lazily: the CPU path never needs it

    f = _PY_FUNCS[id(disp)]
    g = dict(f.__globals__)
    twin_fn = types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)
    twin = cuda.jit(device=True)(twin_fn)
    if f.__name__ in ni:
        _mark_noinline(twin)
    _CUDA_TWINS[key] = twin
    # callees: swap every registered CPU kernel in the copied globals for its twin
    for name, val in list(g.items()):
        if is_kernel(val):
            g[name] = cuda_twin(val, ni)
    return twin


# ---------------------------------------------------------------------------------------------
# CUDA only: device functions kept out of line, and the identity of a kernel tree (the CUDA cache)

# Device functions (by Python name) that the CUDA build keeps out of line: NVVM otherwise inlines the
# whole step into one function, and NVVM and ptxas time grow faster than linearly with its size
# (scripts/bench/bench_compile.py --device cuda, docs/benchmarks/gpu.md).  The CPU build is not affected.
CUDA_NOINLINE_DEFAULT = ("aba_backward", "aba_forward", "accel_solve", "clamp_active_set", "contact_generalized_forces",
                         "control_torques", "crba_state", "rnea_state", "pbad2_eval", "lm_iterate", "lm_trial",
                         "joint_energy", "joint_gradient")
_NOINLINE: frozenset | None = None


def cuda_noinline() -> frozenset:
    """The names :func:`cuda_twin` marks ``noinline`` in this process: ``$PBSIM_CUDA_NOINLINE``
    ("default", "none", or a comma list of kernel names), read once (the twins are built once)."""
    global _NOINLINE
    if _NOINLINE is None:
        v = os.environ.get("PBSIM_CUDA_NOINLINE", "default").strip()
        if v in ("", "default"):
            _NOINLINE = frozenset(CUDA_NOINLINE_DEFAULT)
        elif v == "none":
            _NOINLINE = frozenset()
        else:
            _NOINLINE = frozenset(n.strip() for n in v.split(",") if n.strip())
    return _NOINLINE


def _mark_noinline(twin):
    """Give the LLVM definition of every build of the device function ``twin`` the ``noinline``
    attribute (numba-cuda has no option for it; NVVM never inlines such a call)."""
    orig = getattr(twin, "compile_device", None)
    if orig is None:  # the CUDA simulator's stand-in: Python, nothing to inline
        return

    def compile_device(args, return_type=None):
        new = args not in twin.overloads
        cres = orig(args, return_type)
        if new:
            fn = cres.library.get_function(cres.fndesc.llvm_func_name)
            fn.attributes.discard("alwaysinline")
            fn.attributes.add("noinline")
        return cres

    twin.compile_device = compile_device


def code_digest(code) -> str:
    """A hash of a code object's bytecode, names and constants (nested code objects included).
    Not ``marshal.dumps``: its bytes depend on reference counts, so they differ between processes."""
    h = hashlib.sha256()
    h.update(code.co_code)
    h.update(repr((code.co_name, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
                   code.co_argcount, code.co_kwonlyargcount, code.co_flags)).encode())
    for c in code.co_consts:
        h.update(code_digest(c).encode() if isinstance(c, types.CodeType) else repr((type(c).__name__, c)).encode())
    return h.hexdigest()[:32]


def kernel_tree(k) -> list:
    """Every kernel reachable from kernel ``k`` through the global names its code reads, ``k``
    first, in the order of a depth-first walk (the same order in every process)."""
    found: dict = {}
    todo = [k]
    while todo:
        d = todo.pop()
        if id(d) in found:
            continue
        found[id(d)] = d
        f = _PY_FUNCS[id(d)]
        todo.extend(v for n in f.__code__.co_names if is_kernel(v := f.__globals__.get(n)))
    return list(found.values())


def kernel_tree_hash(k) -> str:
    """A hash of the kernel tree below kernel ``k`` as it would be compiled: every reachable
    kernel's module, qualified name and code, the kernel each global name calls (a
    :class:`Variants` or :func:`specialize` copy calls other kernels than its original) and the
    plain constants it reads.  Part of the CUDA cache key, beside the source hash."""
    order = {id(d): i for i, d in enumerate(kernel_tree(k))}
    h = hashlib.sha256()
    for kid in order:
        f = _PY_FUNCS[kid]
        h.update(f"{f.__module__}.{f.__qualname__}\0".encode())
        h.update(code_digest(f.__code__).encode())
        for n in f.__code__.co_names:
            v = f.__globals__.get(n)
            if is_kernel(v):
                h.update(f"{n}->{order[id(v)]};".encode())
            elif isinstance(v, (bool, int, float, str, tuple)):
                h.update(f"{n}={v!r};".encode())
    return h.hexdigest()[:32]
