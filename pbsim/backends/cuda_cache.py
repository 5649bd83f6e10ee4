"""The CUDA step kernels' disk cache: the compile options, the cache key (sources, kernel tree,
options, toolchain) and :class:`StepKernelCache`."""
from __future__ import annotations

import hashlib
import os
import sys
import time

# cuda.jit options of every pbsim kernel (part of the cache key)
JIT_OPTIONS = {"lto": False}
# step kernels compiled fully inlined (no CUDA_NOINLINE_DEFAULT): the explicit methods.  Measured
# on the H200 (docs/benchmarks/gpu.md): euler on the gym humanoid, SoA, B = 65,536, 17.3 M steps/s
# inlined vs 13.2-16.0 M with the out-of-line calls; its inlined compile is ~22 s on 2 cores (under
# the 30 s target).  The implicit methods keep the out-of-line set (pbad inlined: ~60 s to compile).
INLINE_ALL_MODULES = ("pbsim.integrators.explicit",)
# step kernels with more out of line than CUDA_NOINLINE_DEFAULT: the PGM forms (nmdp, pbd_nmdp and
# their zeroth-order forms).  Fully inlined but for the default set, their step was ~34,000 source
# lines in one function (its problem evaluation and contact Jacobian at 5 call sites each), and its
# cold compile did not finish in 430 s on the H200 host; with these out of line, ~15,000 in all and
# ~3,000 in the largest function (scripts/bench/bench_compile.py --device cuda, docs/benchmarks/gpu.md).
EXTRA_NOINLINE = {
    "pbsim.integrators.pgm": ("nmdp_eval", "nmdp_prepare", "pbd_nmdp_eval", "pbd_nmdp_prepare", "pgm_candidates",
                              "pgm_contact", "pgm_project", "pgm_qp", "qp_solve_as"),
}


def step_noinline(step_kernel) -> frozenset:
    """The device functions kept out of line in ``step_kernel``'s tree: none for the explicit
    methods (:data:`INLINE_ALL_MODULES`), :func:`pbsim.jit.cuda_noinline` and the module's
    :data:`EXTRA_NOINLINE` for the others; ``$PBSIM_CUDA_NOINLINE`` set decides for every method."""
    from pbsim.jit import cuda_noinline, python_source

    if os.environ.get("PBSIM_CUDA_NOINLINE", "default").strip() not in ("", "default"):
        return cuda_noinline()
    module = python_source(step_kernel).__module__
    if module.startswith(INLINE_ALL_MODULES):
        return frozenset()
    extra = [n for prefix, names in EXTRA_NOINLINE.items() if module.startswith(prefix) for n in names]
    return cuda_noinline() | frozenset(extra)



# ---------------------------------------------------------------------------- the disk cache
CACHE_FORMAT = 1
_VERSIONS: tuple | None = None


def toolchain_versions() -> tuple:
    """What turns the kernels into device code: Python, numba, numba-cuda, libNVVM and the linker
    (nvJitLink's version, or the driver's when numba-cuda links with cuLink).  Part of the key."""
    global _VERSIONS
    if _VERSIONS is None:
        import numba

        try:
            from importlib.metadata import version

            ncuda = version("numba-cuda")
        except Exception:  # noqa: BLE001
            ncuda = "unknown"
        try:
            from numba.cuda.cudadrv import nvvm

            nv = "nvvm %d.%d / ir %d.%d" % (*nvvm.NVVM().get_version(), *nvvm.NVVM().get_ir_version()[:2])
        except Exception as e:  # noqa: BLE001
            nv = f"nvvm unavailable ({type(e).__name__})"
        try:
            from numba.cuda.cudadrv.driver import _have_nvjitlink

            if _have_nvjitlink():
                from cuda.bindings import nvjitlink

                link = "nvjitlink %d.%d" % tuple(nvjitlink.version())[:2]
            else:
                from numba.cuda.cudadrv.driver import get_version as driver_version

                link = "culink %d.%d" % tuple(driver_version())[:2]
        except Exception as e:  # noqa: BLE001
            link = f"linker unknown ({type(e).__name__})"
        _VERSIONS = (f"python {sys.version_info[0]}.{sys.version_info[1]}", f"numba {numba.__version__}",
                     f"numba-cuda {ncuda}", nv, link)
    return _VERSIONS


def _cache_ident(pyfn, step_kernel, phase: str, features, layout: str) -> dict:
    """Everything but the argument types and the compute capability that decides a step kernel's
    device code: pbsim's kernel sources, the bound step kernel (name and whole tree), the
    driver, the phase, the ``Variants`` features, the layout and the compile options."""
    from pbsim.jit import source_hash, code_digest, kernel_tree_hash, python_source

    f = python_source(step_kernel)
    return {
        "format": CACHE_FORMAT,
        "sources": source_hash(),
        "driver": f"{pyfn.__name__}:{code_digest(pyfn.__code__)}",
        "step": f"{f.__module__}.{f.__qualname__}",
        "tree": kernel_tree_hash(step_kernel),
        "phase": phase,
        "features": tuple(sorted(features)) if features is not None else "all",
        "layout": layout,
        "options": tuple(sorted(JIT_OPTIONS.items())),
        "noinline": tuple(sorted(step_noinline(step_kernel))),
    }


def cache_key(ident: dict, argtypes, cc) -> tuple:
    """The full key of one compiled kernel: ``ident`` (:func:`_cache_ident`), the argument types,
    the compute capability and :func:`toolchain_versions`."""
    return tuple(sorted(ident.items())) + (("argtypes", tuple(str(a) for a in argtypes)),
                                           ("cc", tuple(int(c) for c in cc[:2])),
                                           ("versions", toolchain_versions()))


def key_digest(key: tuple) -> str:
    return hashlib.sha256(repr(key).encode()).hexdigest()[:40]


def _lib_cc(cc):
    """numba-cuda's key of a code library's PTX/cubin for device ``cc`` (``sm_90a`` from 9.0 on)."""
    cc = tuple(int(c) for c in cc[:2])
    return (cc[0], cc[1], "a" if cc >= (9, 0) else "")


def _current_cc():
    import numba.cuda.dispatcher as cdisp

    return tuple(cdisp.get_current_device().compute_capability)


def _notice_default(msg):
    print(msg, file=sys.stderr, flush=True)


# First-compile seconds of a step kernel on the 2-core development machine (no GPU, NVVM and
# nvJitLink from numba-cuda[cu12], this build's options; docs/benchmarks/gpu.md): the notice's estimate.
# "pgm": the step kernel of nmdp, nmdp_zo, pbd_nmdp and pbd_nmdp_zo (nmdp: 203 s; 188 s on the H200
# host beside 16 other compiles).
CUDA_COMPILE_ESTIMATE_S = {"euler": 40, "pbad": 45, "pgm": 200}
NOTICE = _notice_default  # None: no first-run notice (warmup, benchmarks set it)


class StepKernelCache:
    """numba-cuda's per-dispatcher cache slot (``dispatcher._cache``), backed by one file per
    compiled kernel under :func:`pbsim.jit.cuda_cache_dir`: a hit loads the kernel's
    cubin (and PTX) for this compute capability and skips typing, NVVM and ptxas.

    numba-cuda's own ``cache=True`` cannot be used: pbsim's step kernels are one code object
    bound to different step kernels through their globals, which its key (the function's code,
    not its globals) cannot tell apart.  Here the file name is a hash of the full
    :func:`cache_key`, and the file holds the key itself, compared on load: a stale or colliding
    entry is never used.  Entries are written atomically (a temporary file, then a rename)."""

    cache_path = None

    def __init__(self, ident: dict, label: str = ""):
        self.ident = ident
        self.label = label or ident.get("step", "").rsplit(".", 1)[-1]
        self.hits = self.misses = 0
        self._t0 = None

    # numba-cuda calls these (NullCache's interface)
    def enable(self):
        pass

    def disable(self):
        pass

    def flush(self):
        pass

    def path(self, key) -> str:
        from pbsim.jit import cuda_cache_dir

        return os.path.join(cuda_cache_dir(), f"{self.ident['sources']}", key_digest(key) + ".nbk")

    def load_overload(self, sig, target_context=None, cc=None):
        """The cached kernel for argument types ``sig`` on ``cc`` (default: the current device's),
        or None (after which numba-cuda compiles; the first-run notice is shown then)."""
        cc = tuple(cc or _current_cc())
        key = cache_key(self.ident, tuple(sig), cc)
        kern = None
        try:
            kern = self._read(self.path(key), key, cc)
        except Exception:  # noqa: BLE001 - a damaged or foreign file is a miss, never an error
            kern = None
        if kern is not None:
            self.hits += 1
            return kern
        self.misses += 1
        self._t0 = time.perf_counter()
        if NOTICE is not None:
            name = self.label.split("__")[0].removesuffix("_step")
            est = CUDA_COMPILE_ESTIMATE_S.get(name)
            NOTICE(f"pbsim: compiling kernels for {name} ({self.ident.get('layout')}, {self.ident.get('phase')}) on "
                   f"the GPU (first run only{f', ~{est} s' if est else ''})...")
        return None

    def save_overload(self, sig, kernel, cc=None):
        """Store ``kernel`` (bound, or with its cubin built for ``cc``) under its key."""
        cc = tuple(cc or _current_cc())
        key = cache_key(self.ident, tuple(sig), cc)
        try:
            self._write(self.path(key), key, kernel, cc)
        except Exception as e:  # noqa: BLE001 - a read-only or full disk must not stop a run
            print(f"pbsim: could not write the CUDA kernel cache ({type(e).__name__}: {e})", file=sys.stderr, flush=True)
        self.seconds = time.perf_counter() - self._t0 if self._t0 else None

    @staticmethod
    def _write(path, key, kernel, cc):
        import pickle
        import zlib

        from numba.cuda import serialize

        states = dict(kernel._reduce_states())
        lib = dict(states.pop("codelibrary")._reduce_states())
        lc = _lib_cc(cc)
        cubin = lib["cubin_cache"].get(lc)
        if cubin is None:
            raise RuntimeError(f"no cubin for {lc}")
        # keep what loading needs: the cubin and PTX for this device, not the 10s of MB of LLVM IR
        lib["llvm_strs"] = []
        lib["cubin_cache"] = {lc: bytes(getattr(cubin, "code", cubin))}
        lib["ptx_cache"] = {k: v for k, v in lib["ptx_cache"].items() if k == lc}
        lib["linkerinfo_cache"] = {k: v for k, v in lib["linkerinfo_cache"].items() if k == lc}
        blob = zlib.compress(serialize.dumps((states, lib)), 3)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:
            pickle.dump((key, blob), fh, protocol=4)
        os.replace(tmp, path)

    @staticmethod
    def _read(path, key, cc):
        import pickle
        import zlib

        if not os.path.isfile(path):
            return None
        with open(path, "rb") as fh:
            stored, blob = pickle.load(fh)
        if stored != key:  # a hash collision or a foreign file: never used
            return None
        from numba.cuda import serialize
        from numba.cuda.codegen import CUDACodeLibrary
        from numba.cuda.dispatcher import _Kernel

        states, lib = serialize.loads(zlib.decompress(blob))
        lc = _lib_cc(cc)
        if lc not in lib["cubin_cache"]:
            return None
        try:
            from cuda.core import ObjectCode
        except ImportError:  # older cuda-core
            from cuda.core.experimental import ObjectCode
        lib["cubin_cache"] = {lc: ObjectCode.from_cubin(lib["cubin_cache"][lc], name=lib["name"])}
        states["codelibrary"] = CUDACodeLibrary._rebuild(**lib)
        return _Kernel._rebuild(**states)
