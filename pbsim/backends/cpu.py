"""Batched stepping on all CPU cores, shaped like the CUDA path: the batch loop is a ``prange``
over trajectories and ``nsteps`` steps run inside one call (no per-step Python, no energy).

The step adapters below give every integrator the one signature the device drivers call:

    step(m, s, c, w, sw, x, b, q, v, dt, qn, vn)

``x`` is the integrator's own namedtuple (tableau, solver scratch ...; may be empty).  The
CUDA backend compiles the same adapters with :func:`pbsim.backends.kernel.cuda_twin`.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import prange

from pbsim.backends.kernel import kernel
from pbsim.backends.pbad_gpu import make_pbad_extra
from pbsim.integrators.pbad import pbad2_finish, pbad2_lm, pbad2_prepare
from pbsim.integrators.explicit import euler_state, rk_state

NoExtra = namedtuple("NoExtra", "unused")
RKExtra = namedtuple("RKExtra", "A wts")


@kernel
def euler_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """Semi-implicit Euler (paper 000 Eq. 3) with SPD through MABA."""
    euler_state(m, s, c, w, sw, b, q, v, dt, qn, vn)


@kernel
def rk_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """Explicit Runge-Kutta-Munthe-Kaas with the tableau in ``x`` (A, wts)."""
    rk_state(m, s, c, w, sw, b, q, v, dt, x.A, x.wts, qn, vn)


@kernel
def copy_rows(m, b, qn, vn, q, v):
    for j in range(m.nq):
        q[b, j] = qn[b, j]
    for j in range(m.nv):
        v[b, j] = vn[b, j]


@kernel(parallel=True)
def euler_steps_batch(m, s, c, w, sw, x, q, v, qn, vn, dt, nsteps):
    """``nsteps`` semi-implicit Euler steps for every trajectory; the state stays in (q, v)."""
    for i in prange(q.shape[0]):
        b = np.int64(i)
        for _k in range(nsteps):
            euler_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn)
            copy_rows(m, b, qn, vn, q, v)


@kernel(parallel=True)
def rk_steps_batch(m, s, c, w, sw, x, q, v, qn, vn, dt, nsteps):
    for i in prange(q.shape[0]):
        b = np.int64(i)
        for _k in range(nsteps):
            rk_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn)
            copy_rows(m, b, qn, vn, q, v)


@kernel(parallel=True)
def pbad_steps_batch(m, c, w, pm, pw, info, maxit, gtol, xtol, exact_h, q, v, qn, vn, dt, nsteps):
    """``nsteps`` PBAD (order 2, LM) steps for every trajectory: the body of the device stepper
    ``pbad_step`` (numba's prange wrapper refuses the nested namedtuple ``x``, so it is unpacked)."""
    for i in prange(q.shape[0]):
        b = np.int64(i)
        for _k in range(nsteps):
            pbad2_prepare(m, w, pw, b, q, v, dt)
            pbad2_lm(m, pm, c, w, pw, b, q, v, dt, maxit, gtol, xtol, exact_h, info[b])
            pbad2_finish(m, w, pw, b, q, dt, qn, vn)
            copy_rows(m, b, qn, vn, q, v)


def extra_for(integrator: str, model, batch: int):
    """The ``x`` namedtuple of a built-in stepper."""
    from pbsim.integrators.explicit import TABLEAUS

    if integrator == "euler":
        return NoExtra(np.zeros(1))
    A, wts = TABLEAUS[integrator]
    return RKExtra(np.ascontiguousarray(A, np.float64), np.ascontiguousarray(wts, np.float64))


class CpuBatch:
    """The CPU twin of :class:`pbsim.backends.cuda.CudaBatch` (same methods), for benchmarks
    and machines without a GPU: all cores through numba's prange."""

    def __init__(self, model, integrator: str = "euler", scene=None, batch: int = 1, **options):
        from pbsim.contact.scene import Scene
        from pbsim.dynamics.workspace import make_work
        from pbsim.errors import InputError
        from pbsim.integrators.explicit import TABLEAUS
        from pbsim.integrators.base import validate_options
        from pbsim.integrators.forces import make_step_work

        if integrator not in ("euler", "pbad") and integrator not in TABLEAUS:
            raise InputError(f"CpuBatch supports euler, pbad and {', '.join(TABLEAUS)}; got {integrator!r}")
        if integrator != "pbad":  # pbad's are checked by make() inside make_pbad_extra
            validate_options(integrator, options)
        self.model, self.integrator, self.B = model, integrator, int(batch)
        self.drv = {"euler": euler_steps_batch, "pbad": pbad_steps_batch}.get(integrator, rk_steps_batch)
        self.s = (scene if scene is not None else Scene()).kernel_arrays(model)
        self.w, self.sw = make_work(model, self.B), make_step_work(model, self.B)
        if integrator == "pbad":
            self.x = make_pbad_extra(model, self.B, scene, **options)
        else:
            self.x = extra_for(integrator, model, self.B)
        self.q, self.v = np.zeros((self.B, model.nq)), np.zeros((self.B, model.nv))
        self.qn, self.vn = np.zeros_like(self.q), np.zeros_like(self.v)
        self.t = 0.0
        self.set_control(None)

    def set_state(self, q, v=None):
        from pbsim.integrators.base import State

        st = State.make(self.model, q, v, self.B)
        self.q[...], self.v[...] = st.q, st.v

    def set_control(self, control):
        from pbsim.control.control import Control

        self.c = (control if control is not None else Control()).kernel_arrays(self.model, self.B)

    def advance(self, nsteps: int, dt: float):
        if self.integrator == "pbad":
            x = self.x
            self.drv(self.model.k, self.c, self.w, x.pm, x.pw, x.info, x.maxit, x.gtol, x.xtol, x.exact_h,
                     self.q, self.v, self.qn, self.vn, float(dt), int(nsteps))
        else:
            self.drv(self.model.k, self.s, self.c, self.w, self.sw, self.x, self.q, self.v, self.qn, self.vn,
                     float(dt), int(nsteps))
        self.t += int(nsteps) * float(dt)

    def synchronize(self):
        pass

    def state(self):
        return self.q.copy(), self.v.copy()


@kernel
def noop_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """A phase that does nothing (tests the per-launch schedule of :mod:`pbsim.backends.cuda`)."""
    return
