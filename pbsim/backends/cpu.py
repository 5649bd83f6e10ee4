"""Batched stepping on all CPU cores, shaped like the CUDA path: ``nsteps`` steps of every
trajectory inside one call (no per-step Python, no energy), for any integrator with a step
kernel (:class:`pbsim.integrators.base.StepSpec`) through the generic driver
:func:`pbsim.integrators.driver.steps_batch`.  Nothing here names an integrator."""
from __future__ import annotations

import numpy as np

from pbsim.backends.kernel import kernel
from pbsim.contact.scene import Scene
from pbsim.control.control import Control
from pbsim.control.stepwork import make_step_work
from pbsim.dynamics.workspace import make_work
from pbsim.errors import InputError, check_dt
from pbsim.integrators.base import State, make_batched
from pbsim.integrators.divergence import check_run
from pbsim.integrators.driver import driver, steps_batch


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

    def set_control(self, control):
        self.c = (control if control is not None else Control()).kernel_arrays(self.model, self.B)
        spec = self.spec
        used = spec.used(self.I, self.c, self.s) if spec.used is not None else None
        self.drv = driver(steps_batch, spec.step, spec.features, used)

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
        """``(B, 4)`` [iterations, residual, converged, objective] of the last step (implicit methods)."""
        return None if self.spec.info is None else getattr(self.x, self.spec.info).copy()

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
