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
from collections import namedtuple

import numpy as np

from pbsim.errors import InputError, PbsimError


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
    """Device zeros with the shapes of a batched workspace namedtuple (nothing copied)."""
    out = []
    for x in nt:
        d = dev_empty(x.shape, layout, x.dtype)
        if simulated():
            d[...] = 0
        out.append(d)
    return type(nt)(*out)


# ---------------------------------------------------------------------------- kernels
# Module globals the CUDA kernels below call; _build() sets them to the cuda_twin(...) of the
# CPU kernels (numba resolves globals when a kernel is first compiled).
cuda = None
_fk = _rnea = _crba = _aba = _energy = _euler = _rk = _copy_rows = None
_K = None  # namespace of compiled kernels

Kernels = namedtuple("Kernels", "fk rnea crba aba energy euler rk record")


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


def _copy_rows_src(m, b, qn, vn, q, v):
    for j in range(m.nq):
        q[b, j] = qn[b, j]
    for j in range(m.nv):
        v[b, j] = vn[b, j]


def _euler_k(m, s, c, w, sw, q, v, qn, vn, dt, nsteps):
    """``nsteps`` semi-implicit Euler steps in one launch; the state stays in (q, v)."""
    b = cuda.grid(1)
    if b < q.shape[0]:
        for k in range(nsteps):
            _euler(m, s, c, w, sw, b, q, v, dt, qn, vn)
            _copy_rows(m, b, qn, vn, q, v)


def _rk_k(m, s, c, w, sw, q, v, qn, vn, dt, A, wts, nsteps):
    """``nsteps`` explicit Runge-Kutta(-Munthe-Kaas) steps with tableau (A, wts) in one launch."""
    b = cuda.grid(1)
    if b < q.shape[0]:
        for k in range(nsteps):
            _rk(m, s, c, w, sw, b, q, v, dt, A, wts, qn, vn)
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


def kernels() -> Kernels:
    """Compile (lazily, once) the CUDA kernels from the twins of the CPU kernels."""
    global cuda, _fk, _rnea, _crba, _aba, _energy, _euler, _rk, _copy_rows, _K
    if _K is not None:
        return _K
    cuda_mod = require_cuda()
    from pbsim.backends.kernel import cuda_twin
    from pbsim.dynamics.aba import aba_state
    from pbsim.dynamics.crba import crba_state
    from pbsim.dynamics.energy import energy_state
    from pbsim.dynamics.kinematics import fk_state
    from pbsim.dynamics.rnea import rnea_state
    from pbsim.integrators.explicit import euler_state, rk_state

    cuda = cuda_mod
    _fk, _rnea, _crba, _aba = cuda_twin(fk_state), cuda_twin(rnea_state), cuda_twin(crba_state), cuda_twin(aba_state)
    _energy, _euler, _rk = cuda_twin(energy_state), cuda_twin(euler_state), cuda_twin(rk_state)
    _copy_rows = cuda_mod.jit(device=True)(_copy_rows_src)
    jit = cuda_mod.jit
    _K = Kernels(jit(_fk_k), jit(_rnea_k), jit(_crba_k), jit(_aba_k), jit(_energy_k), jit(_euler_k), jit(_rk_k),
                 jit(_record_k))
    return _K


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
def _steppers():
    from pbsim.integrators.explicit import TABLEAUS

    st = {"euler": ("euler", None)}
    for name in TABLEAUS:
        st[name] = ("rk", name)
    return st


def supported_integrators() -> list[str]:
    """Integrators with a CUDA path (later ones add an entry in :func:`_steppers`)."""
    return list(_steppers())


class CudaBatch:
    """A batch of ``B`` trajectories living on the GPU.

    The state, the workspaces, the model/scene/control arrays are uploaded once; :meth:`advance`
    runs ``n`` steps in one launch (the state never leaves the device); :meth:`state` /
    :meth:`record` copy back only what is asked for.
    """

    def __init__(self, model, integrator: str = "euler", scene=None, batch: int = 1, layout: str = "aos",
                 threads: int | None = None):
        from pbsim.contact.scene import Scene
        from pbsim.dynamics.workspace import make_work
        from pbsim.integrators.explicit import TABLEAUS
        from pbsim.integrators.forces import make_step_work

        st = _steppers()
        if integrator not in st:
            raise InputError(f"integrator {integrator!r} has no CUDA path yet; device='cuda' supports "
                             f"{', '.join(st)} (use device='cpu' for the others)")
        if layout not in LAYOUTS:
            raise InputError(f"layout must be one of {LAYOUTS}, got {layout!r}")
        self.K = kernels()
        self.model, self.integrator, self.layout = model, integrator, layout
        self.kind, tab = st[integrator]
        self.B = B = int(batch)
        if B < 1:
            raise InputError(f"batch must be >= 1, got {batch}")
        self.tpb = threads
        scene = scene if scene is not None else Scene()
        self.m = tuple_to_device(model.k)
        self.s = tuple_to_device(scene.kernel_arrays(model))
        self.w = zeros_like_tuple(make_work(model, B), layout)
        self.sw = zeros_like_tuple(make_step_work(model, B), layout)
        if tab is not None:
            A, wts = TABLEAUS[tab]
            self.A, self.wts = dev_put(np.ascontiguousarray(A, np.float64)), dev_put(np.ascontiguousarray(wts))
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
        """``nsteps`` steps of size ``dt`` in one launch (asynchronous on a real GPU)."""
        nsteps = int(nsteps)
        dt = float(dt)
        if not np.isfinite(dt) or dt <= 0:
            raise InputError(f"time step dt must be a positive finite number, got {dt!r}")
        if nsteps <= 0:
            return
        if self.kind == "euler":
            launch(self.K.euler, self.B, self.m, self.s, self.c, self.w, self.sw, self.q, self.v, self.qn, self.vn,
                   dt, nsteps, tpb=self.tpb)
        else:
            launch(self.K.rk, self.B, self.m, self.s, self.c, self.w, self.sw, self.q, self.v, self.qn, self.vn,
                   dt, self.A, self.wts, nsteps, tpb=self.tpb)
        self.t += nsteps * dt

    def synchronize(self):
        if not simulated():
            cuda.synchronize()

    def record(self):
        """``(q (B, nq), v (B, nv), energy (B,))`` copied to the host."""
        launch(self.K.record, self.B, self.m, self.w, self.q, self.v, self._qo, self._vo, self._e, tpb=self.tpb)
        return dev_get(self._qo), dev_get(self._vo), dev_get(self._e).sum(axis=1)

    def state(self):
        """``(q, v)`` copied to the host (no energy evaluation)."""
        return dev_get(self.q), dev_get(self.v)
