"""The CUDA kernels: one thread per trajectory over the twins of the CPU kernels (dynamics, the
step drivers), their compilation, and the PTX of a step kernel without a GPU."""
from __future__ import annotations

import os
import types
from collections import namedtuple

import numpy as np

from pbsim.backends import cuda_device as _dev
from pbsim.backends.cuda_cache import JIT_OPTIONS, StepKernelCache, step_noinline
from pbsim.backends.cuda_device import INSTALL_HINT, DeviceError, _is_namedtuple, require_cuda, simulated
from pbsim.errors import InputError


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



def _specialize(pyfn, step_kernel, ident=None, noinline=None):
    """``cuda.jit`` of ``pyfn`` with its global ``_step`` bound to the twin of ``step_kernel``
    (``noinline``: the functions of its tree kept out of line; None: :func:`step_noinline`),
    named after it (``_steps_k__euler_step__without_...``), its compiled code kept on disk by a
    :class:`StepKernelCache` for ``ident`` (see :func:`_cache_ident`; None: no disk cache)."""
    from pbsim.jit import cuda_twin, python_source

    if not _dev._HOST_ARRAYS:
        kernels()
    g = dict(globals())
    g["_step"] = cuda_twin(step_kernel, step_noinline(step_kernel) if noinline is None else noinline)
    fn = types.FunctionType(pyfn.__code__, g, pyfn.__name__)
    fn.__qualname__ = f"{pyfn.__name__}__{python_source(step_kernel).__qualname__}"
    disp = _jit(cuda, fn)
    if ident is not None and not simulated():
        disp._cache = StepKernelCache(ident)
    return disp
