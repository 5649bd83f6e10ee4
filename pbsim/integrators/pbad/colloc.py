"""PBAD orders 3 and 4 (paper 000 Eq. 6-7): Legendre collocation, LM over all unknown nodes.

Orders K = 3, 4 fit a degree-K polynomial through the previous step's last interior node, q_k
and the K - 1 unknown nodes (Legendre roots, Sec. 4.1) and solve the stacked residuals of Eq. 6
in the least-squares form Eq. 7 by LM, all nodes at once; the Jacobian's diagonal blocks use
Algorithm 2, the off-diagonal blocks Algorithm 3 (Sec. 5.1).  The previous interior node is the
integrator's carry in ``State.carry`` (reconstructed from (q, v) and ABA when absent).

Point forces at the nodes (drag, Sec. 6.2; penalty contact, Eq. 9): Eq. 6 has no energy, so
the forces enter as forces, ``r_u += J_x(q_u)^T dQ/dx`` per point, the sign of gravity's
``-f``.  A point's velocity at node u is the derivative of its Cartesian collocation polynomial,
the one Eq. 6's inertia uses (``A = sum_j C2[u, j] T_j``): ``v_u = sum_j C1[u, j] x(q_j) / dt``
over all K + 1 nodes (the two known ones included).  Contact:
:func:`pbsim.contact.energy.contact_force_velocity` (order 2's force with ``x - x_k`` replaced by
``v_u dt``: normal spring ``2 D1 d n`` and tangential damping ``2 D2 d^2 P v_u / dt``, ``P`` the
tangent plane at node u's detection, its normal part ``2 D2 d |P v_u|^2`` included) plus the
normal damper ``Cn (n . v_u)`` (``pm.Cn``: the scene's damping, option ``contact_damping``; the
normal force clamped at 0); drag: ``(cn (I - a a^T) + ct a a^T) v_u`` with the axis ``a`` frozen
at q_k as in order 2.  Their Jacobian is exact up to the curvature of the environment (the normal
is taken locally constant, as in order 2): the force's own dependence on x_u (diagonal block),
its velocity dependence on every unknown node v through ``C1[u, v] / dt J_x(q_v)``, and the
derivative of ``J_x(q_u)^T`` through Algorithm 2 (the forces enter G before the adjoint pass, so
``hessian_second_order`` sees them).  LM's trials land contact points entering the environment
just inside (order 2's step filter, per node: :func:`colloc_contact_limit`).

Equality constraints (:mod:`pbsim.dynamics.equality`): order 2's penalty ``kc/2 |phi|^2`` as the
force ``kc J^T phi`` at every unknown node (Gauss-Newton block ``kc J^T J``), LM's trial nodes moved
back to the constraint value the linear model predicts (pbfd's second-order correction), and the
end node and its velocity projected onto the constraints in the mass metric.

The nodes, weights, point forces and the residuals of Eq. 6 with their Jacobian are in
:mod:`pbsim.integrators.pbad.colloc_residual`; this file holds the LM solve of Eq. 7 and the batch kernels.
"""
from __future__ import annotations

import math

import numpy as np
from numba import prange

from pbsim.jit import Variants, kernel, specialize, unused, unused_float
from pbsim.dynamics.energy import energy_state
from pbsim.dynamics.equality import (equality_project_mass, equality_project_velocity_mass,
                                     equality_second_order_correction)
from pbsim.dynamics.joints import BALL, FREE, REVOLUTE, difference_config, integrate_config
from pbsim.dynamics.kinematics import fk_state
from pbsim.integrators.pbad.colloc_residual import colloc_residual
from pbsim.integrators.pbad.energy import contact_step_limit, poses_from_work, world_twists
from pbsim.integrators.pbad.pairs import pair_step_limit
from pbsim.optim.linalg import dot, inf_norm, lu_solve_inplace
from pbsim.optim.lm import LM_ACCEPTED, LM_DAMPED, LM_ROOT, lm_loop, lm_stalled_small

# initial guess of the unknown collocation nodes (colloc_state)
GUESS_VELOCITY, GUESS_PBAD2, GUESS_EXTRAPOLATE = 0, 1, 2
_GUESS = {"velocity": GUESS_VELOCITY, "pbad2": GUESS_PBAD2, "extrapolate": GUESS_EXTRAPOLATE}


# LM on Eq. 7: the generic loop of pbsim.optim.lm on the problem P = (m, s, pm, c, w, pw, C1, C2, dt),
# iterate: the unknown nodes pw.qn[b, 2:], trial pw.qt[b, 2:]; objective 1/2 |r|^2, norm |r|_inf

@kernel
def colloc_lm_eval(P, b):
    """LM hook: r and J of Eq. 6 at the nodes, E = 1/2 |r|^2 and |r|_inf."""
    m, s, pm, c, w, pw, C1, C2, dt = P
    n = (pw.qn.shape[1] - 2) * m.nv
    r = pw.r[b]
    colloc_residual(m, s, pm, c, w, pw, b, pw.qn[b], C1, C2, dt, True, r, pw.J[b])
    return 0.5 * dot(r, r, n), inf_norm(r, n)


@kernel
def colloc_contact_limit(m, s, w, pw, b, fresh, dx):
    """Shortens the step ``dx`` of all nodes in place so that no contact point outside the
    environment at its node sinks, along the linearised step, deeper than 1e-6 of the depth the
    full step predicts (order 2's filter, :func:`pbsim.integrators.pbad.energy.contact_step_limit`,
    per node; the smallest factor over the nodes): a Newton step from outside does not see the
    contact force it would meet.  ``fresh``: pw.T / pw.xi hold the iterate's poses and twists (else
    recomputed: a rejected trial left its own).  The shortened step is kept above STEP_FLOOR."""
    nodes = pw.qn[b]
    nn = nodes.shape[0]
    nv = m.nv
    alpha = 1.0
    for u in range(2, nn):
        if not fresh:
            fk_state(m, w, b, nodes[u])
            poses_from_work(m, w, b, pw.T[b, u])
            world_twists(m, pw.T[b, u], pw.xi[b, u - 2])
        dxu = dx[(u - 2) * nv:(u - 1) * nv]
        if s.npts > 0:
            a = contact_step_limit(m, s, pw.T[b, u], pw.xi[b, u - 2], dxu, 1e-6)
            if a < alpha:
                alpha = a
        if s.nitem > 0:  # and points meeting another body's shape
            a = pair_step_limit(m, s, pw.T[b, u], pw.xi[b, u - 2], dxu, 1e-6)
            if a < alpha:
                alpha = a
    if alpha < 1.0:
        n = (nn - 2) * nv
        big = inf_norm(dx, n)
        if alpha * big < STEP_FLOOR:
            alpha = STEP_FLOOR / big if big > STEP_FLOOR else 1.0
        for k in range(n):
            dx[k] *= alpha


STEP_FLOOR = 1e-8  # rad/m: a step shortened by the contact limit stays above xtol (no false convergence)


@kernel
def colloc_trial(P, b, tries):
    """LM hook: the trial nodes q_u (+) dx_u and their 1/2 |r|^2 (J is left alone); contact points
    entering the environment land just inside (:func:`colloc_contact_limit`; ``tries`` < 0: the
    poses in pw are the iterate's)."""
    m, s, pm, c, w, pw, C1, C2, dt = P
    nodes = pw.qn[b]
    trial = pw.qt[b]
    nn = nodes.shape[0]
    nv = m.nv
    dx = pw.dx[b]
    if s.npts > 0 or s.nitem > 0:
        colloc_contact_limit(m, s, w, pw, b, tries < 0, dx)
    for u in range(2, nn):
        integrate_config(m, nodes[u], dx[(u - 2) * nv:(u - 1) * nv], trial[u], w.Rj[b])
        if m.eq_type.shape[0] > 0:  # back to the constraint value the linear model predicts (as pbfd)
            equality_second_order_correction(m, w, b, nodes[u], dx[(u - 2) * nv:(u - 1) * nv], trial[u])
    rt = pw.rt[b]
    colloc_residual(m, s, pm, c, w, pw, b, trial, C1, C2, dt, False, rt, pw.J[b])
    return 0.5 * dot(rt, rt, (nn - 2) * nv)


@kernel
def colloc_newton(P, b, E, xtol):
    """LM hook tried first: the system is square, so the Newton step J dx = -r (LU: no squared
    conditioning) is taken when it decreases E; otherwise the normal equations g = J^T r,
    H = J^T J are formed for the damped tries (O(n^3): only when the Newton step fails)."""
    m, s, pm, c, w, pw, C1, C2, dt = P
    n = (pw.qn.shape[1] - 2) * m.nv
    r = pw.r[b]
    J = pw.J[b]
    dx = pw.dx[b]
    M2 = pw.M2[b]
    for a in range(n):
        dx[a] = -r[a]
        for cc in range(n):
            M2[a, cc] = J[a, cc]
    if lu_solve_inplace(M2, dx, n):
        Et = colloc_trial(P, b, -1)
        if Et <= E:
            return LM_ACCEPTED
        if inf_norm(dx, n) < xtol:  # Newton step below xtol: at the root, r is rounding noise
            return LM_ROOT
    g = pw.g[b]
    H = pw.H[b]
    for a in range(n):
        acc = 0.0
        for k in range(n):
            acc += J[k, a] * r[k]
        g[a] = acc
        for cc in range(a, n):
            acc = 0.0
            for k in range(n):
                acc += J[k, a] * J[k, cc]
            H[a, cc] = acc
            H[cc, a] = acc
    return LM_DAMPED


@kernel
def colloc_take(P, b):
    """LM hook: the trial nodes become the nodes."""
    m = P[0]
    pw = P[5]
    for u in range(2, pw.qn.shape[1]):
        for a in range(m.nq):
            pw.qn[b, u, a] = pw.qt[b, u, a]


COLLOC_LM = dict(lm_eval=colloc_lm_eval, lm_try=colloc_trial, lm_take=colloc_take, lm_first=colloc_newton,
                 lm_stalled=lm_stalled_small)
colloc_lm_loop = specialize(lm_loop, "colloc", **COLLOC_LM)
STALL_WINDOW = 10  # stop when 1/2 |r|^2 has not halved in this many iterations (a minimum of Eq. 7, no root)


@kernel
def colloc_lm(m, s, pm, c, w, pw, b, dt, C1, C2, maxit, gtol, xtol, info):
    """LM on Eq. 7 (1/2 sum ||r_u||^2) over all unknown nodes at once."""
    nodes = pw.qn[b]
    trial = pw.qt[b]
    for k in range(2):  # the known nodes
        for a in range(m.nq):
            trial[k, a] = nodes[k, a]
    n = (nodes.shape[0] - 2) * m.nv
    colloc_lm_loop((m, s, pm, c, w, pw, C1, C2, dt), (pw.g[b], pw.H[b], pw.M2[b], pw.L[b], pw.dx[b]), b, n, maxit,
                   gtol, xtol, 0.0, STALL_WINDOW, info)


@kernel
def colloc_max_rotation(m, w, pw, b, nn):
    """Largest rotation [rad] between two consecutive collocation nodes, over all joints (tangent
    difference: sees a revolute angle that jumped by 2 pi) and all bodies (world frame).  A root of
    Eq. 6 with a large value is aliased: the Cartesian polynomial through the nodes cannot follow
    a body turning by ~pi or more between nodes (e.g. one revolution per step looks like rest)."""
    nodes = pw.qn[b]
    d = pw.d[b]
    for u in range(2, nn):
        fk_state(m, w, b, nodes[u])
        poses_from_work(m, w, b, pw.T[b, u])
    mx = 0.0
    for u in range(nn - 1):
        difference_config(m, nodes[u], nodes[u + 1], d, w.Rj[b])
        T0 = pw.T[b, u]
        T1 = pw.T[b, u + 1]
        for i in range(m.nb):
            jt = m.jtype[i]
            j = m.iv[i]
            a = 0.0
            if jt == REVOLUTE:
                a = abs(d[j])
            elif jt == BALL:
                a = math.sqrt(d[j] * d[j] + d[j + 1] * d[j + 1] + d[j + 2] * d[j + 2])
            elif jt == FREE:
                a = math.sqrt(d[j + 3] * d[j + 3] + d[j + 4] * d[j + 4] + d[j + 5] * d[j + 5])
            if a > mx:
                mx = a
            tr = 0.0  # trace(R0^T R1) = 1 + 2 cos(angle)
            for r in range(3):
                for cc in range(3):
                    tr += T0[i, r, cc] * T1[i, r, cc]
            ca = 0.5 * (tr - 1.0)
            if ca > 1.0:
                ca = 1.0
            if ca < -1.0:
                ca = -1.0
            a = math.acos(ca)
            if a > mx:
                mx = a
    return mx


@kernel
def colloc_state(m, s, pm, c, w, pw, b, q, v, qprev, qguess, guess, dt, tau, C1, C2, maxit, gtol, xtol, maxrot, qn,
                 vn, qlast, e, info):
    nn = tau.shape[0]
    for k in range(m.nq):
        pw.qn[b, 0, k] = qprev[b, k]
        pw.qn[b, 1, k] = q[b, k]
    for k in range(2):
        fk_state(m, w, b, pw.qn[b, k])
        poses_from_work(m, w, b, pw.T[b, k])
    d = pw.d[b]
    if guess == GUESS_PBAD2:  # on the geodesic q_k -> qguess (a PBAD2 step: in the right basin at large dt)
        difference_config(m, q[b], qguess[b], pw.v3[b], w.Rj[b])
        for u in range(2, nn):
            for j in range(m.nv):
                d[j] = tau[u] * pw.v3[b, j]
            integrate_config(m, q[b], d, pw.qn[b, u], w.Rj[b])
    else:
        # q_k (+) (s v_k + s^2 c), s = tau_u dt: velocity only (c = 0), or the quadratic through the
        # previous node q(tau_0 dt) with slope v_k at q_k (c = (q_prev (-) q_k - s_0 v_k) / s_0^2)
        s0 = tau[0] * dt
        cq = pw.v3[b]
        if guess == GUESS_EXTRAPOLATE:
            difference_config(m, q[b], qprev[b], cq, w.Rj[b])
            for j in range(m.nv):
                cq[j] = (cq[j] - s0 * v[b, j]) / (s0 * s0)
        else:
            for j in range(m.nv):
                cq[j] = 0.0
        for u in range(2, nn):
            st = tau[u] * dt
            for j in range(m.nv):
                d[j] = st * v[b, j] + st * st * cq[j]
            integrate_config(m, q[b], d, pw.qn[b, u], w.Rj[b])
    colloc_lm(m, s, pm, c, w, pw, b, dt, C1, C2, maxit, gtol, xtol, info[b])
    rot = colloc_max_rotation(m, w, pw, b, nn)
    info[b, 4] = rot
    if not (rot <= maxrot):  # aliased root (or NaN): rejected like a non-converged step
        info[b, 2] = 0.0
    last = nn - 1
    if m.eq_type.shape[0] > 0:  # the end node onto the constraints (order 2's projection)
        equality_project_mass(m, w, b, pw.qn[b, last], 2)
    for k in range(m.nq):
        qn[b, k] = pw.qn[b, last, k]
        qlast[b, k] = pw.qn[b, last - 1, k]
    # velocity at the end node from the polynomial
    for j in range(m.nv):
        vn[b, j] = 0.0
    for jn in range(nn - 1):
        difference_config(m, pw.qn[b, last], pw.qn[b, jn], d, w.Rj[b])
        for j in range(m.nv):
            vn[b, j] += C1[last, jn] * d[j] / dt
    if m.eq_type.shape[0] > 0:
        equality_project_velocity_mass(m, w, b, qn[b], vn[b])
    energy_state(m, w, b, qn[b], vn[b], e[b])


@kernel(parallel=True)
def colloc_batch(m, s, pm, c, w, pw, q, v, qprev, qguess, guess, dt, tau, C1, C2, maxit, gtol, xtol, maxrot, qn, vn,
                 qlast, e, info):
    for i in prange(q.shape[0]):
        b = np.int64(i)
        colloc_state(m, s, pm, c, w, pw, b, q, v, qprev, qguess, guess, dt, tau, C1, C2, maxit, gtol, xtol, maxrot,
                     qn, vn, qlast, e, info)


@kernel
def colloc_eval_state(m, s, pm, c, w, pw, b, nodes, C1, C2, dt, r, J):
    for k in range(nodes.shape[1]):
        for a in range(m.nq):
            pw.qn[b, k, a] = nodes[b, k, a]
    for k in range(2):
        fk_state(m, w, b, pw.qn[b, k])
        poses_from_work(m, w, b, pw.T[b, k])
    colloc_residual(m, s, pm, c, w, pw, b, pw.qn[b], C1, C2, dt, True, r[b], J[b])


@kernel(parallel=True)
def colloc_eval_batch(m, s, pm, c, w, pw, nodes, tau, C1, C2, dt, r, J):
    """Residuals and Jacobian of Eq. 6 at given nodes (B, K+1, nq) (tests, tools)."""
    for i in prange(nodes.shape[0]):
        b = np.int64(i)
        colloc_eval_state(m, s, pm, c, w, pw, b, nodes, C1, C2, dt, r, J)


# drag points and contact points are compiled only into runs that have some (as PBAD2's Variants)
_POINT_FEATURES = {
    "points": ("colloc_drag_forces", "colloc_drag_jacobian"),
    "contact": {"colloc_contact_forces": unused, "colloc_contact_jacobian": unused, "contact_step_limit": unused_float},
    "body_contact": {"colloc_pair_terms": unused, "pair_step_limit": unused_float},
}
COLLOC = Variants(colloc_batch, _POINT_FEATURES)
COLLOC_EVAL = Variants(colloc_eval_batch, _POINT_FEATURES)


@kernel
def colloc_rotation_state(m, w, pw, b, nodes, rot):
    nn = nodes.shape[1]
    for k in range(nn):
        for a in range(m.nq):
            pw.qn[b, k, a] = nodes[b, k, a]
    for k in range(2):
        fk_state(m, w, b, pw.qn[b, k])
        poses_from_work(m, w, b, pw.T[b, k])
    rot[b] = colloc_max_rotation(m, w, pw, b, nn)


@kernel(parallel=True)
def colloc_rotation_batch(m, w, pw, nodes, rot):
    """Largest rotation between consecutive nodes (B, K+1, nq) (tests, tools)."""
    for i in prange(nodes.shape[0]):
        b = np.int64(i)
        colloc_rotation_state(m, w, pw, b, nodes, rot)
