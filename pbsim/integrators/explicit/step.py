"""Step kernels of the baseline integrators: semi-implicit Euler (paper 000 Eq. 3), explicit
Euler and explicit Runge-Kutta 2/3/4 on the generalized-coordinate equations.

Runge-Kutta stages live in the tangent space at q_k (Runge-Kutta-Munthe-Kaas): the stage
configuration is ``q_k (+) dq`` and the stage derivative of ``dq`` is ``dexp^-1_dq(v)`` for ball
and free joints, so RK keeps its order with quaternions.

Coupled mimic joints: every acceleration is the coupled one (``accel_solve``,
:mod:`pbsim.dynamics.mimic`) and each step ends by setting the mimic joints' q and v from their
masters (which also corrects an initial state that violates the coupling).  Equality
constraints likewise (:mod:`pbsim.dynamics.equality`): constrained accelerations, and each step
ends with one projection of (q, v) onto the constraints (RK); semi-implicit Euler aims the
acceleration at the new position's constraint (:func:`~pbsim.dynamics.equality.equality_step_target`)
and projects q alone (its velocity projection costs first-order accuracy); where every row is
linear in q (joint and tendon couplings of degree <= 1) its position update keeps them exactly, so
the start's violation is removed inside that update
(:func:`~pbsim.dynamics.equality.equality_correction`) and no projection runs at the new q.

MJCF joint ranges are MuJoCo's soft limit constraint here (:mod:`pbsim.dynamics.limits`): its
rows act on the acceleration of each stage (semi-implicit Euler: after the equality target), as in
MuJoCo's Euler and RK4; the other methods hold them by the spring-damper of
:mod:`pbsim.model.limits`.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from pbsim.jit import kernel
from pbsim.dynamics.joints import integrate_config
from pbsim.dynamics.liegroup import dexpinv_velocity
from pbsim.dynamics.equality import eq_rows_linear, equality_correction, equality_project, equality_step_target
from pbsim.dynamics.mimic import mimic_project
from pbsim.dynamics.passive import limit_project
from pbsim.integrators.explicit.forces import forward_dynamics, limit_solve

# Butcher tableaus (A strictly lower triangular, weights b)
TABLEAUS = {
    "explicit_euler": (np.zeros((1, 1)), np.array([1.0])),
    "rk2": (np.array([[0.0, 0.0], [0.5, 0.0]]), np.array([0.0, 1.0])),  # midpoint
    "rk3": (np.array([[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [-1.0, 2.0, 0.0]]), np.array([1 / 6, 2 / 3, 1 / 6])),
    "rk4": (np.array([[0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 1.0, 0]], float),
            np.array([1 / 6, 1 / 3, 1 / 3, 1 / 6])),
}


@kernel
def euler_state(m, s, c, w, sw, b, q, v, dt, qn, vn):
    """Semi-implicit Euler (paper 000 Eq. 3): v+ = v + dt qdd(q, v); q+ = q (+) dt v+."""
    qdd = sw.kv[b, 0]
    forward_dynamics(m, s, c, w, sw, b, q[b], v[b], dt, True, qdd)
    eq = w.eJ.shape[1] > 0
    if eq:  # equality constraints: held at the new position
        equality_step_target(m, w, b, v[b], dt, qdd)
    if w.lJ.shape[1] > 0:  # MuJoCo's limit constraint (MJCF ranges)
        limit_solve(m, c, w, sw, b, q[b], v[b], dt, qdd)
    for j in range(m.nv):
        vn[b, j] = v[b, j] + dt * qdd[j]
        sw.dq[b, j] = dt * vn[b, j]
    linear = eq and eq_rows_linear(m)
    if linear:  # rows linear in q: this update keeps them exactly, the start's violation removed in it
        equality_correction(m, w, b, sw.dq[b])
    integrate_config(m, q[b], sw.dq[b], qn[b], w.Rj[b])
    mimic_project(m, qn[b], vn[b])
    if eq and not linear:  # equality constraints: q back onto them (O(dt^3))
        equality_project(m, w, b, qn[b], vn[b], False)


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
        limit_solve(m, c, w, sw, b, sw.qa[b], sw.va[b], dt, sw.kv[b, st])  # MuJoCo's limits, at each stage
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
    if ns == 1:  # explicit Euler moves q with the old v: no force can stop it within the step
        limit_project(m, q[b], qn[b], vn[b])
    mimic_project(m, qn[b], vn[b])  # coupled mimic joints: drop the round-off drift
    equality_project(m, w, b, qn[b], vn[b], True)  # equality constraints: post-stabilisation


RKExtra = namedtuple("RKExtra", "A wts")  # the Butcher tableau, the ``x`` of the RK step


@kernel
def euler_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """The contract's step (pbsim.integrators.base.StepSpec): semi-implicit Euler."""
    euler_state(m, s, c, w, sw, b, q, v, dt, qn, vn)


@kernel
def rk_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """The contract's step: explicit Runge-Kutta-Munthe-Kaas with the tableau in ``x`` (A, wts)."""
    rk_state(m, s, c, w, sw, b, q, v, dt, x.A, x.wts, qn, vn)
