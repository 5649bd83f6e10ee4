"""Batched stepping on all CPU cores, shaped like the CUDA path: ``nsteps`` steps of every
trajectory inside one call (no per-step Python, no energy), for any integrator with a step
kernel (:class:`pbsim.integrators.base.StepSpec`) through the generic driver
:func:`pbsim.integrators.driver.steps_batch`.  Nothing here names an integrator."""
from __future__ import annotations

import numba
import numpy as np
from numba.core import types
from numba.experimental import structref

from pbsim.jit import entry, kernel
from pbsim.contact.scene import Scene
from pbsim.control.control import Control, default_control
from pbsim.control.stepwork import make_step_work
from pbsim.dynamics.workspace import make_work
from pbsim.errors import InputError, check_dt
from pbsim.integrators.base import State, make_batched
from pbsim.integrators.divergence import check_run
from pbsim.integrators.driver import driver, step_batch, steps_batch


class CpuBatch:
    """The CPU twin of :class:`pbsim.backends.cuda.CudaBatch` (same methods), for benchmarks
    and machines without a GPU: all cores through the generic batch driver."""

    def __init__(self, model, integrator: str = "euler", scene=None, batch: int = 1, **options):
        scene = scene if scene is not None else Scene()
        self.I, self.spec = make_batched(integrator, model, scene, options, "CpuBatch")
        self.model, self.integrator, self.B = model, integrator, int(batch)
        if self.B < 1:
            raise InputError(f"batch must be >= 1, got {batch}")
        self.s = scene.kernel_arrays(model)
        self.w, self.sw = make_work(model, self.B), make_step_work(model, self.B)
        self.x = self.spec.make_extra(self.I, self.B)
        self.q, self.v = np.zeros((self.B, model.nq)), np.zeros((self.B, model.nv))
        self.qn, self.vn = np.zeros_like(self.q), np.zeros_like(self.v)
        self.t = 0.0
        self.set_control(None)

    def set_state(self, q, v=None):
        st = State.make(self.model, q, v, self.B)
        self.q[...], self.v[...] = st.q, st.v
        self.q0, self.v0 = self.q.copy(), self.v.copy()  # the run's start, for diverged()
        if self.spec.fallback is not None:
            self.x.fbn[...] = 0.0

    def set_control(self, control):
        self.c = (control if control is not None else default_control(self.model)).kernel_arrays(self.model, self.B)
        spec = self.spec
        self.drv = driver(steps_batch, spec.step, *spec.variant(self.I, self.c, self.s))

    def advance(self, nsteps: int, dt: float):
        dt = check_dt(dt)
        if int(nsteps) <= 0:
            return
        self.drv(self.model.k, self.s, self.c, self.w, self.sw, self.x, self.q, self.v, self.qn, self.vn,
                 float(dt), int(nsteps))
        self.t += int(nsteps) * float(dt)

    def synchronize(self):
        pass

    def solver_info(self):
        """``(B, 4)`` [iterations, residual, converged, objective] of the last step (implicit methods);
        ``(B, 5)`` for a method whose kernel sub-steps a stalled step (``StepSpec.fallback``), the
        5th column the number of sub-steps the last step became (1: none)."""
        return None if self.spec.info is None else getattr(self.x, self.spec.info).copy()

    def fallback_steps(self):
        """``(B,)`` steps since :meth:`set_state` whose solver stalled and that the kernel redid as
        sub-steps (``StepSpec.fallback``); None for a method without the fallback."""
        return None if self.spec.fallback is None else self.x.fbn.astype(np.int64)

    def state(self):
        return self.q.copy(), self.v.copy()

    def diverged(self):
        """``(diverged (B,), reasons)``: the shared divergence rule
        (:func:`pbsim.integrators.divergence.check_run`) on the current state against the state
        given to :meth:`set_state` (non-finite, a joint beyond the speed limit, or an energy gain
        beyond 10x the model's energy scale)."""
        return check_run(self.model, self.q0, self.v0, self.q, self.v)


@kernel
def noop_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """A phase that does nothing (tests the per-launch schedule of :mod:`pbsim.backends.cuda`)."""
    return


# ---------------------------------------------------------------------------------------------
# one step of one trajectory at the cost of a bare kernel call (issue #21)


@structref.register
class StepRefType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((n, types.unliteral(t)) for n, t in fields)


class StepRef(structref.StructRefProxy):
    """The compiled side of :class:`Stepper`: model, scene, control, scratch and buffers as one object."""


structref.define_proxy(StepRef, StepRefType, ["m", "s", "c", "w", "sw", "x", "q", "v", "qn", "vn"])


@numba.njit(cache=True, error_model="numpy")
def _new_step_ref(m, s, c, w, sw, x, q, v, qn, vn):
    return StepRef(m, s, c, w, sw, x, q, v, qn, vn)


_step = noop_step  # rebound per method by kernel.entry(step_one, _step=...)


def step_one(d, dt):
    """One step of trajectory 0 of the buffers in ``d`` (a :class:`StepRef`)."""
    _step(d.m, d.s, d.c, d.w, d.sw, d.x, 0, d.q, d.v, dt, d.qn, d.vn)


class Stepper:
    """One step of one trajectory through a method's step kernel with no per-call Python beyond
    copying the state in: a workspace like :class:`pbsim.Data` for ``Integrator.step``.

        st = pbsim.Stepper(model, "euler", dt=1e-3, scene=None, control=None)
        qn, vn = st.step(q, v)   # views of st.qn[0], st.vn[0], overwritten by the next call

    ``scene``: None takes the model's own world geometry (as ``rollout``); ``control``: a
    :class:`~pbsim.Control` (not a callable; :meth:`set_control` changes it).  The step is the
    kernel :class:`~pbsim.integrators.StepSpec` names, the very one ``Integrator.step`` and
    ``rollout`` run, with the same result; what those add is not done here: the divergence rule,
    the penetration check, energy, and a method's Python fallbacks (pbad's sub-steps of a failed
    solve; pbfd's are inside its kernel, so here too: check :attr:`info` [iterations, residual,
    converged, objective(, sub-steps)] of implicit methods).  Inputs are copied into float64 buffers (a wrong length raises ValueError); NaN,
    inf and quaternion norms are not checked.  Methods without a step kernel (variational,
    pbad3/4) are an InputError."""

    def __init__(self, model, integrator: str = "euler", dt: float = 1e-3, scene=None, control=None, **options):
        from pbsim.contact import default_scene

        self.model, self.integrator = model, integrator
        self.dt = check_dt(dt)
        scene = default_scene(model) if scene is None else scene
        self.I, _ = make_batched(integrator, model, scene, options, "Stepper")
        self.spec = self.I.STEP  # the instance's (a method may pick its kernel by option)
        self.w = make_work(model, 1)
        self.s = self.I.scene.kernel_arrays(model)
        self.q, self.v = np.zeros((1, model.nq)), np.zeros((1, model.nv))
        self.qn, self.vn = np.zeros_like(self.q), np.zeros_like(self.v)
        self._q, self._v, self._qn, self._vn = self.q[0], self.v[0], self.qn[0], self.vn[0]
        self.set_control(control)

    def set_control(self, control):
        from pbsim.control.control import SPD

        if control is not None and not isinstance(control, Control):
            raise InputError(f"Stepper control must be a Control or None, got {type(control).__name__}")
        c = (control if control is not None else default_control(self.model)).kernel_arrays(self.model, 1)
        spec = self.spec
        self.sw = make_step_work(self.model, 1, dense=True if c.mode == SPD and c.solver != 0 else None)
        self.x = spec.make_extra(self.I, 1)
        # exact: the Stepper's own entry compiles it (a compiled build of more features would save nothing)
        step = driver(step_batch, spec.step, *spec.variant(self.I, c, self.s), reuse=False).py_func.__globals__["_step"]
        self._fn = entry(step_one, _step=step)
        self.c = c
        self._ref = _new_step_ref(self.model.k, self.s, c, self.w, self.sw, self.x, self.q, self.v, self.qn, self.vn)

    @property
    def info(self):
        """``(4,)`` [iterations, residual, converged, objective] of the last step (implicit methods), else None."""
        return None if self.spec.info is None else getattr(self.x, self.spec.info)[0]

    def step(self, q, v):
        """``(q_next, v_next)`` after one step of ``dt`` from ``(q, v)``."""
        self._q[:] = q
        self._v[:] = v
        self._fn(self._ref, self.dt)
        return self._qn, self._vn
