"""Baseline integrators on the generalized-coordinate equations: semi-implicit Euler
(paper 000 Eq. 3), explicit Euler and explicit Runge-Kutta 2/3/4.

Runge-Kutta stages live in the tangent space at q_k (Runge-Kutta-Munthe-Kaas): the stage
configuration is ``q_k (+) dq`` and the stage derivative of ``dq`` is ``dexp^-1_dq(v)`` for ball
and free joints, so RK keeps its order with quaternions.
"""
from __future__ import annotations

import math

import numpy as np
from numba import prange

from pbsim.backends.kernel import Variants, kernel
from pbsim.dynamics.energy import energy_state
from pbsim.dynamics.joints import BALL, FREE, integrate_config
from pbsim.dynamics.workspace import work_for
from pbsim.integrators.base import Diagnostics, Integrator, State, register
from pbsim.integrators.forces import FEATURES, features_used, forward_dynamics, make_step_work

# Butcher tableaus (A strictly lower triangular, weights b)
TABLEAUS = {
    "explicit_euler": (np.zeros((1, 1)), np.array([1.0])),
    "rk2": (np.array([[0.0, 0.0], [0.5, 0.0]]), np.array([0.0, 1.0])),  # midpoint
    "rk3": (np.array([[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [-1.0, 2.0, 0.0]]), np.array([1 / 6, 2 / 3, 1 / 6])),
    "rk4": (np.array([[0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 1.0, 0]], float),
            np.array([1 / 6, 1 / 3, 1 / 3, 1 / 6])),
}


@kernel
def dexpinv_velocity(m, dq, v, out):
    """``out = d(dq)/dt`` for velocity ``v`` at ``q_k (+) dq`` (right-trivialised dexp^-1)."""
    for i in range(m.nb):
        jt = m.jtype[i]
        j = m.iv[i]
        if jt == BALL or jt == FREE:
            a = j if jt == BALL else j + 3
            tx, ty, tz = dq[a], dq[a + 1], dq[a + 2]
            wx, wy, wz = v[a], v[a + 1], v[a + 2]
            th2 = tx * tx + ty * ty + tz * tz
            th = math.sqrt(th2)
            if th < 1e-6:
                k = 1.0 / 12.0 + th2 / 720.0
            else:
                k = 1.0 / th2 - (1.0 + math.cos(th)) / (2.0 * th * math.sin(th))
            cx = ty * wz - tz * wy  # theta x w
            cy = tz * wx - tx * wz
            cz = tx * wy - ty * wx
            ccx = ty * cz - tz * cy  # theta x (theta x w)
            ccy = tz * cx - tx * cz
            ccz = tx * cy - ty * cx
            out[a] = wx + 0.5 * cx + k * ccx  # Jr^-1(theta) w
            out[a + 1] = wy + 0.5 * cy + k * ccy
            out[a + 2] = wz + 0.5 * cz + k * ccz
            if jt == FREE:  # position part: x' = exp(theta^) v_lin
                lx, ly, lz = v[j], v[j + 1], v[j + 2]
                if th < 1e-12:
                    out[j], out[j + 1], out[j + 2] = lx, ly, lz
                else:
                    ux, uy, uz = tx / th, ty / th, tz / th
                    cs, sn = math.cos(th), math.sin(th)
                    d = (ux * lx + uy * ly + uz * lz) * (1.0 - cs)
                    out[j] = lx * cs + (uy * lz - uz * ly) * sn + ux * d
                    out[j + 1] = ly * cs + (uz * lx - ux * lz) * sn + uy * d
                    out[j + 2] = lz * cs + (ux * ly - uy * lx) * sn + uz * d
        else:
            for k2 in range(m.nvj[i]):
                out[j + k2] = v[j + k2]


@kernel
def euler_state(m, s, c, w, sw, b, q, v, dt, qn, vn):
    """Semi-implicit Euler (paper 000 Eq. 3): v+ = v + dt qdd(q, v); q+ = q (+) dt v+."""
    qdd = sw.kv[b, 0]
    forward_dynamics(m, s, c, w, sw, b, q[b], v[b], dt, True, qdd)
    for j in range(m.nv):
        vn[b, j] = v[b, j] + dt * qdd[j]
        sw.dq[b, j] = dt * vn[b, j]
    integrate_config(m, q[b], sw.dq[b], qn[b], w.Rj[b])


@kernel
def rk_state(m, s, c, w, sw, b, q, v, dt, A, wts, qn, vn):
    """One explicit Runge-Kutta-Munthe-Kaas step with tableau (A, wts)."""
    ns = wts.shape[0]
    dqs = sw.dqs[b]
    for st in range(ns):
        for j in range(m.nv):
            sq = 0.0
            sv = 0.0
            for k in range(st):
                sq += A[st, k] * sw.kq[b, k, j]
                sv += A[st, k] * sw.kv[b, k, j]
            dqs[j] = dt * sq
            sw.va[b, j] = v[b, j] + dt * sv
        integrate_config(m, q[b], dqs, sw.qa[b], w.Rj[b])
        forward_dynamics(m, s, c, w, sw, b, sw.qa[b], sw.va[b], dt, False, sw.kv[b, st])
        dexpinv_velocity(m, dqs, sw.va[b], sw.kq[b, st])
    for j in range(m.nv):
        sq = 0.0
        sv = 0.0
        for k in range(ns):
            sq += wts[k] * sw.kq[b, k, j]
            sv += wts[k] * sw.kv[b, k, j]
        dqs[j] = dt * sq
        vn[b, j] = v[b, j] + dt * sv
    integrate_config(m, q[b], dqs, qn[b], w.Rj[b])


@kernel(parallel=True)
def euler_batch(m, s, c, w, sw, q, v, dt, qn, vn, e):
    for i in prange(q.shape[0]):
        b = np.int64(i)  # prange indices are unsigned; kernels mix b with signed ints
        euler_state(m, s, c, w, sw, b, q, v, dt, qn, vn)
        energy_state(m, w, b, qn[b], vn[b], e[b])


@kernel(parallel=True)
def rk_batch(m, s, c, w, sw, q, v, dt, A, wts, qn, vn, e):
    for i in prange(q.shape[0]):
        b = np.int64(i)
        rk_state(m, s, c, w, sw, b, q, v, dt, A, wts, qn, vn)
        energy_state(m, w, b, qn[b], vn[b], e[b])


EULER_BATCH = Variants(euler_batch, FEATURES)
RK_BATCH = Variants(rk_batch, FEATURES)


class _Explicit(Integrator):
    def _buffers(self, B, dense=False):
        if getattr(self, "_B", None) != B or (dense and self._sw.Md.shape[1] < self.model.nv):
            self._B = B
            self._sw = make_step_work(self.model, B, dense=True if dense else None)
            self._ks = self.scene.kernel_arrays(self.model)
        return work_for(self.model, B), self._sw, self._ks

    def _finish(self, state, qn, vn, e, dt):
        nan = ~(np.isfinite(qn).all(axis=1) & np.isfinite(vn).all(axis=1))
        return State(qn, vn, state.t + dt), Diagnostics(energy=e.sum(axis=1), nan=nan)


@register("euler", doc="semi-implicit (symplectic) Euler, paper 000 Eq. 3; SPD via MABA, implicit damping")
class SemiImplicitEuler(_Explicit):
    """Semi-implicit Euler."""

    def _step(self, state, control, dt):
        B = state.batch
        kc = control.kernel_arrays(self.model, B)
        w, sw, ks = self._buffers(B, dense=kc.mode == 2 and kc.solver != 0)
        qn = np.empty_like(state.q)
        vn = np.empty_like(state.v)
        e = np.empty((B, 2))
        EULER_BATCH(**features_used(kc, ks))(self.model.k, ks, kc, w, sw, state.q, state.v, dt, qn, vn, e)
        return self._finish(state, qn, vn, e, dt)


class _RungeKutta(_Explicit):
    tableau = "rk4"

    def _step(self, state, control, dt):
        B = state.batch
        kc = control.kernel_arrays(self.model, B)
        w, sw, ks = self._buffers(B, dense=kc.mode == 2 and kc.solver != 0)
        A, wts = TABLEAUS[self.tableau]
        qn = np.empty_like(state.q)
        vn = np.empty_like(state.v)
        e = np.empty((B, 2))
        RK_BATCH(**features_used(kc, ks))(self.model.k, ks, kc, w, sw, state.q, state.v, dt, A, wts, qn, vn, e)
        return self._finish(state, qn, vn, e, dt)


@register("explicit_euler", doc="explicit (forward) Euler: q+ = q (+) dt v, v+ = v + dt qdd")
class ExplicitEuler(_RungeKutta):
    """Explicit Euler."""

    tableau = "explicit_euler"


@register("rk2", doc="explicit midpoint Runge-Kutta, order 2")
class RK2(_RungeKutta):
    """RK2 (midpoint)."""

    tableau = "rk2"


@register("rk3", doc="Kutta's third-order Runge-Kutta")
class RK3(_RungeKutta):
    """RK3."""

    tableau = "rk3"


@register("rk4", doc="classical fourth-order Runge-Kutta")
class RK4(_RungeKutta):
    """RK4."""

    tableau = "rk4"
