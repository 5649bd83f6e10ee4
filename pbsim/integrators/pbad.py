"""PBAD: position-based articulated dynamics (paper 000), orders 2 (Eq. 5), 3 and 4 (Eq. 6-7).

Order 2 minimises E(q_{k+1}) = inertial term (Eq. 5, through Eq. 8's M~) + gravity potential
- work of joint torques + implicit damping / SPD / drag / penalty contact (Sec. 6.2, Eq. 9), by
Levenberg-Marquardt (exact Hessian, Algorithms 1-3) or LBFGS with Armijo backtracking, over a
tangent increment around the current iterate (re-centred every iteration).  With
``q_{k-1} = q_k (+) (-dt v_k)`` and ``v_{k+1} = (q_{k+1} (-) q_k) / dt`` it is backward Euler on
(q, v) written in positions, hence stateless and first-order accurate (the paper: order K has
the accuracy of Runge-Kutta K - 1).

Orders K = 3, 4 fit a degree-K polynomial through the previous step's last interior node, q_k
and the K - 1 unknown nodes (Legendre roots, Sec. 4.1) and solve the stacked residuals of Eq. 6
in the least-squares form Eq. 7 by LM, all nodes at once; the Jacobian's diagonal blocks use
Algorithm 2, the off-diagonal blocks Algorithm 3 (Sec. 5.1).  ``State.q_prev`` carries the
previous interior node (reconstructed from (q, v) and ABA when absent).
"""
from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import replace

import numpy as np
from numba import prange

from pbsim.backends.kernel import Variants, kernel, unused, unused_float
from pbsim.control.control import PD, SPD
from pbsim.dynamics.energy import energy_state
from pbsim.dynamics.joints import BALL, FREE, REVOLUTE, difference_config, integrate_config
from pbsim.dynamics.kinematics import fk_state
from pbsim.dynamics.pbad_energy import (adjoint_gradient, composite_moments, gn_block, hessian_second_order,
                                        contact_step_limit, inertial_gravity_terms, make_pbad_model, point_hessian,
                                        point_terms, poses_from_work, world_twists)
from pbsim.dynamics.minv import minv_factor, minv_solve
from pbsim.dynamics.workspace import make_work, work_for
from pbsim.errors import InputError
from pbsim.integrators.base import Diagnostics, Integrator, Option, State, register
from pbsim.integrators.explicit import dexpinv_velocity
from pbsim.optim.lbfgs import lbfgs_first_loop, lbfgs_push, lbfgs_second_loop
from pbsim.optim.linalg import dot, inf_norm, lu_solve_inplace
from pbsim.optim.lm import lm_accept, lm_reject, lm_solve, lm_stalled_converged

# initial guess of the unknown collocation nodes (colloc_state)
GUESS_VELOCITY, GUESS_PBAD2, GUESS_EXTRAPOLATE = 0, 1, 2
_GUESS = {"velocity": GUESS_VELOCITY, "pbad2": GUESS_PBAD2, "extrapolate": GUESS_EXTRAPOLATE}

PbadWork = namedtuple("PbadWork", "T A G W C xi qn qt r rt J H L M2 g gt dx d v1 v2 v3 vel F K S Y rho alpha P")


def make_pbad_work(model, pm, B, K, lbfgs_m=8):
    nb, nq, nv = max(model.nb, 1), model.nq, model.nv
    nu = K - 1
    n = nu * nv
    z = np.zeros
    npts = max(pm.npts, 1)
    return PbadWork(T=z((B, K + 1, nb, 3, 4)), A=z((B, nb, 3, 4)), G=z((B, nb, 3, 4)), W=z((B, nb, 3, 4)),
                    C=z((B, nb, 4, 4)), xi=z((B, nu + 1, nv, 6)), qn=z((B, K + 1, nq)), qt=z((B, K + 1, nq)),
                    r=z((B, n)), rt=z((B, n)), J=z((B, n, n)), H=z((B, n, n)), L=z((B, n, n)), M2=z((B, n, n)), g=z((B, n)),
                    gt=z((B, n)), dx=z((B, n)), d=z((B, nv)), v1=z((B, nv)), v2=z((B, nv)), v3=z((B, nv)),
                    vel=z((B, nv, 3)), F=z((B, npts, 3)), K=z((B, npts, 3, 3)),
                    S=z((B, lbfgs_m, n)), Y=z((B, lbfgs_m, n)), rho=z((B, lbfgs_m)), alpha=z((B, lbfgs_m)),
                    P=z((B, n)))


# ---------------------------------------------------------------------------------------------
# order 2: energy, gradient, Hessian (Eq. 5)

@kernel
def pbad2_eval(m, pm, c, w, pw, b, q, qk, vk, dt, want_g, want_h, exact_h, g, H):
    """E(q) of Eq. 5 for the step from (q_{k-1}, q_k) (poses in pw.T[b, 0], pw.T[b, 1]) to ``q``.

    With ``want_g`` fills the tangent gradient ``g`` (nv), with ``want_h`` the Hessian ``H``
    (exact second derivatives of the poses when ``exact_h``, else Gauss-Newton).  Joint-space
    terms (torques, damping, armature, SPD) are exact for 1-DOF joints; for ball/free joints their
    gradient is exact (through dexp^-1) and their Hessian keeps the leading diagonal term."""
    T = pw.T[b, 2]
    Tk = pw.T[b, 1]
    Tp = pw.T[b, 0]
    A = pw.A[b]
    G = pw.G[b]
    fk_state(m, w, b, q)
    poses_from_work(m, w, b, T)
    inv2 = 1.0 / (dt * dt)
    for i in range(m.nb):
        for r in range(3):
            for cc in range(4):
                A[i, r, cc] = T[i, r, cc] - 2.0 * Tk[i, r, cc] + Tp[i, r, cc]
    e = inertial_gravity_terms(m, pm, T, A, inv2, True, G)
    if pm.npts > 0:
        e += point_terms(m, pm, T, Tk, dt, G, pw.F[b], pw.K[b])
    # joint-space terms: h = dE/dd for d = q (-) q_k; kp part through e_ref = q (-) q_ref
    d = pw.d[b]
    h = pw.v1[b]
    difference_config(m, qk, q, d, w.Rj[b])
    bt = b if c.tau.shape[0] > 1 else 0
    bp = b if c.kp.shape[0] > 1 else 0
    bd = b if c.kd.shape[0] > 1 else 0
    bq = b if c.q_ref.shape[0] > 1 else 0
    bv = b if c.v_ref.shape[0] > 1 else 0
    spd = c.mode == SPD
    for j in range(m.nv):
        tau = c.tau[bt, j]
        kd = 0.0
        if c.mode == PD:  # plain PD: explicit, at (q_k, v_k)
            tau += -c.kd[bd, j] * (vk[j] - c.v_ref[bv, j])
        elif spd:
            kd = c.kd[bd, j]
            tau += kd * c.v_ref[bv, j]
        dd = d[j]
        dprev = dt * vk[j]
        cdamp = (m.damping[j] + kd) / dt
        carm = m.armature[j] * inv2
        e += -tau * dd + 0.5 * cdamp * dd * dd + 0.5 * carm * (dd - dprev) * (dd - dprev)
        h[j] = -tau + cdamp * dd + carm * (dd - dprev)
    if c.mode == PD or spd:
        eref = pw.v2[b]
        q_at = qk if c.mode == PD else q
        difference_config(m, c.q_ref[bq], q_at, eref, w.Rj[b])
        for j in range(m.nv):
            kp = c.kp[bp, j]
            if c.mode == PD:
                h[j] += kp * eref[j]  # constant torque -kp e(q_k): linear work
                e += kp * eref[j] * d[j]
            else:
                e += 0.5 * kp * eref[j] * eref[j]
    if want_g:
        xi = pw.xi[b, 0]
        world_twists(m, T, xi)
        adjoint_gradient(m, T, G, xi, pw.W[b], g)
        tmp = pw.v3[b]
        for j in range(m.nv):
            tmp[j] = -d[j]
        dexpinv_velocity(m, tmp, h, h)  # J_r^-T(d) h = J_r^-1(-d) h (in place is safe)
        for j in range(m.nv):
            g[j] += h[j]
        if spd:
            eref = pw.v2[b]
            difference_config(m, c.q_ref[bq], q, eref, w.Rj[b])
            for j in range(m.nv):
                tmp[j] = -eref[j]
                h[j] = c.kp[bp, j] * eref[j]
            dexpinv_velocity(m, tmp, h, h)
            for j in range(m.nv):
                g[j] += h[j]
        if want_h:
            if exact_h:
                hessian_second_order(m, xi, pw.W[b], H, False)
            composite_moments(m, pm, T, T, inv2, pw.C[b])
            gn_block(m, xi, xi, pw.C[b], H, 0, 0, exact_h)
            if pm.npts > 0:
                point_hessian(m, pm, T, xi, pw.K[b], H, 0, pw.vel[b])
            for j in range(m.nv):
                kd = c.kd[bd, j] if spd else 0.0
                kp = c.kp[bp, j] if spd else 0.0
                H[j, j] += (m.damping[j] + kd) / dt + m.armature[j] * inv2 + kp
    return e


@kernel
def pbad2_prepare(m, w, pw, b, q, v, dt):
    """Poses of q_{k-1} = q_k (+) (-dt v_k) and q_k into pw.T[b, 0:2]; initial guess q_k (+) dt v_k."""
    d = pw.d[b]
    for j in range(m.nv):
        d[j] = -dt * v[b, j]
    integrate_config(m, q[b], d, pw.qn[b, 0], w.Rj[b])
    fk_state(m, w, b, pw.qn[b, 0])
    poses_from_work(m, w, b, pw.T[b, 0])
    fk_state(m, w, b, q[b])
    poses_from_work(m, w, b, pw.T[b, 1])
    for j in range(m.nv):
        d[j] = dt * v[b, j]
    integrate_config(m, q[b], d, pw.qn[b, 2], w.Rj[b])


@kernel
def pbad2_trial(m, pm, c, w, pw, b, q, v, dt, exact_h, xtol, lam, E):
    """The trial loop of one LM iteration on Eq. 5 at the iterate ``pw.qn[b, 2]`` (with its E, g, H):
    damped solve, contact step limit (points entering the ground land just inside), accept on a
    decrease of E, else raise lambda and retry (30 tries).  Returns ``(lam, accepted, small)``;
    ``small``: the last rejected step was below ``xtol``.  An accepted iterate is in ``pw.qt[b, 2]``."""
    n = m.nv
    qi = pw.qn[b, 2]
    qt = pw.qt[b, 2]
    g = pw.g[b]
    H = pw.H[b]
    dx = pw.dx[b]
    for tries in range(30):
        if lm_solve(H, g, lam, pw.M2[b], pw.L[b], dx, n):
            if pm.contact:  # land points entering the ground just inside
                if tries > 0:  # a rejected trial left its poses in pw.T[b, 2]; xi is still qi's
                    fk_state(m, w, b, qi)
                    poses_from_work(m, w, b, pw.T[b, 2])
                alpha = contact_step_limit(m, pm, pw.T[b, 2], pw.xi[b, 0], dx, 1e-6)
                if alpha < 1.0:
                    for k in range(n):
                        dx[k] *= alpha
            integrate_config(m, qi, dx, qt, w.Rj[b])
            Et = pbad2_eval(m, pm, c, w, pw, b, qt, q[b], v[b], dt, False, False, exact_h, g, H)
            if Et <= E + 1e-15 * abs(E):
                return lm_accept(lam), True, False
            if inf_norm(dx, n) < xtol:
                return lam, False, True
        lam = lm_reject(lam)
    return lam, False, False


@kernel
def pbad2_lm(m, pm, c, w, pw, b, q, v, dt, maxit, gtol, xtol, exact_h, info):
    """Levenberg-Marquardt on Eq. 5 for trajectory b.  info = [iterations, |g|_inf, converged, E]."""
    n = m.nv
    qi = pw.qn[b, 2]
    qt = pw.qt[b, 2]
    g = pw.g[b]
    H = pw.H[b]
    E = pbad2_eval(m, pm, c, w, pw, b, qi, q[b], v[b], dt, True, True, exact_h, g, H)
    lam = 1e-6
    it = 0
    conv = False
    gn = inf_norm(g, n)
    while it < maxit:
        if gn < gtol:
            conv = True
            break
        it += 1
        lam, accepted, small = pbad2_trial(m, pm, c, w, pw, b, q, v, dt, exact_h, xtol, lam, E)
        if not accepted:
            conv = lm_stalled_converged(H, n, small, gn, gtol)
            break
        for k in range(m.nq):
            qi[k] = qt[k]
        step = inf_norm(pw.dx[b], n)
        E = pbad2_eval(m, pm, c, w, pw, b, qi, q[b], v[b], dt, True, True, exact_h, g, H)
        gn = inf_norm(g, n)
        if step < xtol:
            conv = True
            break
    if gn < gtol:
        conv = True
    info[0] = it
    info[1] = gn
    info[2] = 1.0 if conv else 0.0
    info[3] = E


@kernel
def lbfgs_h0_apply(m, wf, b, h0, dt, d, tmp):
    """d <- h0 dt^2 M(q_k)^-1 d: PBAD's LBFGS initial inverse Hessian (Eq. 5's Hessian is
    M / dt^2 + O(1)), O(n) through the articulated factor in ``wf``."""
    minv_solve(m, wf, b, d, tmp)
    s = h0 * dt * dt
    for j in range(m.nv):
        d[j] = s * tmp[j]


@kernel
def pbad2_lbfgs(m, pm, c, w, wf, pw, b, q, v, dt, maxit, gtol, xtol, info):
    """LBFGS with Armijo backtracking on Eq. 5, preconditioned by the inertial part of the Hessian:
    H0 = h0 dt^2 M(q_k)^-1 applied in O(n) (articulated factor of M at q_k in ``wf``, a second
    dynamics workspace: ``w`` is overwritten by every energy evaluation); h0 = s.y / y.H0 y from the
    newest stored pair."""
    n = m.nv
    qi = pw.qn[b, 2]
    qt = pw.qt[b, 2]
    g = pw.g[b]
    gt = pw.gt[b]
    dx = pw.dx[b]
    s_new = pw.r[b]
    y_new = pw.rt[b]
    P = pw.P[b]
    for j in range(n):
        P[j] = 0.0
    minv_factor(m, wf, b, q[b], P, P)  # zero velocity, no extra diagonal
    E = pbad2_eval(m, pm, c, w, pw, b, qi, q[b], v[b], dt, True, False, False, g, pw.H[b])
    head = 0
    count = 0
    h0 = 1.0
    gn = inf_norm(g, n)
    it = 0
    conv = False
    mm = pw.S.shape[1]
    while it < maxit:
        if gn < gtol:
            conv = True
            break
        it += 1
        lbfgs_first_loop(g, pw.S[b], pw.Y[b], pw.rho[b], pw.alpha[b], count, head, dx, n)
        lbfgs_h0_apply(m, wf, b, h0, dt, dx, P)
        lbfgs_second_loop(pw.S[b], pw.Y[b], pw.rho[b], pw.alpha[b], count, head, dx, n)
        slope = dot(g, dx, n)
        if not (slope < 0.0):  # not a descent direction: preconditioned steepest descent
            for j in range(n):
                dx[j] = -g[j]
            lbfgs_h0_apply(m, wf, b, h0, dt, dx, P)
            slope = dot(g, dx, n)
        step = 1.0
        ok = False
        Et = E
        for _ls in range(40):
            for j in range(n):
                s_new[j] = step * dx[j]
            integrate_config(m, qi, s_new, qt, w.Rj[b])
            Et = pbad2_eval(m, pm, c, w, pw, b, qt, q[b], v[b], dt, True, False, False, gt, pw.H[b])
            if Et <= E + 1e-4 * step * slope + 1e-15 * abs(E):
                ok = True
                break
            step *= 0.5
        if not ok:
            conv = inf_norm(s_new, n) < xtol
            break
        # tangent-space pair (gradients at different base points: first-order consistent)
        for j in range(n):
            y_new[j] = gt[j] - g[j]
        head2 = lbfgs_push(pw.S[b], pw.Y[b], pw.rho[b], s_new, y_new, head, n)
        if head2 != head:
            head = head2
            if count < mm:
                count += 1
            for j in range(n):
                dx[j] = y_new[j]
            lbfgs_h0_apply(m, wf, b, 1.0, dt, dx, P)
            h0 = dot(s_new, y_new, n) / dot(y_new, dx, n)
        for k in range(m.nq):
            qi[k] = qt[k]
        for j in range(n):
            g[j] = gt[j]
        E = Et
        gn = inf_norm(g, n)
        if inf_norm(s_new, n) < xtol:
            conv = True
            break
    if gn < gtol:
        conv = True
    info[0] = it
    info[1] = gn
    info[2] = 1.0 if conv else 0.0
    info[3] = E


@kernel
def pbad2_finish(m, w, pw, b, q, dt, qn, vn):
    """(q_{k+1}, v_{k+1} = (q_{k+1} (-) q_k) / dt) from the iterate (Eq. 5's velocity update)."""
    for k in range(m.nq):
        qn[b, k] = pw.qn[b, 2, k]
    difference_config(m, q[b], qn[b], vn[b], w.Rj[b])
    for j in range(m.nv):
        vn[b, j] /= dt


@kernel
def pbad2_state(m, pm, c, w, wf, pw, b, q, v, dt, maxit, gtol, xtol, method, exact_h, qn, vn, e, info):
    """One PBAD2 step for trajectory b: ``method`` 0 = Levenberg-Marquardt, 1 = LBFGS (``wf``: a
    second dynamics workspace for LBFGS's M^-1 factor)."""
    pbad2_prepare(m, w, pw, b, q, v, dt)
    if method == 0:
        pbad2_lm(m, pm, c, w, pw, b, q, v, dt, maxit, gtol, xtol, exact_h, info[b])
    else:
        pbad2_lbfgs(m, pm, c, w, wf, pw, b, q, v, dt, maxit, gtol, xtol, info[b])
    pbad2_finish(m, w, pw, b, q, dt, qn, vn)
    energy_state(m, w, b, qn[b], vn[b], e[b])


@kernel(parallel=True)
def pbad2_batch(m, pm, c, w, wf, pw, q, v, dt, maxit, gtol, xtol, method, exact_h, qn, vn, e, info):
    """One PBAD2 step per trajectory."""
    for i in prange(q.shape[0]):
        b = np.int64(i)
        pbad2_state(m, pm, c, w, wf, pw, b, q, v, dt, maxit, gtol, xtol, method, exact_h, qn, vn, e, info)


@kernel(parallel=True)
def pbad2_eval_batch(m, pm, c, w, pw, q, v, qeval, dt, want_h, exact_h, E, g, H):
    """Energy, gradient and Hessian of Eq. 5 at ``qeval`` for the step from (q, v) (tests, tools)."""
    for i in prange(q.shape[0]):
        b = np.int64(i)
        pbad2_eval_state(m, pm, c, w, pw, b, q, v, qeval, dt, want_h, exact_h, E, g, H)


@kernel
def pbad2_eval_state(m, pm, c, w, pw, b, q, v, qeval, dt, want_h, exact_h, E, g, H):
    pbad2_prepare(m, w, pw, b, q, v, dt)
    E[b] = pbad2_eval(m, pm, c, w, pw, b, qeval[b], q[b], v[b], dt, True, want_h, exact_h, g[b], H[b])


# ---------------------------------------------------------------------------------------------
# orders 3, 4: collocation residuals (Eq. 6) and their least squares (Eq. 7)

def collocation_nodes(K: int) -> np.ndarray:
    """Node times in units of dt relative to t_k: previous interior node, 0, alpha_1..alpha_{K-1}=1."""
    if K < 3:
        raise InputError(f"collocation order must be >= 3, got {K}")
    roots = np.polynomial.legendre.legroots([0] * (K - 2) + [1])  # L_{K-2}
    alphas = np.sort((roots + 1.0) / 2.0)
    return np.concatenate([[alphas[-1] - 1.0, 0.0], alphas, [1.0]])


def lagrange_derivatives(tau: np.ndarray):
    """C1[u, j] = L_j'(tau_u), C2[u, j] = L_j''(tau_u) for the Lagrange basis on nodes ``tau``."""
    n = len(tau)
    C1 = np.zeros((n, n))
    C2 = np.zeros((n, n))
    for j in range(n):
        y = np.zeros(n)
        y[j] = 1.0
        p = np.polynomial.polynomial.Polynomial.fit(tau, y, n - 1, domain=[-1, 1], window=[-1, 1])
        d1, d2 = p.deriv(1), p.deriv(2)
        C1[:, j] = d1(tau)
        C2[:, j] = d2(tau)
    return C1, C2


def linear_spectral_radius(K: int, wdt: float) -> float:
    """Spectral radius of one PBAD step on x'' = -w^2 x at w dt = ``wdt`` (a mode's energy is
    multiplied by its square per step): K = 2 is Eq. 4, (x_{k+1} - 2 x_k + x_{k-1}) / dt^2 =
    -w^2 x_{k+1}; K >= 3 is Eq. 6 at the unknown nodes, the map (previous node, x_k) -> (next
    step's previous node, x_{k+1})."""
    if K == 2:
        step = np.array([[0.0, 1.0], [-1.0, 2.0]]) / np.array([[1.0], [1.0 + wdt ** 2]])
        return float(max(abs(np.linalg.eigvals(step))))
    _, C2 = lagrange_derivatives(collocation_nodes(K))
    A = C2[2:, 2:] + wdt ** 2 * np.eye(K - 1)  # sum_j C2[u, j] x_j + (w dt)^2 x_u = 0 at u >= 2
    T = np.linalg.solve(A, -C2[2:, :2])
    return float(max(abs(np.linalg.eigvals(T[-2:]))))


@kernel
def colloc_residual(m, pm, c, w, pw, b, nodes, C1, C2, dt, want_j, r, J):
    """Stacked residuals of Eq. 6 at the unknown nodes (rows nodes[2:]) and their Jacobian.

    Node configurations are in ``nodes`` (K+1, nq); the poses of the two known nodes must already
    be in pw.T[b, 0:2].  r[u*nv + a] is the generalized force residual of DOF a at node u + 2."""
    nn = nodes.shape[0]
    nu = nn - 2
    nv = m.nv
    inv2 = 1.0 / (dt * dt)
    A = pw.A[b]
    G = pw.G[b]
    bt = b if c.tau.shape[0] > 1 else 0
    bp = b if c.kp.shape[0] > 1 else 0
    bd = b if c.kd.shape[0] > 1 else 0
    bq = b if c.q_ref.shape[0] > 1 else 0
    bv = b if c.v_ref.shape[0] > 1 else 0
    for u in range(2, nn):
        fk_state(m, w, b, nodes[u])
        poses_from_work(m, w, b, pw.T[b, u])
        world_twists(m, pw.T[b, u], pw.xi[b, u - 2])
    if want_j:
        for a in range(nu * nv):
            for cc in range(nu * nv):
                J[a, cc] = 0.0
    for u in range(2, nn):
        T = pw.T[b, u]
        xi = pw.xi[b, u - 2]
        ru = r[(u - 2) * nv:(u - 1) * nv]
        for i in range(m.nb):
            for rr in range(3):
                for cc in range(4):
                    s = 0.0
                    for j in range(nn):
                        s += C2[u, j] * pw.T[b, j, i, rr, cc]
                    A[i, rr, cc] = s
        inertial_gravity_terms(m, pm, T, A, inv2, True, G)
        adjoint_gradient(m, T, G, xi, pw.W[b], ru)
        # joint-space forces at node u: velocity and acceleration from the polynomial (tangent at q_u)
        vel = pw.v1[b]
        acc = pw.v2[b]
        tmp = pw.v3[b]
        for a in range(nv):
            vel[a] = 0.0
            acc[a] = 0.0
        for j in range(nn):
            if j != u:
                difference_config(m, nodes[u], nodes[j], tmp, w.Rj[b])
                for a in range(nv):
                    vel[a] += C1[u, j] * tmp[a] / dt
                    acc[a] += C2[u, j] * tmp[a] * inv2
        for a in range(nv):
            kd = c.kd[bd, a] if (c.mode == PD or c.mode == SPD) else 0.0
            ru[a] += -c.tau[bt, a] + (m.damping[a] + kd) * vel[a] - kd * c.v_ref[bv, a] + m.armature[a] * acc[a]
        if c.mode == PD or c.mode == SPD:
            difference_config(m, c.q_ref[bq], nodes[u], tmp, w.Rj[b])
            for a in range(nv):
                ru[a] += c.kp[bp, a] * tmp[a]
        if want_j:
            r0 = (u - 2) * nv
            # diagonal block: Algorithm 2 (second derivatives, W from this node) + GN with weight C2[u,u]
            hessian_second_order(m, xi, pw.W[b], pw.H[b], False)
            for a in range(nv):
                for cc in range(nv):
                    J[r0 + a, r0 + cc] += pw.H[b, a, cc]
            for v2 in range(2, nn):
                c0 = (v2 - 2) * nv
                composite_moments(m, pm, T, pw.T[b, v2], C2[u, v2] * inv2, pw.C[b])
                gn_block(m, xi, pw.xi[b, v2 - 2], pw.C[b], J, r0, c0, True)
                for a in range(nv):
                    kd = c.kd[bd, a] if (c.mode == PD or c.mode == SPD) else 0.0
                    J[r0 + a, c0 + a] += (m.damping[a] + kd) * C1[u, v2] / dt + m.armature[a] * C2[u, v2] * inv2
                    if v2 == u and (c.mode == PD or c.mode == SPD):
                        J[r0 + a, c0 + a] += c.kp[bp, a]


@kernel
def colloc_lm(m, pm, c, w, pw, b, dt, C1, C2, maxit, gtol, xtol, info):
    """LM on Eq. 7 (1/2 sum ||r_u||^2) over all unknown nodes at once."""
    nodes = pw.qn[b]
    trial = pw.qt[b]
    nn = nodes.shape[0]
    nv = m.nv
    n = (nn - 2) * nv
    r = pw.r[b]
    J = pw.J[b]
    g = pw.g[b]
    H = pw.H[b]
    dx = pw.dx[b]
    colloc_residual(m, pm, c, w, pw, b, nodes, C1, C2, dt, True, r, J)
    E = 0.5 * dot(r, r, n)
    lam = 1e-6
    it = 0
    conv = False
    rn = inf_norm(r, n)
    for k in range(2):
        for a in range(m.nq):
            trial[k, a] = nodes[k, a]
    E_ref = E
    while it < maxit:
        if rn < gtol:
            conv = True
            break
        if it > 0 and it % 10 == 0:  # stalled at a local minimum of Eq. 7 that is not a root of Eq. 6
            if E > 0.5 * E_ref:
                break
            E_ref = E
        it += 1
        accepted = False
        small = False
        # square system: try the Newton step J dx = -r first (LU; no squared conditioning)
        M2 = pw.M2[b]
        for a in range(n):
            dx[a] = -r[a]
            for cc in range(n):
                M2[a, cc] = J[a, cc]
        if lu_solve_inplace(M2, dx, n):
            for u in range(2, nn):
                integrate_config(m, nodes[u], dx[(u - 2) * nv:(u - 1) * nv], trial[u], w.Rj[b])
            colloc_residual(m, pm, c, w, pw, b, trial, C1, C2, dt, False, pw.rt[b], J)
            Et = 0.5 * dot(pw.rt[b], pw.rt[b], n)
            if Et <= E:
                accepted = True
            elif inf_norm(dx, n) < xtol:  # Newton step below xtol: at the root, r is rounding noise
                conv = True
                break
        if not accepted:  # normal equations J^T J, J^T r (O(n^3): only when the Newton step fails)
            for a in range(n):
                s = 0.0
                for k in range(n):
                    s += J[k, a] * r[k]
                g[a] = s
                for cc in range(a, n):
                    s = 0.0
                    for k in range(n):
                        s += J[k, a] * J[k, cc]
                    H[a, cc] = s
                    H[cc, a] = s
        for _tries in range(0 if accepted else 30):
            if lm_solve(H, g, lam, pw.M2[b], pw.L[b], dx, n):
                for u in range(2, nn):
                    integrate_config(m, nodes[u], dx[(u - 2) * nv:(u - 1) * nv], trial[u], w.Rj[b])
                colloc_residual(m, pm, c, w, pw, b, trial, C1, C2, dt, False, pw.rt[b], J)
                Et = 0.5 * dot(pw.rt[b], pw.rt[b], n)
                if Et <= E:
                    accepted = True
                    lam = lm_accept(lam)
                    break
                if inf_norm(dx, n) < xtol:
                    small = True
                    break
            lam = lm_reject(lam)
        if not accepted:
            conv = small and rn < 1e3 * gtol
            break
        for u in range(2, nn):
            for a in range(m.nq):
                nodes[u, a] = trial[u, a]
        step = inf_norm(dx, n)
        colloc_residual(m, pm, c, w, pw, b, nodes, C1, C2, dt, True, r, J)
        E = 0.5 * dot(r, r, n)
        rn = inf_norm(r, n)
        if step < xtol:
            conv = True
            break
    if rn < gtol:
        conv = True
    info[0] = it
    info[1] = rn
    info[2] = 1.0 if conv else 0.0
    info[3] = E


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
def colloc_state(m, pm, c, w, pw, b, q, v, qprev, qguess, guess, dt, tau, C1, C2, maxit, gtol, xtol, maxrot, qn, vn,
                 qlast, e, info):
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
            s = tau[u] * dt
            for j in range(m.nv):
                d[j] = s * v[b, j] + s * s * cq[j]
            integrate_config(m, q[b], d, pw.qn[b, u], w.Rj[b])
    colloc_lm(m, pm, c, w, pw, b, dt, C1, C2, maxit, gtol, xtol, info[b])
    rot = colloc_max_rotation(m, w, pw, b, nn)
    info[b, 4] = rot
    if not (rot <= maxrot):  # aliased root (or NaN): rejected like a non-converged step
        info[b, 2] = 0.0
    last = nn - 1
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
    energy_state(m, w, b, qn[b], vn[b], e[b])


@kernel(parallel=True)
def colloc_batch(m, pm, c, w, pw, q, v, qprev, qguess, guess, dt, tau, C1, C2, maxit, gtol, xtol, maxrot, qn, vn,
                 qlast, e, info):
    for i in prange(q.shape[0]):
        b = np.int64(i)
        colloc_state(m, pm, c, w, pw, b, q, v, qprev, qguess, guess, dt, tau, C1, C2, maxit, gtol, xtol, maxrot, qn,
                     vn, qlast, e, info)


@kernel
def colloc_eval_state(m, pm, c, w, pw, b, nodes, C1, C2, dt, r, J):
    for k in range(nodes.shape[1]):
        for a in range(m.nq):
            pw.qn[b, k, a] = nodes[b, k, a]
    for k in range(2):
        fk_state(m, w, b, pw.qn[b, k])
        poses_from_work(m, w, b, pw.T[b, k])
    colloc_residual(m, pm, c, w, pw, b, pw.qn[b], C1, C2, dt, True, r[b], J[b])


@kernel(parallel=True)
def colloc_eval_batch(m, pm, c, w, pw, nodes, tau, C1, C2, dt, r, J):
    """Residuals and Jacobian of Eq. 6 at given nodes (B, K+1, nq) (tests, tools)."""
    for i in prange(nodes.shape[0]):
        b = np.int64(i)
        colloc_eval_state(m, pm, c, w, pw, b, nodes, C1, C2, dt, r, J)


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


# Sample points (drag, penalty contact: Eq. 9, Sec. 6.2) are compiled only into runs that have
# some (pbsim.backends.kernel.Variants): a chain without contact skips their energy, Hessian
# and step limit.  Likewise each optimizer: a runtime switch alone would compile LBFGS and its M^-1 factor into
# every LM run (+40 % first-run compile).
PBAD2 = Variants(pbad2_batch, {
    "points": {"point_terms": unused_float, "point_hessian": unused, "contact_step_limit": unused_float},
    "lm": ("pbad2_lm",),
    "lbfgs": ("pbad2_lbfgs",),
})


# ---------------------------------------------------------------------------------------------
# integrator classes

class _PbadBase(Integrator):
    implicit = True
    order = 2
    OPTIONS = (
        Option("optimizer", "lm", "minimiser of the step objective (Levenberg-Marquardt or LBFGS)", "str",
               ("lm", "lbfgs")),
        Option("max_iterations", None, "solver iteration limit (None: 50 for lm, 500 for lbfgs)", "int"),
        Option("gtol", 1e-8, "converged when the gradient's max-norm is below this", "float"),
        Option("xtol", 1e-12, "converged when the step's max-norm is below this (rad/m)", "float"),
        Option("hessian", "exact", "LM Hessian: exact second derivatives or Gauss-Newton", "str", ("exact", "gn")),
        Option("substep", 0, "on a failed step, split it in halves up to this many levels (0: never)", "int"),
        Option("points", None, "drag/contact sample points for make_pbad_model (None: from the scene)", "dict"),
        Option("order", None, "ignored (the order is fixed by the integrator's name); kept for old callers"),
    )

    def __init__(self, model, scene=None, **options):
        super().__init__(model, scene, **options)
        o = dict(options)
        self.optimizer = o.pop("optimizer", "lm")
        if self.optimizer not in ("lm", "lbfgs"):
            raise InputError(f"pbad optimizer must be 'lm' or 'lbfgs', got {self.optimizer!r}")
        maxit = o.pop("max_iterations", None)
        self.maxit = int((50 if self.optimizer == "lm" else 500) if maxit is None else maxit)
        self.gtol = float(o.pop("gtol", 1e-8))
        self.xtol = float(o.pop("xtol", 1e-12))
        self.hessian = o.pop("hessian", "exact")
        if self.hessian not in ("exact", "gn"):
            raise InputError(f"pbad hessian must be 'exact' or 'gn', got {self.hessian!r}")
        self.substeps_on_failure = int(o.pop("substep", 0))
        pts = o.pop("points", None)  # dict for make_pbad_model (drag / contact sample points)
        if pts is None and self.scene is not None:
            pts = scene_points(model, self.scene)
        self.pm = make_pbad_model(model, **(pts or {}))
        for k in ("order",):
            o.pop(k, None)
        if o:
            raise InputError(f"unknown pbad options: {sorted(o)}")
        self._B = None

    def _work(self, B):
        if self._B != B:
            self._B = B
            self._pw = make_pbad_work(self.model, self.pm, B, self.order)
            # LBFGS keeps the factor of M(q_k) in a second dynamics workspace (the shared one is
            # overwritten by every energy evaluation); LM never reads it
            self._wf = make_work(self.model, B) if self.optimizer == "lbfgs" else None
        return work_for(self.model, B), self._pw



def scene_points(model, scene):
    """PBAD's penalty contact (paper 000 Eq. 9) from a :class:`pbsim.Scene`: the scene's contact
    points (sphere points keep their radius) against its ground plane.  Eq. 9's energy
    ``D1 d^2`` is the spring energy ``k d^2 / 2`` of the explicit integrators' penalty model, so
    ``D1 = k / 2`` with the scene's per-point stiffness ``k``; ``D2`` (tangential damping of
    Eq. 9) is taken as ``mu k / (2 v_ref)`` with ``v_ref = 0.1`` m/s, i.e. the friction of a
    point sliding at 0.1 m/s matches Coulomb friction at the same depth.  Only planes are
    supported (PBAD's depth has no terrain grid yet); None when the scene has no contact."""
    from pbsim.contact.environment import Plane

    pts = scene.contact_points()
    planes = [e for e in scene.all_environment() if isinstance(e, Plane)]
    if not len(pts) or not planes:
        if len(pts) and scene.all_environment():
            raise InputError("pbad supports ground planes only (no terrain/static shapes yet); "
                             "use euler/rk4 for terrain")
        return None
    if len(scene.all_environment()) > 1:
        raise InputError("pbad supports a single ground plane (no terrain/static shapes yet)")
    plane = planes[0]
    k, _ = scene.point_parameters(model, pts)
    k = float(np.mean(k)) if len(k) else 0.0
    return dict(points_body=pts.body, points_local=pts.local, points_radius=pts.radius, contact=True,
                plane_normal=np.asarray(plane.normal, float), plane_offset=float(plane.offset),
                D1=0.5 * k, D2=scene.mu * k / (2 * 0.1))


@register("pbad", doc="PBAD order 2 (paper 000 Eq. 5): implicit position-based step, LM/LBFGS, stable at large dt")
class Pbad2(_PbadBase):
    """PBAD, second-order collocation (Eq. 5), Levenberg-Marquardt or LBFGS."""

    name = "pbad"

    def _run(self, state, control, dt):
        B = state.batch
        w, pw = self._work(B)
        kc = control.kernel_arrays(self.model, B)
        qn = np.empty_like(state.q)
        vn = np.empty_like(state.v)
        e = np.empty((B, 2))
        info = np.zeros((B, 4))
        lm = self.optimizer == "lm"
        run = PBAD2(points=self.pm.npts > 0, lm=lm, lbfgs=not lm)
        run(self.model.k, self.pm, kc, w, w if self._wf is None else self._wf, pw, state.q, state.v, dt, self.maxit,
            self.gtol, self.xtol, 0 if lm else 1, self.hessian == "exact", qn, vn, e, info)
        return qn, vn, e, info

    def _step(self, state, control, dt):
        qn, vn, e, info = self._run(state, control, dt)
        conv = info[:, 2] > 0.5
        if self.substeps_on_failure and not conv.all():
            bad = ~conv
            sub = State(state.q[bad].copy(), state.v[bad].copy(), state.t)
            ns = 2 ** self.substeps_on_failure
            its = info[bad, 0].copy()
            ok = np.ones(bad.sum(), bool)
            for _ in range(ns):
                q2, v2, e2, i2 = self._run(sub, _sub_control(control, bad), dt / ns)
                sub = State(q2, v2, sub.t)
                its += i2[:, 0]
                ok &= i2[:, 2] > 0.5
            qn[bad], vn[bad], e[bad] = q2, v2, e2
            info[bad, 0], info[bad, 1], info[bad, 2] = its, i2[:, 1], ok
            conv = info[:, 2] > 0.5
        nan = ~(np.isfinite(qn).all(axis=1) & np.isfinite(vn).all(axis=1))
        new = State(qn, vn, state.t + dt, q_prev=state.q.copy())
        return new, Diagnostics(energy=e.sum(axis=1), nan=nan, iterations=info[:, 0].astype(int),
                                residual=info[:, 1], converged=conv & ~nan, extra={"objective": info[:, 3]})

    # tools for tests and scripts -------------------------------------------------------------
    def objective(self, q, v, qeval, dt, control=None, exact=True, hessian=True):
        """(E, gradient, Hessian) of Eq. 5 at ``qeval`` for the step from (q, v); batched arrays."""
        from pbsim.control import Control

        q, v, qeval = (np.ascontiguousarray(np.atleast_2d(a), float) for a in (q, v, qeval))
        B = q.shape[0]
        w, pw = self._work(B)
        kc = (control or Control()).kernel_arrays(self.model, B)
        E = np.zeros(B)
        g = np.zeros((B, self.model.nv))
        H = np.zeros((B, self.model.nv, self.model.nv))
        pbad2_eval_batch(self.model.k, self.pm, kc, w, pw, q, v, qeval, float(dt), bool(hessian), bool(exact), E, g, H)
        return E, g, H


def _passive(control):
    """No actuation: torque mode with no or all-zero torques (gravity, damping and armature only)."""
    return control.mode == "torque" and (control.tau is None or not np.any(control.tau))


def _sub_control(control, mask):
    """The control rows of the trajectories in ``mask`` (batch-1 controls broadcast)."""
    from dataclasses import replace

    def pick(x):
        a = np.asarray(x) if x is not None else None
        if a is not None and a.ndim == 2 and a.shape[0] == mask.shape[0]:
            return a[mask]
        return x

    return replace(control, tau=pick(control.tau), kp=pick(control.kp), kd=pick(control.kd),
                   q_ref=pick(control.q_ref), v_ref=pick(control.v_ref))


class _PbadColloc(_PbadBase):
    """PBAD with Legendre collocation of order K (Eq. 6-7).

    Options besides the order-2 ones: ``init`` (initial guess of the nodes: "velocity", q_k (+)
    s v_k; "extrapolate", the quadratic through the previous node with slope v_k (fewer LM
    iterations at small dt, worse roots at large dt); "pbad2", on the way to the PBAD2 step;
    "auto", default: velocity, retried from pbad2), ``max_rotation`` (rad, default 0.5: a root of
    Eq. 6 in which a joint or a body turns by more than this between two consecutive nodes is
    rejected: aliased for >= pi, badly resolved by the Cartesian polynomial above ~0.5),
    ``fallback`` for a step with no acceptable
    root ("pbad2", default: take the order-2 step of Eq. 5 instead, never split: as stable and
    cheap as ``pbad`` at large dt, dissipative on the fallen-back steps; "substep": split it in
    halves, recursively, up to ``substep`` levels, default 6; giving ``substep`` alone selects
    it; the rebuilt nodes of split steps can add energy), ``energy_guard`` (None, default, or
    g >= 0: with no actuation, a root that raises the total energy by more than g (KE_k +
    KE_k+1) is rejected too; g = 0 makes a passive run never gain energy, at the price of many
    order-2 steps), ``max_iterations`` (LM, default
    200), ``xtol`` (Newton step of Eq. 6 counted as converged, default 1e-10).  Diagnostics.extra:
    ``rotation`` (largest rotation between nodes of the accepted solution), ``substeps`` (number
    of sub-steps the step was split into, 1 = none), ``rejected`` (the full step was rejected) and
    ``fallback`` (the step is the order-2 fallback).
    """

    OPTIONS = tuple(
        replace(o, **{"optimizer": dict(choices=("lm",), doc="minimiser of the step objective (LM only here)"),
                      "max_iterations": dict(default=200, doc="LM iteration limit"),
                      "xtol": dict(default=1e-10, doc="converged when the Newton step of Eq. 6 is below this (rad)"),
                      "substep": dict(default=None, doc="levels of halving for fallback='substep' (None: 6)")
                      }.get(o.name, {}))
        for o in _PbadBase.OPTIONS) + (
        Option("init", "auto", "initial guess of the nodes", "str", ("auto", "extrapolate", "pbad2", "velocity")),
        Option("max_rotation", 0.5, "reject roots turning a joint/body by more than this between nodes (rad)",
               "float"),
        Option("fallback", None, "step with no acceptable root: 'pbad2' or 'substep' (None: substep if "
               "substep is given, else pbad2)", "str", ("pbad2", "substep"), nullable=True),
        Option("energy_guard", None, "unactuated: reject roots raising the energy by more than g (KE_k + KE_k+1) "
               "(None: off)", "float"),
    )

    def __init__(self, model, scene=None, **options):
        o = dict(options)
        self.init = o.pop("init", "auto")
        if self.init not in ("auto", *_GUESS):
            raise InputError(f"pbad{self.order} init must be 'auto', 'extrapolate', 'pbad2' or 'velocity', "
                             f"got {self.init!r}")
        self.max_rotation = float(o.pop("max_rotation", 0.5))
        if not self.max_rotation > 0:
            raise InputError(f"pbad{self.order} max_rotation must be > 0 (rad), got {self.max_rotation!r}")
        # default: the order-2 step (bounded cost, never splits); asking for `substep` levels
        # without a fallback means sub-stepping
        levels = o.pop("substep", None)
        self.fallback = o.pop("fallback", None)
        if self.fallback is None:
            self.fallback = "substep" if levels is not None else "pbad2"
        levels = 6 if levels is None else levels
        guard = o.pop("energy_guard", None)
        self.energy_guard = None if guard is None else float(guard)
        if self.energy_guard is not None and not self.energy_guard >= 0:
            raise InputError(f"pbad{self.order} energy_guard must be >= 0 or None, got {guard!r}")
        if self.fallback not in ("substep", "pbad2"):
            raise InputError(f"pbad{self.order} fallback must be 'substep' or 'pbad2', got {self.fallback!r}")
        if o.get("max_iterations") is None:
            o["max_iterations"] = 200
        # converged when the Newton step of Eq. 6 is below xtol (rad): the residual's rounding floor
        # grows with N and 1/dt^2 (~1e-7 N m at 100 links, dt = 0.0025), above any fixed gtol
        o.setdefault("xtol", 1e-10)
        super().__init__(model, scene, **o)
        self.substeps_on_failure = int(levels)
        self._p2 = Pbad2(model, scene, **o) if self.init in ("auto", "pbad2") or self.fallback == "pbad2" else None
        if self.optimizer != "lm":
            raise InputError("high-order PBAD supports optimizer='lm' only")
        if self.pm.npts:
            raise InputError("high-order PBAD does not support drag/contact points yet; use 'pbad'")
        self.tau = collocation_nodes(self.order)
        self.C1, self.C2 = lagrange_derivatives(self.tau)
        self._prev_ref = None  # (q_prev array this integrator produced, dt)

    def _prev_node(self, state, dt, anchor=None):
        """q at t_k + tau_0 dt: State.q_prev when it is this scheme's node for this dt (the array
        object returned by the previous step), else rebuilt from (q, v), ABA and, when given, a
        known configuration ``anchor = (q_a, s_a)`` at time offset s_a < 0 (see :meth:`_node_at`)."""
        ref = self._prev_ref
        if state.q_prev is not None and ref is not None and state.q_prev is ref[0] and ref[1] == float(dt):
            return state.q_prev
        return self._node_at(state.q, state.v, self.tau[0] * dt, anchor)

    def _node_at(self, q, v, s, anchor=None):
        """q(t_k + s) from q_k (+) (s v + s^2/2 a + s^3 c) with a = ABA(q, v, 0) (no control) and the
        cubic coefficient c fitted to the anchor (q_a at offset s_a) when given, else c = 0."""
        from pbsim.dynamics.api import aba, difference, integrate

        out = np.full_like(q, np.nan)
        ok = np.isfinite(q).all(axis=1) & np.isfinite(v).all(axis=1)
        if anchor is not None:
            ok &= np.isfinite(anchor[0]).all(axis=1)
        if not ok.any():
            return out
        q, v = q[ok], v[ok]
        a0 = aba(self.model, q, v, np.zeros_like(v))
        d = s * v + 0.5 * s * s * a0
        if anchor is not None:
            qa, sa = anchor
            c = (difference(self.model, q, qa[ok]) - sa * v - 0.5 * sa * sa * a0) / sa ** 3
            d = d + s ** 3 * c
        fin = np.isfinite(d).all(axis=1)  # ABA can overflow on a runaway state
        good = np.flatnonzero(ok)[fin]
        if len(good):
            out[good] = integrate(self.model, q[fin], d[fin])
        return np.ascontiguousarray(out)

    def _run(self, state, control, dt, init, qprev):
        B = state.batch
        w, pw = self._work(B)
        kc = control.kernel_arrays(self.model, B)
        qn = np.empty_like(state.q)
        vn = np.empty_like(state.v)
        ql = np.empty_like(state.q)
        e = np.empty((B, 2))
        info = np.zeros((B, 5))
        p2 = self._p2._run(state, control, dt) if init == "pbad2" else None
        qg = p2[0] if p2 is not None else state.q
        colloc_batch(self.model.k, self.pm, kc, w, pw, state.q, state.v, qprev, qg, _GUESS[init], dt, self.tau,
                     self.C1, self.C2, self.maxit, self.gtol, self.xtol, self.max_rotation, qn, vn, ql, e, info)
        return State(qn, vn, state.t + dt, q_prev=ql), e, info, p2

    def _step(self, state, control, dt, level=0, anchor=None):
        qprev = self._prev_node(state, dt, anchor)
        new, e, info, p2 = self._run(state, control, dt, "velocity" if self.init == "auto" else self.init, qprev)
        conv = info[:, 2] > 0.5
        if self.init == "auto" and not conv.all():  # retry from a PBAD2 step (right basin at large dt)
            n2, e2, i2, p2 = self._run(state, control, dt, "pbad2", qprev)
            fix = ~conv & (i2[:, 2] > 0.5)
            i2[:, 0] += info[:, 0]
            if fix.any():
                new.q[fix], new.v[fix], new.q_prev[fix], e[fix] = n2.q[fix], n2.v[fix], n2.q_prev[fix], e2[fix]
                info[fix] = i2[fix]
                conv = info[:, 2] > 0.5
        if self.energy_guard is not None and _passive(control):
            # a passive system cannot gain energy: a root that does (pbad4 is not A-stable; pbad3
            # ahead of a whip) is rejected like a non-converged one
            from pbsim.dynamics.api import energy

            ek = energy(self.model, state.q, state.v)
            lim = self.energy_guard * (ek[:, 0] + e[:, 0]) + 1e-12 * (1.0 + np.abs(ek.sum(axis=1)))
            gained = conv & (e.sum(axis=1) - ek.sum(axis=1) > lim)
            info[gained, 2] = 0.0
            conv = conv & ~gained
        rejected = ~conv
        substeps = np.ones(state.batch, int)
        fell_back = np.zeros(state.batch, bool)
        if self.fallback == "pbad2" and not conv.all():
            # no acceptable root of Eq. 6: take the order-2 step (Eq. 5, energy-dissipating) instead
            # and rebuild this dt's previous node from it (cubic through q_{k+1}, v_{k+1}, a and q_k)
            bad = ~conv
            if p2 is None:
                p2 = self._p2._run(state, control, dt)
            q2, v2, e2, i2 = p2
            new.q[bad], new.v[bad], e[bad] = q2[bad], v2[bad], e2[bad]
            new.q_prev[bad] = self._node_at(q2[bad], v2[bad], self.tau[0] * dt, (state.q[bad], -dt))
            info[bad, 0] += i2[bad, 0]
            info[bad, 1], info[bad, 2], info[bad, 4] = i2[bad, 1], i2[bad, 2], np.nan
            fell_back = bad
            conv = info[:, 2] > 0.5
        if level < self.substeps_on_failure and not conv.all() and self.fallback == "substep":
            # no acceptable root of Eq. 6 (not converged, or aliased: rotation between nodes above
            # max_rotation): redo the step as two half steps, recursively
            bad = ~conv
            sub = State(state.q[bad].copy(), state.v[bad].copy(), state.t)
            ctl = _sub_control(control, bad)
            its = info[bad, 0].copy()
            ok = np.ones(bad.sum(), bool)
            rot = np.zeros(bad.sum())
            ns = np.zeros(bad.sum(), int)
            anc = (qprev[bad], self.tau[0] * dt)  # the previous node of the full step, for the first half
            for _ in range(2):
                mid = sub.q
                sub, d = self._step(sub, ctl, dt / 2, level + 1, anc)
                anc = (mid, -dt / 2)
                its += d.iterations
                ok &= d.converged
                rot = np.maximum(rot, d.extra["rotation"])
                ns += d.extra["substeps"]
            # this dt's previous node for the next step: cubic through (q, v, a) at the end, fitted
            # to the mid-step state (exact for pbad3, whose node is at -dt/2)
            ql = new.q_prev
            ql[bad] = self._node_at(sub.q, sub.v, self.tau[0] * dt, (mid, -dt / 2))
            new.q[bad], new.v[bad] = sub.q, sub.v
            e[bad, 0], e[bad, 1] = d.energy, 0.0
            info[bad, 0], info[bad, 1], info[bad, 2], info[bad, 4] = its, d.residual, ok, rot
            substeps[bad] = ns
            conv = info[:, 2] > 0.5
        self._prev_ref = (new.q_prev, float(dt))
        nan = ~(np.isfinite(new.q).all(axis=1) & np.isfinite(new.v).all(axis=1))
        return new, Diagnostics(energy=e.sum(axis=1), nan=nan, iterations=info[:, 0].astype(int),
                                residual=info[:, 1], converged=conv & ~nan,
                                extra={"objective": info[:, 3], "rotation": info[:, 4], "substeps": substeps,
                                       "rejected": rejected, "fallback": fell_back})

    def node_rotation(self, nodes):
        """Largest rotation [rad] between consecutive nodes (B, K+1, nq), as the aliasing check sees it."""
        nodes = np.ascontiguousarray(nodes, float)
        w, pw = self._work(nodes.shape[0])
        rot = np.zeros(nodes.shape[0])
        colloc_rotation_batch(self.model.k, w, pw, nodes, rot)
        return rot

    def residual(self, nodes, dt, control=None):
        """(r, J) of Eq. 6 at nodes (B, K+1, nq) (tests)."""
        from pbsim.control import Control

        nodes = np.ascontiguousarray(nodes, float)
        B = nodes.shape[0]
        w, pw = self._work(B)
        kc = (control or Control()).kernel_arrays(self.model, B)
        n = (self.order - 1) * self.model.nv
        r = np.zeros((B, n))
        J = np.zeros((B, n, n))
        colloc_eval_batch(self.model.k, self.pm, kc, w, pw, nodes, self.tau, self.C1, self.C2, float(dt), r, J)
        return r, J


@register("pbad3", doc="PBAD order 3: Legendre collocation (paper 000 Eq. 6-7), LM over all nodes")
class Pbad3(_PbadColloc):
    """PBAD, third-order position-based collocation."""

    name = "pbad3"
    order = 3


@register("pbad4", doc="PBAD order 4: Legendre collocation (paper 000 Eq. 6-7), LM over all nodes")
class Pbad4(_PbadColloc):
    """PBAD, fourth-order position-based collocation."""

    name = "pbad4"
    order = 4
