"""CUDA backend: the CPU kernels' own source, compiled as numba-cuda device functions, one
thread per trajectory.

Nothing here imports ``numba.cuda`` until a GPU is asked for (:func:`require_cuda`), so the CPU
path never needs numba-cuda.  Without a GPU (or without numba-cuda) every entry point raises
:class:`DeviceError` with a one-line reason, never a traceback from inside numba.  Under
``NUMBA_ENABLE_CUDASIM=1`` (numba's CUDA simulator, set before numba.cuda is first imported) the
same kernels run as Python on the CPU: that is how CI checks them.

Layout (``layout=``): every workspace/state array keeps the kernels' logical shape with the
batch axis first, ``(B, ...)``.  ``"aos"`` stores it C-contiguous (trajectory b's scratch is
one block); ``"soa"`` stores the batch axis *fastest* (strides ``(8, ...)``), so that the 32
threads of a warp touching ``w.IA[b, i, r, c]`` for consecutive ``b`` read consecutive words
(coalesced).  The kernels do not change: numba compiles strided ('A' layout) indexing.  The
default ``"auto"`` takes SoA from ``AUTO_SOA_MIN_BATCH`` trajectories on, except for pbad
(``AUTO_AOS_METHODS``), as measured on an H200 (docs/benchmarks/gpu.md).

Compilation: the step kernels are built with ``lto=False`` (numba-cuda turns LTO on whenever
nvJitLink is present; pbsim links no external code, so it only cost a second optimisation) and
with the device functions of :data:`pbsim.jit.CUDA_NOINLINE_DEFAULT` kept out of
line, except in the explicit methods' kernels, which are compiled fully inlined
(:func:`step_noinline`: faster on the device, and their compile stays short); only the
features a run uses are compiled (the CPU's :class:`~pbsim.jit.Variants`).
The compiled code (cubin and PTX per compute capability) is kept on disk under
``$PBSIM_CACHE_DIR/cuda`` (else ``~/.cache/pbsim/cuda``) by :class:`StepKernelCache`, so a second
process loads it instead of compiling (``pbsim warmup --device cuda`` fills it).
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import time
import types
from collections import namedtuple

import numpy as np

from pbsim.errors import InputError, PbsimError, check_dt


class DeviceError(PbsimError, RuntimeError):
    """The requested compute device is not usable (no GPU, no driver, no numba-cuda)."""


INSTALL_HINT = 'install the GPU extra: pip install "numba-cuda>=0.30" (numpy<2.5)'
LAYOUTS = ("aos", "soa")
# layout="auto": SoA from this batch size on, except for the methods in AUTO_AOS_METHODS.  Measured
# on the H200 (docs/benchmarks/gpu.md, gymnasium humanoid + floor and contact between bodies, fp64):
# euler SoA/AoS 1.32x at B = 2,048, 1.18x at 4,096, 1.13x at 8,192, 1.39x at 65,536 (floor only:
# 1.52x at 16,384, 2.0x at 65,536); pbfd 1.57x at 16,384, 1.29x at 65,536.  pbad: 1.0x at 16,384 and
# 0.93x at 65,536 (floor only), so it stays AoS.  Below 2,048 nothing was measured (the GPU is not
# filled; one compile, AoS, serves small runs).
AUTO_SOA_MIN_BATCH = 2048
AUTO_AOS_METHODS = ("pbad",)
# threads per block: 128 is what every H200 figure in docs/benchmarks/gpu.md was measured with
# (no other value has been measured yet; PBSIM_CUDA_TPB or threads= overrides it).
DEFAULT_TPB = 128
# cuda.jit options of every pbsim kernel (part of the cache key)
JIT_OPTIONS = {"lto": False}
# step kernels compiled fully inlined (no CUDA_NOINLINE_DEFAULT): the explicit methods.  Measured
# on the H200 (docs/benchmarks/gpu.md): euler on the gym humanoid, SoA, B = 65,536, 17.3 M steps/s
# inlined vs 13.2-16.0 M with the out-of-line calls; its inlined compile is ~22 s on 2 cores (under
# the 30 s target).  The implicit methods keep the out-of-line set (pbad inlined: ~60 s to compile).
INLINE_ALL_MODULES = ("pbsim.integrators.explicit",)


def resolve_layout(layout: str, batch: int, integrator: str | None = None) -> str:
    """``"aos"``/``"soa"``; ``"auto"`` is SoA for ``batch >= AUTO_SOA_MIN_BATCH``, else AoS (and AoS
    for the methods of ``AUTO_AOS_METHODS``)."""
    if layout == "auto":
        if integrator in AUTO_AOS_METHODS:
            return "aos"
        return "soa" if int(batch) >= AUTO_SOA_MIN_BATCH else "aos"
    if layout not in LAYOUTS:
        raise InputError(f"layout must be one of {LAYOUTS + ('auto',)}, got {layout!r}")
    return layout


def simulated() -> bool:
    """True when numba's CUDA simulator is on (``NUMBA_ENABLE_CUDASIM=1``)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


_STATUS: tuple[bool, str] | None = None


def device_status() -> tuple[bool, str]:
    """``(usable, description)``: the GPU's name, or why there is none.  Never raises."""
    global _STATUS
    if _STATUS is not None:
        return _STATUS
    try:
        from numba import cuda
    except Exception as e:  # noqa: BLE001 - any import failure means "no numba-cuda"
        _STATUS = (False, f"numba-cuda is not importable ({type(e).__name__}: {e}); {INSTALL_HINT}")
        return _STATUS
    if simulated():
        _STATUS = (True, "numba CUDA simulator (NUMBA_ENABLE_CUDASIM=1, runs on the CPU)")
        return _STATUS
    try:
        ok = bool(cuda.is_available())
    except Exception as e:  # noqa: BLE001
        ok, why = False, f"{type(e).__name__}: {e}"
    else:
        why = "no CUDA driver or no NVIDIA GPU found"
    if not ok:
        _STATUS = (False, f"no usable CUDA GPU ({why}); run on a machine with an NVIDIA GPU, "
                          "use device='cpu', or set NUMBA_ENABLE_CUDASIM=1 to simulate (slow)")
        return _STATUS
    try:
        dev = cuda.get_current_device()
        name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
        cc = ".".join(map(str, dev.compute_capability))
        _STATUS = (True, f"{name} (compute capability {cc})")
    except Exception as e:  # noqa: BLE001
        _STATUS = (False, f"CUDA GPU found but unusable ({type(e).__name__}: {e})")
    return _STATUS


def available() -> bool:
    return device_status()[0]


def device_name() -> str:
    return device_status()[1]


def require_cuda():
    """The ``numba.cuda`` module, or :class:`DeviceError` saying why it cannot be used."""
    ok, msg = device_status()
    if not ok:
        raise DeviceError(f"device='cuda' is not available: {msg}")
    from numba import cuda

    return cuda


# ---------------------------------------------------------------------------- device arrays
def _is_dev(a) -> bool:
    return hasattr(a, "copy_to_host") or hasattr(a, "__cuda_array_interface__")


_HOST_ARRAYS = False  # offline builds (no GPU): "device" arrays are host arrays with the device strides


def _host_mode() -> bool:
    return simulated() or _HOST_ARRAYS


def dev_empty(shape, layout: str = "aos", dtype=np.float64):
    """A device array of logical shape ``shape`` (batch axis first) in ``layout``.

    Under the simulator (and in offline builds) a device array is a plain numpy array with the
    same strides."""
    cuda = None if _HOST_ARRAYS else require_cuda()
    shape = tuple(int(s) for s in shape)
    if layout not in LAYOUTS:
        raise InputError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    # an empty array is stored C-contiguous in both layouts: its contiguity flags (and so its numba
    # type, hence the kernel's signature and cache key) would otherwise depend on the batch size
    soa = layout == "soa" and len(shape) > 1 and 0 not in shape
    phys = shape[1:] + shape[:1] if soa else shape  # batch axis last = fastest in memory
    if _host_mode():
        buf = np.zeros(phys, dtype)
        return np.moveaxis(buf, -1, 0) if soa else buf
    base = cuda.device_array(phys, dtype=dtype)
    if not soa:
        return base
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    strides = (base.strides[-1],) + tuple(base.strides[:-1])
    view = DeviceNDArray(shape, strides, np.dtype(dtype), gpu_data=base.gpu_data)
    view._pbsim_base = base  # keep the allocation (and its physical shape) reachable
    return view


def dev_put(host, layout: str = "aos", out=None):
    """Copy host array ``host`` (batch axis first) to the device (into ``out`` if given)."""
    host = np.asarray(host)
    d = dev_empty(host.shape, layout, host.dtype) if out is None else out
    if _host_mode():
        d[...] = host
        return d
    if host.size == 0:
        return d
    base = getattr(d, "_pbsim_base", None)
    if base is None:
        d.copy_to_device(np.ascontiguousarray(host))
    else:
        base.copy_to_device(np.ascontiguousarray(np.moveaxis(host, 0, -1)))
    return d


def dev_get(d) -> np.ndarray:
    """Copy a device array back to the host (C-contiguous, batch axis first)."""
    if isinstance(d, np.ndarray):
        return np.array(d)
    base = getattr(d, "_pbsim_base", None)
    if base is None:
        return d.copy_to_host()
    return np.ascontiguousarray(np.moveaxis(base.copy_to_host(), -1, 0))


def tuple_to_device(nt, layout: str = "aos", batched: bool = False):
    """A namedtuple with every numpy array copied to the device (scalars stay).

    ``batched``: arrays have a leading batch axis and follow ``layout``; otherwise (model,
    scene, tableau: shared by all threads) they are stored C-contiguous."""
    vals = []
    for x in nt:
        if isinstance(x, np.ndarray):
            if x.ndim == 0:
                vals.append(x.item())
            else:
                vals.append(dev_put(x, layout if batched else "aos"))
        else:
            vals.append(x)
    return type(nt)(*vals)


def zeros_like_tuple(nt, layout: str = "aos"):
    """Device zeros with the shapes of a batched workspace namedtuple."""
    return type(nt)(*(dev_put(np.zeros(x.shape, x.dtype), layout) for x in nt))


# ---------------------------------------------------------------------------- kernels
# Module globals the CUDA kernels below call; _bind_twins() sets them to the cuda_twin(...) of the
# CPU kernels (numba resolves globals when a kernel is first compiled).
cuda = None
_fk = _rnea = _crba = _aba = _energy = _copy_rows = _step = None
_K = None  # namespace of compiled kernels

Kernels = namedtuple("Kernels", "fk rnea crba aba energy record commit")


def _fk_k(m, w, q):
    b = cuda.grid(1)
    if b < q.shape[0]:
        _fk(m, w, b, q[b])


def _rnea_k(m, w, q, v, qdd, tau):
    b = cuda.grid(1)
    if b < q.shape[0]:
        _rnea(m, w, b, q[b], v[b], qdd[b], tau[b])


def _crba_k(m, w, q, M):
    b = cuda.grid(1)
    if b < q.shape[0]:
        _crba(m, w, b, q[b], M[b])


def _aba_k(m, w, q, v, tau, arm_extra, qdd):
    b = cuda.grid(1)
    if b < q.shape[0]:
        _aba(m, w, b, q[b], v[b], tau[b], arm_extra, qdd[b])


def _energy_k(m, w, q, v, e):
    b = cuda.grid(1)
    if b < q.shape[0]:
        _energy(m, w, b, q[b], v[b], e[b])


def _steps_k(m, s, c, w, sw, x, q, v, qn, vn, dt, nsteps):
    """``nsteps`` steps of the stepper ``_step`` in one launch; the state stays in (q, v).
    (Specialized per stepper by :func:`_specialize`, which rebinds ``_step``.)"""
    b = cuda.grid(1)
    if b < q.shape[0]:
        for _k in range(nsteps):
            _step(m, s, c, w, sw, x, b, q, v, dt, qn, vn)
            _copy_rows(m, b, qn, vn, q, v)


def _phase_k(m, s, c, w, sw, x, q, v, qn, vn, dt):
    """One phase (begin / one solver iteration / end) of a step, for per-launch scheduling."""
    b = cuda.grid(1)
    if b < q.shape[0]:
        _step(m, s, c, w, sw, x, b, q, v, dt, qn, vn)


def _commit_k(m, q, v, qn, vn):
    b = cuda.grid(1)
    if b < q.shape[0]:
        _copy_rows(m, b, qn, vn, q, v)


def _record_k(m, w, q, v, qo, vo, e):
    """Copy the state into contiguous (B, n) frame buffers and evaluate its energy."""
    b = cuda.grid(1)
    if b < q.shape[0]:
        for j in range(m.nq):
            qo[b, j] = q[b, j]
        for j in range(m.nv):
            vo[b, j] = v[b, j]
        _energy(m, w, b, q[b], v[b], e[b])


def _bind_twins(cuda_mod):
    """Set the module globals the kernels call to the CUDA twins of the CPU kernels."""
    global cuda, _fk, _rnea, _crba, _aba, _energy, _copy_rows
    from pbsim.integrators.driver import copy_rows
    from pbsim.jit import cuda_twin
    from pbsim.dynamics.aba import aba_state
    from pbsim.dynamics.crba import crba_state
    from pbsim.dynamics.energy import energy_state
    from pbsim.dynamics.kinematics import fk_state
    from pbsim.dynamics.rnea import rnea_state

    cuda = cuda_mod
    _fk, _rnea, _crba, _aba = cuda_twin(fk_state), cuda_twin(rnea_state), cuda_twin(crba_state), cuda_twin(aba_state)
    _energy, _copy_rows = cuda_twin(energy_state), cuda_twin(copy_rows)


def _jit(cuda_mod, f):
    """``cuda.jit`` with :data:`JIT_OPTIONS` (the simulator's ``jit`` takes none of them)."""
    return cuda_mod.jit(f) if simulated() else cuda_mod.jit(f, **JIT_OPTIONS)


def kernels() -> Kernels:
    """Compile (lazily, once) the CUDA kernels from the twins of the CPU kernels."""
    global _K
    if _K is not None:
        return _K
    cuda_mod = require_cuda()
    _bind_twins(cuda_mod)
    def jit(f):
        return _jit(cuda_mod, f)

    _K = Kernels(jit(_fk_k), jit(_rnea_k), jit(_crba_k), jit(_aba_k), jit(_energy_k), jit(_record_k), jit(_commit_k))
    return _K


def toolkit_missing() -> str | None:
    """Why the real CUDA target cannot compile on this machine (no GPU needed), or None.

    Loads what compilation needs: libnvvm, libnvrtc and libdevice.  ``nvvm.is_available()``
    alone says yes before anything is loaded, and a missing NVRTC then surfaced as a raw
    ``DynamicLibNotFoundError`` after a long compile."""
    missing = []
    try:
        from numba.cuda.cudadrv import libs, nvvm
    except Exception as e:  # noqa: BLE001 - any import failure means no usable numba-cuda
        return f"numba-cuda ({type(e).__name__}: {e}); {INSTALL_HINT}"

    def probe(name, fn):
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - cuda.pathfinder's *NotFoundError, NvvmSupportError ...
            missing.append(f"{name} ({type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''})")

    def nvrtc():
        from cuda.bindings import nvrtc as b

        b.nvrtcVersion()

    def libdevice():
        p = libs.get_libdevice()
        if not (p and os.path.isfile(p)):
            raise FileNotFoundError(f"not a file: {p!r}")

    probe("libnvvm", nvvm.NVVM)
    probe("libnvrtc", nvrtc)
    probe("libdevice", libdevice)
    return "; ".join(missing) if missing else None


def compile_ptx(model, integrator: str = "euler", layout: str = "aos", cc=(9, 0), batch: int = 4,
                phase: str = "steps", scene=None, **options) -> str:
    """PTX of the real (not simulated) CUDA step kernel of ``integrator`` for ``model``.

    ``phase``: "steps" (the in-kernel schedule's kernel) or "begin"/"iterate"/"end" (the
    per-launch schedule's phase kernels, for steppers registered with ``per_launch``).

    Needs numba-cuda with NVVM (``numba-cuda[cu12]``) but no GPU or driver: it checks that the
    twins type-check and compile for the real target on machines without a GPU (CI, this
    project's development box).  Not available under the simulator."""
    import numba

    if simulated():
        raise DeviceError("compile_ptx needs the real CUDA target; unset NUMBA_ENABLE_CUDASIM")
    try:
        from numba import cuda as cuda_mod
        import numba.cuda.dispatcher as cdisp
    except Exception as e:  # noqa: BLE001
        raise DeviceError(f"numba-cuda is not importable ({e}); {INSTALL_HINT}") from None
    missing = toolkit_missing()
    if missing:
        raise DeviceError(f"the CUDA toolkit libraries are missing: {missing}; "
                          'pip install "numba-cuda[cu12]" or install a CUDA toolkit')
    from pbsim.contact.scene import Scene
    from pbsim.control.control import Control
    from pbsim.control.stepwork import make_step_work
    from pbsim.dynamics.workspace import make_work
    from pbsim.integrators.base import make_batched

    scene = scene if scene is not None else Scene()
    I, spec = make_batched(integrator, model, scene, options, "device='cuda'")
    _bind_twins(cuda_mod)
    from pbsim.jit import cuda_twin

    if phase == "steps":
        stepk, pyfn = spec.step, _steps_k
    else:
        if spec.per_launch is None or phase not in ("begin", "iterate", "end"):
            raise InputError(f"phase must be 'steps' or (with a per-launch schedule) 'begin'/'iterate'/'end', "
                             f"got {phase!r} for {integrator!r}")
        stepk, pyfn = dict(zip(("begin", "iterate", "end"), spec.per_launch[:3]))[phase], _phase_k
    g = dict(globals())
    g["_step"] = cuda_twin(stepk)
    fn = types.FunctionType(pyfn.__code__, g, pyfn.__name__)
    B = int(batch)

    def lay(a, batched=True):  # a host array with the strides the device array would have
        if layout == "soa" and batched and a.ndim > 1:
            return np.moveaxis(np.zeros(a.shape[1:] + a.shape[:1], a.dtype), -1, 0)
        return a

    def nt(t, batched=True):
        return type(t)(*(lay(a, batched) if isinstance(a, np.ndarray) else a for a in t))

    x = spec.make_extra(I, B)
    x = type(x)(*(lay(a, f in spec.batched) if isinstance(a, np.ndarray)
                  else nt(a, f in spec.batched) if _is_namedtuple(a) else a for f, a in zip(x._fields, x)))
    q, v = lay(np.zeros((B, model.nq))), lay(np.zeros((B, model.nv)))
    args = (model.k, scene.kernel_arrays(model), Control(mode="spd").kernel_arrays(model, B),
            nt(make_work(model, B)), nt(make_step_work(model, B)), x, q, v, q, v)
    sig = tuple(numba.typeof(a) for a in args) + (numba.float64,)
    if phase == "steps":
        sig += (numba.int64,)

    class _Dev:  # device functions ask the current device for its compute capability
        compute_capability = tuple(cc)

    saved = cdisp.get_current_device
    cdisp.get_current_device = lambda: _Dev()
    try:
        ptx, _ = cuda_mod.compile_ptx(fn, sig, cc=tuple(cc))
    finally:
        cdisp.get_current_device = saved
    return ptx


def step_noinline(step_kernel) -> frozenset:
    """The device functions kept out of line in ``step_kernel``'s tree: none for the explicit
    methods (:data:`INLINE_ALL_MODULES`), :func:`pbsim.jit.cuda_noinline` for the
    others; ``$PBSIM_CUDA_NOINLINE`` set decides for every method."""
    from pbsim.jit import cuda_noinline, python_source

    if os.environ.get("PBSIM_CUDA_NOINLINE", "default").strip() not in ("", "default"):
        return cuda_noinline()
    if python_source(step_kernel).__module__.startswith(INLINE_ALL_MODULES):
        return frozenset()
    return cuda_noinline()


def _specialize(pyfn, step_kernel, ident=None, noinline=None):
    """``cuda.jit`` of ``pyfn`` with its global ``_step`` bound to the twin of ``step_kernel``
    (``noinline``: the functions of its tree kept out of line; None: :func:`step_noinline`),
    named after it (``_steps_k__euler_step__without_...``), its compiled code kept on disk by a
    :class:`StepKernelCache` for ``ident`` (see :func:`_cache_ident`; None: no disk cache)."""
    from pbsim.jit import cuda_twin, python_source

    if not _HOST_ARRAYS:
        kernels()
    g = dict(globals())
    g["_step"] = cuda_twin(step_kernel, step_noinline(step_kernel) if noinline is None else noinline)
    fn = types.FunctionType(pyfn.__code__, g, pyfn.__name__)
    fn.__qualname__ = f"{pyfn.__name__}__{python_source(step_kernel).__qualname__}"
    disp = _jit(cuda, fn)
    if ident is not None and not simulated():
        disp._cache = StepKernelCache(ident)
    return disp


def threads_per_block() -> int:
    return int(os.environ.get("PBSIM_CUDA_TPB", str(DEFAULT_TPB)))


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
CUDA_COMPILE_ESTIMATE_S = {"euler": 40, "pbad": 45}
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


@contextlib.contextmanager
def _offline(cc):
    """Build for compute capability ``cc`` with no GPU: numba-cuda asks the current device for its
    compute capability (typing, code libraries); here it gets ``cc``, and "device" arrays are host
    arrays with the device strides (their numba types are the device arrays')."""
    global _HOST_ARRAYS, cuda
    import numba.cuda.codegen as cg
    import numba.cuda.dispatcher as cdisp
    from numba import cuda as cuda_mod

    class _Dev:
        compute_capability = tuple(int(c) for c in cc[:2])
        id = 0

    lc = _lib_cc(cc)
    saved = cdisp.get_current_device, cg.CUDACodeLibrary._ensure_cc, _HOST_ARRAYS
    cdisp.get_current_device = lambda: _Dev()
    cg.CUDACodeLibrary._ensure_cc = lambda self, c: lc if c is None else c
    _HOST_ARRAYS = True
    _bind_twins(cuda_mod)
    try:
        yield
    finally:
        cdisp.get_current_device, cg.CUDACodeLibrary._ensure_cc, _HOST_ARRAYS = saved


def build_offline(model, integrator: str = "euler", layout: str = "aos", cc=(9, 0), scene=None, control=None,
                  batch: int = 4, phase: str = "steps", features=None, **options) -> dict:
    """Build (or load from the disk cache) the step kernel ``CudaBatch`` would launch, for compute
    capability ``cc``, without a GPU: typing and lowering, NVVM to PTX, then nvJitLink (ptxas) to
    a cubin, stored like a GPU build's (``pbsim warmup --device cuda --cc 9.0``, the tests, the
    compile benchmark).  Needs numba-cuda's toolkit wheels (``numba-cuda[cu12]``).
    ``features``: None, the run's :class:`~pbsim.jit.Variants` features (from the
    control and scene as ``CudaBatch`` picks them), or "all" (every feature compiled).
    Returns ``{"hit", "seconds", "path", "key", "ptx_chars", "cubin_bytes", "cubin_sha", "kernel"}``."""
    import numba

    if simulated():
        raise DeviceError("build_offline needs the real CUDA target; unset NUMBA_ENABLE_CUDASIM")
    missing = toolkit_missing()
    if missing:
        raise DeviceError(f"the CUDA toolkit libraries are missing: {missing}; "
                          'pip install "numba-cuda[cu12]" or install a CUDA toolkit')
    from numba.cuda.dispatcher import _Kernel

    t0 = time.perf_counter()
    with _offline(cc):
        plan = _Plan(model, integrator, scene, batch, resolve_layout(layout, batch, integrator), options)
        plan.set_control(control, features)
        args = plan.args(phase)
        disp = plan.kernel(phase)
        argtypes = tuple(numba.typeof(a) for a in args)
        cache = disp._cache
        kern = cache.load_overload(argtypes, cc=cc)
        hit = kern is not None
        if not hit:
            kern = _Kernel(disp.py_func, argtypes, **disp.targetoptions)
            kern.library.get_cubin(_lib_cc(cc))
            cache.save_overload(argtypes, kern, cc=cc)
        lib = kern.library
        lc = _lib_cc(cc)
        cubin = lib._cubin_cache[lc]
        cubin = bytes(getattr(cubin, "code", cubin))
        key = cache_key(cache.ident, argtypes, cc)
        return {"hit": hit, "seconds": time.perf_counter() - t0, "path": cache.path(key), "key": key,
                "ptx_chars": sum(len(p) for p in lib._ptx_cache.get(lc, [])), "cubin_bytes": len(cubin),
                "cubin_sha": hashlib.sha256(cubin).hexdigest()[:16], "kernel": kern,
                "linker_log": lib._linkerinfo_cache.get(lc, "")}


def launch(kern, B: int, *args, tpb: int | None = None):
    """Launch ``kern`` with one thread per trajectory."""
    tpb = tpb or threads_per_block()
    if simulated():
        tpb = min(tpb, max(B, 1))  # the simulator runs every thread; no need for idle ones
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        # our simulated device arrays are numpy arrays (maybe strided): pass them without the
        # simulator's copy-in/copy-out (which also refuses non-contiguous buffers)
        args = tuple(FakeCUDAArray(a) if isinstance(a, np.ndarray) else a for a in args)
    kern[(B + tpb - 1) // tpb, tpb](*args)


# ---------------------------------------------------------------------------- dynamics (tests, tools)
def _work(model, B, layout):
    from pbsim.dynamics.workspace import make_work

    return zeros_like_tuple(make_work(model, B), layout)


def _batch(x, n, name, B=None):
    from pbsim.dynamics.api import as_batch

    return as_batch(x, n, name, B)[0]


def fk(model, q, layout="aos"):
    """World poses (Rw (B, nb, 3, 3), pw (B, nb, 3)) computed on the device."""
    K = kernels()
    Q = _batch(q, model.nq, "q")
    B = Q.shape[0]
    w = _work(model, B, layout)
    launch(K.fk, B, tuple_to_device(model.k), w, dev_put(Q, layout))
    return dev_get(w.Rw), dev_get(w.pw)


def rnea(model, q, v, qdd, layout="aos"):
    K = kernels()
    Q = _batch(q, model.nq, "q")
    B = Q.shape[0]
    V, A = _batch(v, model.nv, "v", B), _batch(qdd, model.nv, "qdd", B)
    tau = dev_empty((B, model.nv), layout)
    launch(K.rnea, B, tuple_to_device(model.k), _work(model, B, layout), dev_put(Q, layout), dev_put(V, layout),
           dev_put(A, layout), tau)
    return dev_get(tau)


def crba(model, q, layout="aos"):
    K = kernels()
    Q = _batch(q, model.nq, "q")
    B = Q.shape[0]
    M = dev_empty((B, model.nv, model.nv), layout)
    launch(K.crba, B, tuple_to_device(model.k), _work(model, B, layout), dev_put(Q, layout), M)
    return dev_get(M)


def aba(model, q, v, tau, layout="aos"):
    K = kernels()
    Q = _batch(q, model.nq, "q")
    B = Q.shape[0]
    V, T = _batch(v, model.nv, "v", B), _batch(tau, model.nv, "tau", B)
    qdd = dev_empty((B, model.nv), layout)
    launch(K.aba, B, tuple_to_device(model.k), _work(model, B, layout), dev_put(Q, layout), dev_put(V, layout),
           dev_put(T, layout), dev_put(np.zeros(model.nv)), qdd)
    return dev_get(qdd)


# ---------------------------------------------------------------------------- batched simulation
# Methods with a step kernel that device='cuda' refuses, and why (every other one runs:
# tests/backends/test_cuda_methods.py steps each under the CUDA simulator).
CUDA_REFUSED: dict[str, str] = {}


def _features_used(spec, integ, kc, ks):
    """The sorted names of the :class:`~pbsim.jit.Variants` features a run uses (as
    the CPU batch driver picks them), or None for a method without optional features."""
    if not spec.features:
        return None
    used = spec.used(integ, kc, ks) if spec.used is not None else {}
    return tuple(sorted(k for k in spec.features if used.get(k, True)))


def _variant_step(spec, step, features):
    """``step`` with the kernels of the features not in ``features`` swapped for no-ops: the
    very copy the CPU's batch driver compiles for that feature set (same names)."""
    if features is None or not spec.features:
        return step
    from pbsim.integrators.driver import driver, steps_batch

    used = {k: k in features for k in spec.features}
    return driver(steps_batch, step, spec.features, used).py_func.__globals__["_step"]


class _Compiled:
    """The CUDA kernels of one :class:`~pbsim.integrators.base.StepSpec`: the generic drivers
    ``_steps_k`` / ``_phase_k`` bound to its step (and per-launch phase) kernels, one per layout
    and feature set, built once per process and kept on disk (:class:`StepKernelCache`)."""

    _cache: dict = {}

    @classmethod
    def get(cls, spec, which, layout="aos", features=None):
        key = (id(spec.step), which, layout, features)
        if key not in cls._cache:
            if which == "steps":
                k, pyfn = spec.step, _steps_k
            else:
                begin, iterate, end, _ = spec.per_launch
                k, pyfn = {"begin": begin, "iterate": iterate, "end": end}[which], _phase_k
            k = _variant_step(spec, k, features)
            cls._cache[key] = _specialize(pyfn, k, _cache_ident(pyfn, k, which, features, layout))
        return cls._cache[key]


def supported_integrators() -> list[str]:
    """Integrators with a step kernel (and so a device path)."""
    from pbsim.integrators import available, step_spec

    return [n for n in available() if step_spec(n) is not None and n not in CUDA_REFUSED]


def _is_namedtuple(a) -> bool:
    return isinstance(a, tuple) and hasattr(a, "_fields")


def _extra_to_device(x, batched, layout):
    vals = []
    for f, a in zip(x._fields, x):
        if isinstance(a, np.ndarray):
            vals.append(dev_put(a, layout if f in batched else "aos"))
        elif _is_namedtuple(a):
            vals.append(tuple_to_device(a, layout, batched=f in batched))
        else:
            vals.append(a)
    return type(x)(*vals)


# ---------------------------------------------------------------------------- device memory
class DeviceMemoryError(DeviceError):
    """Even the smallest chunk of a batch does not fit in the GPU's free memory."""


MEMORY_NOTICE_BYTES = 256 * 2**20  # CudaBatch says how much it allocates from this size on
MEMORY_RESERVE = 0.1  # part of the free memory left to the driver, the kernels' stacks and others


def _nbytes(obj) -> int:
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes) if obj.ndim else 0
    if _is_namedtuple(obj):
        return sum(_nbytes(a) for a in obj)
    return 0


def memory_estimate(model, integrator: str = "euler", scene=None, control=None, batch: int | None = None,
                    **options) -> tuple[int, int]:
    """``(bytes per trajectory, shared bytes)`` a :class:`CudaBatch` allocates on the device: the
    batched workspaces, method scratch, state buffers and frames per trajectory (the difference
    between a batch of 2 and a batch of 1); the model, scene and control arrays (``control`` for
    ``batch`` trajectories, when given) once."""
    from pbsim.contact.scene import Scene
    from pbsim.control.control import Control
    from pbsim.control.stepwork import make_step_work
    from pbsim.dynamics.workspace import make_work
    from pbsim.integrators.base import make_batched

    scene = scene if scene is not None else Scene()
    integ, spec = make_batched(integrator, model, scene, options, "device='cuda'")
    spec = _instance_spec(integ, spec)

    def total(B):
        state = 2 * B * (model.nq + model.nv) + B * (model.nq + model.nv + 2)  # q, v, qn, vn; frames
        return (8 * state + _nbytes(make_work(model, B)) + _nbytes(make_step_work(model, B))
                + _nbytes(spec.make_extra(integ, B)) + _nbytes(model.k) + _nbytes(scene.kernel_arrays(model)))

    one, two = total(1), total(2)
    kc = (control if control is not None else Control()).kernel_arrays(model, 1 if batch is None else int(batch))
    return two - one, max(one - (two - one), 0) + _nbytes(kc)


def plan_chunks(batch: int, per_trajectory: int, shared: int, free: int, reserve: float = MEMORY_RESERVE,
                align: int = DEFAULT_TPB) -> list[tuple[int, int]]:
    """Split ``batch`` trajectories into ``[(start, stop), ...]`` chunks that each fit in
    ``free`` bytes of device memory (less ``reserve`` of it, less ``shared``), chunks a multiple
    of ``align`` (whole blocks) when they can be.  One chunk when everything fits;
    :class:`DeviceMemoryError` when not even one trajectory does."""
    batch, per_trajectory = int(batch), max(int(per_trajectory), 1)
    usable = int(free * (1.0 - reserve)) - int(shared)
    n = usable // per_trajectory if usable > 0 else 0
    if n < 1:
        raise DeviceMemoryError(
            f"one trajectory needs {per_trajectory:,} bytes on the GPU (+ {shared:,} shared) but only "
            f"{free:,} bytes are free ({reserve:.0%} kept in reserve); free GPU memory, use a smaller "
            "model, or run on device='cpu'")
    if n >= batch:
        return [(0, batch)]
    if n >= align:
        n -= n % align
    return [(i, min(i + n, batch)) for i in range(0, batch, n)]


def free_memory() -> int:
    """Free bytes on the current GPU (``$PBSIM_CUDA_FREE_BYTES`` overrides it: tests, simulator)."""
    env = os.environ.get("PBSIM_CUDA_FREE_BYTES")
    if env:
        return int(float(env))
    if simulated():
        return 1 << 62
    cuda_mod = require_cuda()
    return int(cuda_mod.current_context().get_memory_info()[0])


def _gib(n) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**28 else f"{n / 2**20:.1f} MiB"


def _instance_spec(integ, spec):
    """The integrator instance's own StepSpec when it picks its kernel by option (pbfd's LBFGS)."""
    from pbsim.integrators.base import StepSpec

    st = getattr(integ, "STEP", None)
    return st if isinstance(st, StepSpec) else spec


class _Plan:
    """The device buffers of a batch and the kernels that run it (what :class:`CudaBatch`
    launches; :func:`build_offline` builds the same kernels for the same argument types)."""

    def __init__(self, model, integrator, scene, batch, layout, options):
        from pbsim.contact.scene import Scene
        from pbsim.control.stepwork import make_step_work
        from pbsim.dynamics.workspace import make_work
        from pbsim.integrators.base import make_batched

        if integrator in CUDA_REFUSED:
            raise InputError(f"integrator {integrator!r} does not run on device='cuda': {CUDA_REFUSED[integrator]}")
        scene = scene if scene is not None else Scene()
        I, spec = make_batched(integrator, model, scene, options, "device='cuda'")
        self.I, self.spec = I, _instance_spec(I, spec)
        self.model, self.integrator, self.layout = model, integrator, layout
        self.B = B = int(batch)
        if B < 1:
            raise InputError(f"batch must be >= 1, got {batch}")
        self.ks = scene.kernel_arrays(model)
        self.m = tuple_to_device(model.k)
        self.s = tuple_to_device(self.ks)
        self.w = zeros_like_tuple(make_work(model, B), layout)
        sw = make_step_work(model, B)
        if layout == "soa" and sw.Md.shape[1:] == (1, 1):
            # no dense SPD scratch (it would exceed 64 MiB): a (B, 1, 1) array in SoA is contiguous,
            # so numba would type it 'C' where the dense (B, nv, nv) one is 'A', and the kernel's
            # signature (and cache entry) would change with the batch size.  (B, 2, 2) keeps the
            # type; the kernels still see no dense scratch for nv > 2 (Md.shape[1] < nv).
            sw = sw._replace(Md=np.zeros((B, 2, 2)))
        self.sw = zeros_like_tuple(sw, layout)
        self.x = _extra_to_device(self.spec.make_extra(I, B), self.spec.batched, layout)
        self.q = dev_empty((B, model.nq), layout)
        self.v = dev_empty((B, model.nv), layout)
        self.qn = dev_empty((B, model.nq), layout)
        self.vn = dev_empty((B, model.nv), layout)
        self.c = None
        self.features = None

    def set_control(self, control, features=None):
        """Upload a :class:`pbsim.Control` (constant over the following :meth:`advance` calls);
        it also picks the kernel build (the features it uses, like the CPU batch driver)."""
        from pbsim.control.control import Control

        if control is None:
            control = Control()
        if not isinstance(control, Control):
            raise InputError("device='cuda' takes a pbsim.Control (constant per launch); a callable control "
                             f"would need the state on the host every step (got {type(control).__name__})")
        kc = control.kernel_arrays(self.model, self.B)
        self.c = tuple_to_device(kc)
        if features == "all":
            self.features = None
        elif features is not None:
            self.features = tuple(sorted(features))
        else:
            self.features = _features_used(self.spec, self.I, kc, self.ks)

    def args(self, phase="steps", dt=0.01, nsteps=1):
        a = (self.m, self.s, self.c, self.w, self.sw, self.x, self.q, self.v, self.qn, self.vn, float(dt))
        return a + (int(nsteps),) if phase == "steps" else a

    def kernel(self, phase="steps"):
        return _Compiled.get(self.spec, phase, self.layout, self.features)


class CudaBatch(_Plan):
    """A batch of ``B`` trajectories living on the GPU.

    The state, the workspaces, the model/scene/control arrays are uploaded once; :meth:`advance`
    runs ``n`` steps in one launch (the state never leaves the device); :meth:`state` /
    :meth:`record` copy back only what is asked for.  ``schedule``: "kernel" (whole steps, the
    solver loop inside the kernel) or "launch" (one solver iteration per launch, for steppers
    registered with ``per_launch``).  ``layout``: "aos", "soa" or "auto" (SoA from
    ``AUTO_SOA_MIN_BATCH`` trajectories on); ``threads``: threads per block (default
    ``DEFAULT_TPB``, or ``$PBSIM_CUDA_TPB``).

    From ``MEMORY_NOTICE_BYTES`` of device memory on, the allocation is said on stderr (bytes per
    trajectory x B); a batch that does not fit in the GPU's free memory is a
    :class:`DeviceMemoryError` naming the largest batch that fits (``pbsim.rollout(...,
    device="cuda")`` runs such a batch in chunks).
    """

    def __init__(self, model, integrator: str = "euler", scene=None, batch: int = 1, layout: str = "auto",
                 threads: int | None = None, schedule: str = "kernel", poll: int = 4, **options):
        B = int(batch)
        if B < 1:
            raise InputError(f"batch must be >= 1, got {batch}")
        layout = resolve_layout(layout, B, integrator)
        if schedule not in ("kernel", "launch"):
            raise InputError(f"schedule must be 'kernel' or 'launch', got {schedule!r}")
        self.K = kernels()
        if not simulated():
            per, shared = memory_estimate(model, integrator, scene, None, **options)
            free = free_memory()
            chunks = plan_chunks(B, per, shared, free)
            if len(chunks) > 1:
                n = chunks[0][1]
                raise DeviceMemoryError(
                    f"a batch of {B:,} {integrator} trajectories needs {per:,} bytes x {B:,} = {_gib(per * B)} on the "
                    f"GPU, {_gib(free)} free: at most {n:,} fit in one CudaBatch (pbsim.rollout(..., device='cuda') "
                    "runs a larger batch in chunks)")
            if per * B + shared >= MEMORY_NOTICE_BYTES:
                print(f"pbsim: {integrator} on the GPU: {per:,} bytes per trajectory x {B:,} = {_gib(per * B)} "
                      f"(+ {_gib(shared)} shared), {_gib(free)} free", file=sys.stderr, flush=True)
        super().__init__(model, integrator, scene, B, layout, options)
        if schedule == "launch" and self.spec.per_launch is None:
            raise InputError(f"integrator {integrator!r} has no per-launch (one iteration per launch) schedule")
        if schedule == "launch" and self.spec.fallback is not None and int(getattr(self.x, self.spec.fallback)) > 0:
            raise InputError(f"integrator {integrator!r}: the per-launch schedule has no sub-step fallback for a step "
                             "whose solver stalls (the kernel schedule has it, as the CPU paths); give substep=0 "
                             "or schedule='kernel'")
        self.schedule = schedule
        self.tpb = threads
        self.poll = max(1, int(poll))
        self.iterations = 0  # per-launch schedule: solver-iteration launches so far
        self._qo = dev_empty((B, model.nq))
        self._vo = dev_empty((B, model.nv))
        self._e = dev_empty((B, 2))
        self.t = 0.0
        self.set_control(None)

    def set_state(self, q, v=None):
        from pbsim.integrators.base import State

        st = State.make(self.model, q, v, self.B)
        dev_put(st.q, self.layout, out=self.q)
        dev_put(st.v, self.layout, out=self.v)
        self.q0, self.v0 = st.q.copy(), st.v.copy()  # the run's start (host), for diverged()
        if self.spec.fallback is not None:
            dev_put(np.zeros(self.B), self.layout, out=self.x.fbn)

    def advance(self, nsteps: int, dt: float):
        """``nsteps`` steps of size ``dt`` (asynchronous on a real GPU)."""
        nsteps = int(nsteps)
        dt = check_dt(dt)
        if nsteps <= 0:
            return
        args = (self.m, self.s, self.c, self.w, self.sw, self.x, self.q, self.v, self.qn, self.vn, dt)
        if self.schedule == "kernel":
            launch(self.kernel("steps"), self.B, *args, nsteps, tpb=self.tpb)
        else:
            n_iter = self.spec.per_launch[3]
            if n_iter is None:
                n_iter = int(self.x.maxit)
            done = getattr(self.x, self.spec.done) if self.spec.done else None
            begin, iterate, end = (self.kernel(k) for k in ("begin", "iterate", "end"))
            for _ in range(nsteps):
                launch(begin, self.B, *args, tpb=self.tpb)
                # one solver iteration per launch across all trajectories (paper 000 Fig. 1);
                # one extra launch lets iterate flag the trajectories that hit the limit
                for i in range(n_iter + (1 if done is not None else 0)):
                    launch(iterate, self.B, *args, tpb=self.tpb)
                    self.iterations += 1
                    if done is not None and (i + 1) % self.poll == 0 and dev_get(done).all():
                        break
                launch(end, self.B, *args, tpb=self.tpb)
                launch(self.K.commit, self.B, self.m, self.q, self.v, self.qn, self.vn, tpb=self.tpb)
        self.t += nsteps * dt

    def synchronize(self):
        if not simulated():
            cuda.synchronize()

    def record(self):
        """``(q (B, nq), v (B, nv), energy (B,))`` copied to the host."""
        launch(self.K.record, self.B, self.m, self.w, self.q, self.v, self._qo, self._vo, self._e, tpb=self.tpb)
        return dev_get(self._qo), dev_get(self._vo), dev_get(self._e).sum(axis=1)

    def solver_info(self):
        """``(B, 4)`` [iterations, residual, converged, objective] of the last step, for methods
        with an iterative solver (``StepSpec.info``), ``(B, 5)`` with the sub-steps the last step
        became for a method whose kernel sub-steps a stalled step (``StepSpec.fallback``); None otherwise."""
        return None if self.spec.info is None else dev_get(getattr(self.x, self.spec.info))

    def fallback_steps(self):
        """``(B,)`` steps since :meth:`set_state` that the kernel redid as sub-steps (as
        :meth:`pbsim.backends.cpu.CpuBatch.fallback_steps`); None for a method without the fallback."""
        return None if self.spec.fallback is None else dev_get(self.x.fbn).astype(np.int64)

    def state(self):
        """``(q, v)`` copied to the host (no energy evaluation)."""
        return dev_get(self.q), dev_get(self.v)

    def diverged(self):
        """``(diverged (B,), reasons)``: the shared divergence rule
        (:func:`pbsim.integrators.divergence.check_run`, on the host) on the current state against
        the state given to :meth:`set_state`."""
        from pbsim.integrators.divergence import check_run

        q, v = self.state()
        return check_run(self.model, self.q0, self.v0, q, v)
