"""One kernel source, two targets.

Kernels are plain Python functions over preallocated arrays (no allocation, no
Python objects, no exceptions).  ``@kernel`` compiles one with ``numba.njit``
for the CPU and remembers the Python source, so that :func:`cuda_twin` can
compile the *same* function with ``numba.cuda.jit(device=True)``: the twin gets
a copy of the function's globals in which every other ``@kernel`` it calls is
replaced by that kernel's own CUDA twin.  Nothing here imports CUDA until a twin
is asked for, so the CPU path never needs numba-cuda.
"""
from __future__ import annotations

import hashlib
import os
import types
from pathlib import Path

import numba


def _source_hash() -> str:
    """Hash of every pbsim source file that defines kernels.

    numba's cache only watches a function's own file, so a kernel whose callee (in another
    file) changed would load stale machine code.  Keying the cache folder on all kernel sources
    makes any change recompile everything that depends on it."""
    h = hashlib.sha1()
    root = Path(__file__).resolve().parents[1]
    for p in sorted(root.rglob("*.py")):
        data = p.read_bytes()
        if b"@kernel" in data or p.name == "kernel.py":
            h.update(str(p.relative_to(root)).encode())
            h.update(data)
    return h.hexdigest()[:16]


def _cache_dir() -> str:
    base = os.environ.get("PBSIM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "pbsim", "numba")
    return os.path.join(base, f"{numba.__version__}-{_source_hash()}")


numba.config.CACHE_DIR = _cache_dir()

_PY_FUNCS: dict[int, types.FunctionType] = {}  # id(cpu dispatcher) -> python function
_CUDA_TWINS: dict[int, object] = {}


PARALLEL_MIN_BATCH = 4  # below this many states a batch runs on the calling thread


class BatchKernel:
    """A batch driver compiled twice from one source: serial and ``prange``-parallel.

    Calling it picks the parallel build when numba has more than one thread and the batch
    (leading axis of the first array argument with ndim >= 2) has at least
    ``PARALLEL_MIN_BATCH`` states; a thread pool woken for one state costs more than it gives,
    and a lot more on a loaded machine.
    """

    def __init__(self, f):
        self.py_func = f
        self.parallel = numba.njit(cache=True, parallel=True, error_model="numpy")(f)
        serial_f = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
        serial_f.__qualname__ = f.__qualname__ + "_serial"  # its own cache file
        serial_f.__module__ = f.__module__
        self.serial = numba.njit(cache=True, error_model="numpy")(serial_f)
        self.__doc__ = f.__doc__
        self.__name__ = f.__name__

    def __call__(self, *args):
        for a in args:
            shape = getattr(a, "shape", None)
            if shape is not None and len(shape) >= 2:
                if shape[0] >= PARALLEL_MIN_BATCH and numba.get_num_threads() > 1:
                    return self.parallel(*args)
                break
        return self.serial(*args)


def kernel(fn=None, *, parallel: bool = False, inline: bool = False):
    """Compile ``fn`` for the CPU (njit, cached) and register it for a CUDA twin.

    ``parallel=True`` marks a batch driver (a ``prange`` loop over states): it becomes a
    :class:`BatchKernel` with a serial and a parallel build.
    """

    def wrap(f):
        if parallel:
            return BatchKernel(f)
        # _nrt=False: kernels allocate nothing, so array views need no reference counting; with
        # it, every view (w.R[b, i]) cost an atomic incref/decref pair (3x slower kernels).
        disp = numba.njit(cache=True, error_model="numpy", inline="always" if inline else "never",
                          _nrt=False)(f)
        _PY_FUNCS[id(disp)] = f
        return disp

    return wrap(fn) if fn is not None else wrap


def is_kernel(obj) -> bool:
    return id(obj) in _PY_FUNCS


def python_source(disp):
    """The plain Python function behind a kernel (runs without numba, slowly)."""
    return _PY_FUNCS[id(disp)]


def cuda_twin(disp):
    """``numba.cuda.jit(device=True)`` compilation of the same source as ``disp``."""
    key = id(disp)
    if key in _CUDA_TWINS:
        return _CUDA_TWINS[key]
    from numba import cuda  # imported lazily: the CPU path never needs it

    f = _PY_FUNCS[key]
    g = dict(f.__globals__)
    twin_fn = types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)
    twin = cuda.jit(device=True)(twin_fn)
    _CUDA_TWINS[key] = twin
    # callees: swap every registered CPU kernel in the copied globals for its twin
    for name, val in list(g.items()):
        if is_kernel(val):
            g[name] = cuda_twin(val)
    return twin
