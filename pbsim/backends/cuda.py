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
(coalesced).  The kernels do not change: numba compiles strided ('A' layout) indexing.  Which
pays is for a GPU session to measure (``scripts/bench_gpu.py --layout``).
"""
from __future__ import annotations

import os
import types
from collections import namedtuple

import numpy as np

from pbsim.errors import InputError, PbsimError, check_dt


class DeviceError(PbsimError, RuntimeError):
    """The requested compute device is not usable (no GPU, no driver, no numba-cuda)."""


INSTALL_HINT = 'install the GPU extra: pip install "numba-cuda>=0.30" (numpy<2.5)'
LAYOUTS = ("aos", "soa")


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


def dev_empty(shape, layout: str = "aos", dtype=np.float64):
    """A device array of logical shape ``shape`` (batch axis first) in ``layout``.

    Under the simulator a device array is a plain numpy array with the same strides."""
    cuda = require_cuda()
    shape = tuple(int(s) for s in shape)
    if layout not in LAYOUTS:
        raise InputError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    soa = layout == "soa" and len(shape) > 1
    phys = shape[1:] + shape[:1] if soa else shape  # batch axis last = fastest in memory
    if simulated():
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
    if simulated():
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
    from pbsim.backends.kernel import cuda_twin
    from pbsim.dynamics.aba import aba_state
    from pbsim.dynamics.crba import crba_state
    from pbsim.dynamics.energy import energy_state
    from pbsim.dynamics.kinematics import fk_state
    from pbsim.dynamics.rnea import rnea_state

    cuda = cuda_mod
    _fk, _rnea, _crba, _aba = cuda_twin(fk_state), cuda_twin(rnea_state), cuda_twin(crba_state), cuda_twin(aba_state)
    _energy, _copy_rows = cuda_twin(energy_state), cuda_twin(copy_rows)


def kernels() -> Kernels:
    """Compile (lazily, once) the CUDA kernels from the twins of the CPU kernels."""
    global _K
    if _K is not None:
        return _K
    cuda_mod = require_cuda()
    _bind_twins(cuda_mod)
    jit = cuda_mod.jit
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
    from pbsim.backends.kernel import cuda_twin

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


def _specialize(pyfn, step_kernel):
    """``cuda.jit`` of ``pyfn`` with its global ``_step`` bound to the twin of ``step_kernel``."""
    from pbsim.backends.kernel import cuda_twin

    kernels()
    g = dict(globals())
    g["_step"] = cuda_twin(step_kernel)
    return cuda.jit(types.FunctionType(pyfn.__code__, g, pyfn.__name__))


def threads_per_block() -> int:
    return int(os.environ.get("PBSIM_CUDA_TPB", "128"))


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
class _Compiled:
    """The CUDA kernels of one :class:`~pbsim.integrators.base.StepSpec`: the generic drivers
    ``_steps_k`` / ``_phase_k`` bound to its step (and per-launch phase) kernels, built once."""

    _cache: dict = {}

    @classmethod
    def get(cls, spec, which):
        key = (id(spec.step), which)
        if key not in cls._cache:
            if which == "steps":
                cls._cache[key] = _specialize(_steps_k, spec.step)
            else:
                begin, iterate, end, _ = spec.per_launch
                k = {"begin": begin, "iterate": iterate, "end": end}[which]
                cls._cache[key] = _specialize(_phase_k, k)
        return cls._cache[key]


def supported_integrators() -> list[str]:
    """Integrators with a step kernel (and so a device path)."""
    from pbsim.integrators import available, step_spec

    return [n for n in available() if step_spec(n) is not None]


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


class CudaBatch:
    """A batch of ``B`` trajectories living on the GPU.

    The state, the workspaces, the model/scene/control arrays are uploaded once; :meth:`advance`
    runs ``n`` steps in one launch (the state never leaves the device); :meth:`state` /
    :meth:`record` copy back only what is asked for.  ``schedule``: "kernel" (whole steps, the
    solver loop inside the kernel) or "launch" (one solver iteration per launch, for steppers
    registered with ``per_launch``).
    """

    def __init__(self, model, integrator: str = "euler", scene=None, batch: int = 1, layout: str = "aos",
                 threads: int | None = None, schedule: str = "kernel", poll: int = 4, **options):
        from pbsim.integrators.base import make_batched
        from pbsim.contact.scene import Scene
        from pbsim.control.stepwork import make_step_work
        from pbsim.dynamics.workspace import make_work

        if layout not in LAYOUTS:
            raise InputError(f"layout must be one of {LAYOUTS}, got {layout!r}")
        scene = scene if scene is not None else Scene()
        I, self.spec = make_batched(integrator, model, scene, options, "device='cuda'")
        if schedule not in ("kernel", "launch"):
            raise InputError(f"schedule must be 'kernel' or 'launch', got {schedule!r}")
        if schedule == "launch" and self.spec.per_launch is None:
            raise InputError(f"integrator {integrator!r} has no per-launch (one iteration per launch) schedule")
        self.K = kernels()
        self.model, self.integrator, self.layout, self.schedule = model, integrator, layout, schedule
        self.B = B = int(batch)
        if B < 1:
            raise InputError(f"batch must be >= 1, got {batch}")
        self.tpb = threads
        self.m = tuple_to_device(model.k)
        self.s = tuple_to_device(scene.kernel_arrays(model))
        self.w = zeros_like_tuple(make_work(model, B), layout)
        self.sw = zeros_like_tuple(make_step_work(model, B), layout)
        self.poll = max(1, int(poll))
        self.x = _extra_to_device(self.spec.make_extra(I, B), self.spec.batched, layout)
        self.iterations = 0  # per-launch schedule: solver-iteration launches so far
        self.q = dev_empty((B, model.nq), layout)
        self.v = dev_empty((B, model.nv), layout)
        self.qn = dev_empty((B, model.nq), layout)
        self.vn = dev_empty((B, model.nv), layout)
        self._qo = dev_empty((B, model.nq))
        self._vo = dev_empty((B, model.nv))
        self._e = dev_empty((B, 2))
        self.c = None
        self.t = 0.0
        self.set_control(None)

    def set_state(self, q, v=None):
        from pbsim.integrators.base import State

        st = State.make(self.model, q, v, self.B)
        dev_put(st.q, self.layout, out=self.q)
        dev_put(st.v, self.layout, out=self.v)
        self.q0, self.v0 = st.q.copy(), st.v.copy()  # the run's start (host), for diverged()

    def set_control(self, control):
        """Upload a :class:`pbsim.Control` (constant over the following :meth:`advance` calls)."""
        from pbsim.control.control import Control

        if control is None:
            control = Control()
        if not isinstance(control, Control):
            raise InputError("device='cuda' takes a pbsim.Control (constant per launch); a callable control "
                             f"would need the state on the host every step (got {type(control).__name__})")
        self.c = tuple_to_device(control.kernel_arrays(self.model, self.B))

    def advance(self, nsteps: int, dt: float):
        """``nsteps`` steps of size ``dt`` (asynchronous on a real GPU)."""
        nsteps = int(nsteps)
        dt = check_dt(dt)
        if nsteps <= 0:
            return
        args = (self.m, self.s, self.c, self.w, self.sw, self.x, self.q, self.v, self.qn, self.vn, dt)
        if self.schedule == "kernel":
            launch(_Compiled.get(self.spec, "steps"), self.B, *args, nsteps, tpb=self.tpb)
        else:
            n_iter = self.spec.per_launch[3]
            if n_iter is None:
                n_iter = int(self.x.maxit)
            done = getattr(self.x, self.spec.done) if self.spec.done else None
            begin, iterate, end = (_Compiled.get(self.spec, k) for k in ("begin", "iterate", "end"))
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
        with an iterative solver (``StepSpec.info``); None otherwise."""
        return None if self.spec.info is None else dev_get(getattr(self.x, self.spec.info))

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
