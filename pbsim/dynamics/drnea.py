"""Discrete Recursive Newton-Euler Algorithm (paper 004, Alg. 2) and its exact derivative (Alg. 4).

DRNEA evaluates the forced discrete Euler-Lagrange (DEL) equation of a tree of rigid bodies in O(n),
for the trapezoidal discrete Lagrangian (Eq. 9) ``Ld(q_k, q_k+1) = dt/2 sum_i V_i^T G_i V_i
- dt/2 (P(q_k) + P(q_k+1))`` with the body's average velocity ``V_i = log(dT_i) / dt`` (Eq. 10, 19):

    f(q_k+1) = -(D2 Ld(q_k-1, q_k) + D1 Ld(q_k, q_k+1)) - Q_k        (Eq. 3, 17, 22)

per body (Eq. 21): ``F_i = mu_i^k - Ad*_{exp(dt V_i^k-1)} mu_i^k-1 + sum_c Ad*_{T_ic^-1} F_c - F_i^ext``
with the discrete momentum ``mu_i^k = dexp^-1_{dt V}^T G_i V_i^k`` (Eq. 21b), and ``f_i = S_i^T F_i - Q_i``.
Gravity is the external impulse ``F^ext = dt * G_i a_g`` (from the potential's trapezoid).

Implementation split (what is constant within one time step is computed once):
``drnea_setup`` stores the poses at k and ``Fc_i = -Ad*(...) mu^k-1 - F^ext`` (or, with no previous
configuration, only half the gravity impulse: the position-momentum form, see variational.py);
``drnea_eval`` is the per-iteration O(n) forward/backward pass for a guess of q_k+1.
Joint-space terms (armature, damping, torques, SPD) are added by the caller: see :func:`drnea`.

Variations are right (body-frame) perturbations ``q (+) dv`` of the Model's integrate, so ball and
free joints use the same tangent coordinates as everywhere else in pbsim.
"""
import math
from collections import namedtuple

import numpy as np
from numba import prange

from pbsim.jit import kernel
from pbsim.dynamics.joints import body_in_parent, difference_config
from pbsim.dynamics.gravcomp import weight_wrench
from pbsim.dynamics.se3 import adT_apply, dexpinv_apply, dexpinv_coeffs, dexpinv_T_apply, dexpinv_T_pair, se3_log
from pbsim.dynamics.spatial import force_to_parent_add, mat6_vec, motion_to_child

DrneaWork = namedtuple("DrneaWork", "R0 p0 R1 p1 dR dp Rw xi mu F Fc K eta sv Rj mu2")


def make_drnea_work(model, batch: int) -> DrneaWork:
    nb = max(model.nb, 1)
    B = max(int(batch), 1)
    z = np.zeros
    return DrneaWork(z((B, nb, 3, 3)), z((B, nb, 3)), z((B, nb, 3, 3)), z((B, nb, 3)),
                     z((B, nb, 3, 3)), z((B, nb, 3)), z((B, nb, 3, 3)), z((B, nb, 6)), z((B, nb, 6)),
                     z((B, nb, 6)), z((B, nb, 6)), z((B, nb, 6, 6)), z((B, nb, 6)), z((B, 16, 6)),
                     z((B, 3, 3)), z((B, nb, 6)))


@kernel(inline=True)
def _compose_delta(R0, p0, R1, p1, Ra, pa, has_parent, dR, dp):
    """``dT_i = (T^k_{p,i})^-1 dT_p T^k+1_{p,i}`` (Eq. 19); (Ra, pa) = dT_parent."""
    if has_parent:  # M = dT_p T^k+1_{p,i}
        m00 = Ra[0, 0] * R1[0, 0] + Ra[0, 1] * R1[1, 0] + Ra[0, 2] * R1[2, 0]
        m01 = Ra[0, 0] * R1[0, 1] + Ra[0, 1] * R1[1, 1] + Ra[0, 2] * R1[2, 1]
        m02 = Ra[0, 0] * R1[0, 2] + Ra[0, 1] * R1[1, 2] + Ra[0, 2] * R1[2, 2]
        m10 = Ra[1, 0] * R1[0, 0] + Ra[1, 1] * R1[1, 0] + Ra[1, 2] * R1[2, 0]
        m11 = Ra[1, 0] * R1[0, 1] + Ra[1, 1] * R1[1, 1] + Ra[1, 2] * R1[2, 1]
        m12 = Ra[1, 0] * R1[0, 2] + Ra[1, 1] * R1[1, 2] + Ra[1, 2] * R1[2, 2]
        m20 = Ra[2, 0] * R1[0, 0] + Ra[2, 1] * R1[1, 0] + Ra[2, 2] * R1[2, 0]
        m21 = Ra[2, 0] * R1[0, 1] + Ra[2, 1] * R1[1, 1] + Ra[2, 2] * R1[2, 1]
        m22 = Ra[2, 0] * R1[0, 2] + Ra[2, 1] * R1[1, 2] + Ra[2, 2] * R1[2, 2]
        x = Ra[0, 0] * p1[0] + Ra[0, 1] * p1[1] + Ra[0, 2] * p1[2] + pa[0] - p0[0]
        y = Ra[1, 0] * p1[0] + Ra[1, 1] * p1[1] + Ra[1, 2] * p1[2] + pa[1] - p0[1]
        z = Ra[2, 0] * p1[0] + Ra[2, 1] * p1[1] + Ra[2, 2] * p1[2] + pa[2] - p0[2]
    else:
        m00, m01, m02 = R1[0, 0], R1[0, 1], R1[0, 2]
        m10, m11, m12 = R1[1, 0], R1[1, 1], R1[1, 2]
        m20, m21, m22 = R1[2, 0], R1[2, 1], R1[2, 2]
        x = p1[0] - p0[0]
        y = p1[1] - p0[1]
        z = p1[2] - p0[2]
    for r in range(3):  # dT = (T^k_{p,i})^-1 M
        a0, a1, a2 = R0[0, r], R0[1, r], R0[2, r]
        dp[r] = a0 * x + a1 * y + a2 * z
        dR[r, 0] = a0 * m00 + a1 * m10 + a2 * m20
        dR[r, 1] = a0 * m01 + a1 * m11 + a2 * m21
        dR[r, 2] = a0 * m02 + a1 * m12 + a2 * m22


@kernel(inline=True)
def world_rotation_and_gravity(m, i, R0, Rw, sv, Fc, dt, grav_scale):
    """Body i's world rotation from its parent's (bodies in topological order) and its gravity
    impulse ``Fc[i] = -grav_scale dt G a_g`` (Eq. 21a; a_g = [0; R^T g] in body coordinates;
    gravcomp's share of the weight taken out)."""
    par = m.parent[i]
    for r in range(3):
        for c in range(3):
            if par >= 0:
                Rw[i, r, c] = Rw[par, r, 0] * R0[i, 0, c] + Rw[par, r, 1] * R0[i, 1, c] + Rw[par, r, 2] * R0[i, 2, c]
            else:
                Rw[i, r, c] = R0[i, r, c]
    ax = Rw[i, 0, 0] * m.gravity[0] + Rw[i, 1, 0] * m.gravity[1] + Rw[i, 2, 0] * m.gravity[2]
    ay = Rw[i, 0, 1] * m.gravity[0] + Rw[i, 1, 1] * m.gravity[1] + Rw[i, 2, 1] * m.gravity[2]
    az = Rw[i, 0, 2] * m.gravity[0] + Rw[i, 1, 2] * m.gravity[1] + Rw[i, 2, 2] * m.gravity[2]
    weight_wrench(m, i, ax, ay, az, sv[1])  # G a_g less gravcomp's share (pbsim.dynamics.gravcomp)
    for r in range(6):
        Fc[i, r] = -grav_scale * dt * sv[1, r]


@kernel
def drnea_setup(m, dw, b, q_prev, q, dt, has_prev, grav_scale):
    """Per-step constants: poses at k (R0, p0, world Rw) and ``Fc_i = -Ad* mu^k-1 - F^ext``."""
    R0 = dw.R0[b]
    p0 = dw.p0[b]
    Rw = dw.Rw[b]
    Fc = dw.Fc[b]
    sv = dw.sv[b]
    for i in range(m.nb):
        body_in_parent(m, i, q, R0[i], p0[i], dw.Rj[b])
        world_rotation_and_gravity(m, i, R0, Rw, sv, Fc, dt, grav_scale)
        par = m.parent[i]
        if has_prev:
            body_in_parent(m, i, q_prev, dw.R1[b, i], dw.p1[b, i], dw.Rj[b])
            # dT^{k-1}_i = (T^{k-1}_{p,i})^-1 dT^{k-1}_p T^k_{p,i}
            _compose_delta(dw.R1[b, i], dw.p1[b, i], R0[i], p0[i], dw.dR[b, max(par, 0)],
                           dw.dp[b, max(par, 0)], par >= 0, dw.dR[b, i], dw.dp[b, i])
            xi = sv[2]
            se3_log(dw.dR[b, i], dw.dp[b, i], xi)
            mat6_vec(m.inertia[i], xi, sv[3])
            for r in range(6):
                sv[3, r] /= dt
            dexpinv_T_apply(xi, sv[3], 1.0, sv[4], sv[5])  # Ad*_{exp(dt V^k-1)} mu^k-1 = Jr^-T G V (Eq. 16b)
            for r in range(6):
                Fc[i, r] -= sv[5, r]


@kernel
def drnea_setup_poses(m, dw, b, R, p, dt, grav_scale):
    """:func:`drnea_setup` without a previous configuration, from the poses in parent ``R``, ``p``
    (nb, 3, 3), (nb, 3) at q_k already computed by the caller (e.g. an ABA pass at q_k)."""
    R0 = dw.R0[b]
    p0 = dw.p0[b]
    Rw = dw.Rw[b]
    Fc = dw.Fc[b]
    sv = dw.sv[b]
    for i in range(m.nb):
        for r in range(3):
            p0[i, r] = p[i, r]
            for c in range(3):
                R0[i, r, c] = R[i, r, c]
        world_rotation_and_gravity(m, i, R0, Rw, sv, Fc, dt, grav_scale)


@kernel
def drnea_eval(m, dw, b, q_next, dt, f):
    """DRNEA passes (Alg. 2) for a guess ``q_next`` of q_k+1: ``f = S^T F`` (body part, Eq. 21-22)."""
    R0 = dw.R0[b]
    p0 = dw.p0[b]
    F = dw.F[b]
    sv = dw.sv[b]
    idt = 1.0 / dt
    for i in range(m.nb):  # forward pass: displacement, average velocity, discrete momentum
        body_in_parent(m, i, q_next, dw.R1[b, i], dw.p1[b, i], dw.Rj[b])
        par = m.parent[i]
        _compose_delta(R0[i], p0[i], dw.R1[b, i], dw.p1[b, i], dw.dR[b, max(par, 0)],
                       dw.dp[b, max(par, 0)], par >= 0, dw.dR[b, i], dw.dp[b, i])
        xi = dw.xi[b, i]
        se3_log(dw.dR[b, i], dw.dp[b, i], xi)  # dt V_i (Eq. 10)
        G = m.inertia[i]
        y = sv[0]
        for r in range(6):  # G V = G xi / dt
            y[r] = (G[r, 0] * xi[0] + G[r, 1] * xi[1] + G[r, 2] * xi[2] + G[r, 3] * xi[3] + G[r, 4] * xi[4]
                    + G[r, 5] * xi[5]) * idt
        # mu = dlog^T G V (Eq. 21b); mu2 = Jr^-T G V, the same body's momentum seen from k+1 (Eq. 16b)
        dexpinv_T_pair(xi, y, dw.mu[b, i], dw.mu2[b, i])
        for r in range(6):
            F[i, r] = dw.mu[b, i, r] + dw.Fc[b, i, r]
    for i in range(m.nb - 1, -1, -1):  # backward pass: impulses (Eq. 21a), joint residual (Eq. 22)
        j0 = m.iv[i]
        for k in range(m.nvj[i]):
            s = 0.0
            for r in range(6):
                s += m.S[i, k, r] * F[i, r]
            f[j0 + k] = s
        par = m.parent[i]
        if par >= 0:
            force_to_parent_add(R0[i], p0[i], F[i], F[par])


@kernel
def drnea_momentum(m, dw, b, dt, p):
    """Discrete Legendre transform ``p_k+1 = D2 Ld(q_k, q_k+1)`` (body part) after :func:`drnea_eval`:
    ``J(q_k+1)^T (Jr^-T(dt V) G V + dt/2 G a_g(q_k+1))`` at the q_k+1 of the last :func:`drnea_eval`
    (its ``mu2``, R1, p1).  Uses dw.F and dw.Rw as scratch."""
    F = dw.F[b]
    Rw = dw.Rw[b]
    sv = dw.sv[b]
    for i in range(m.nb):
        par = m.parent[i]
        R1 = dw.R1[b, i]
        for r in range(3):
            for c in range(3):
                if par >= 0:
                    Rw[i, r, c] = Rw[par, r, 0] * R1[0, c] + Rw[par, r, 1] * R1[1, c] + Rw[par, r, 2] * R1[2, c]
                else:
                    Rw[i, r, c] = R1[r, c]
        for r in range(6):
            F[i, r] = dw.mu2[b, i, r]  # Jr^-T(dt V) G V, stored by drnea_eval
        ax = Rw[i, 0, 0] * m.gravity[0] + Rw[i, 1, 0] * m.gravity[1] + Rw[i, 2, 0] * m.gravity[2]
        ay = Rw[i, 0, 1] * m.gravity[0] + Rw[i, 1, 1] * m.gravity[1] + Rw[i, 2, 1] * m.gravity[2]
        az = Rw[i, 0, 2] * m.gravity[0] + Rw[i, 1, 2] * m.gravity[1] + Rw[i, 2, 2] * m.gravity[2]
        weight_wrench(m, i, ax, ay, az, sv[3])
        for r in range(6):
            F[i, r] += 0.5 * dt * sv[3, r]
    for i in range(m.nb - 1, -1, -1):
        j0 = m.iv[i]
        for k in range(m.nvj[i]):
            s = 0.0
            for r in range(6):
                s += m.S[i, k, r] * F[i, r]
            p[j0 + k] = s
        par = m.parent[i]
        if par >= 0:
            force_to_parent_add(dw.R1[b, i], dw.p1[b, i], F[i], F[par])


@kernel
def _local_blocks(m, dw, b, dt):
    """K_i = d mu_i / d eta_i (6x6) for a right perturbation eta of T_i^k+1 (Alg. 4 lines 5, 8):
    ``d xi = Jr^-1(xi) eta`` and the exact derivative of ``dlog^T_xi G xi / dt``."""
    sv = dw.sv[b]
    for i in range(m.nb):
        xi = dw.xi[b, i]
        G = m.inertia[i]
        th = math.sqrt(xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2])
        c2, c4, d2, d4 = dexpinv_coeffs(th)
        mat6_vec(G, xi, sv[0])  # y0
        adT_apply(xi, sv[0], sv[1])  # a1..a4
        adT_apply(xi, sv[1], sv[2])
        adT_apply(xi, sv[2], sv[3])
        adT_apply(xi, sv[3], sv[4])
        for col in range(6):
            e = sv[5]
            for r in range(6):
                e[r] = 0.0
            e[col] = 1.0
            dx = sv[6]
            dexpinv_apply(xi, e, 1.0, sv[7], dx)  # d xi = Jr^-1 eta
            dy = sv[8]
            mat6_vec(G, dx, dy)
            da = sv[9]
            t = sv[10]
            adT_apply(dx, sv[0], da)  # da1
            adT_apply(xi, dy, t)
            for r in range(6):
                da[r] += t[r]
            wd = xi[0] * dx[0] + xi[1] * dx[1] + xi[2] * dx[2]
            out = sv[11]
            for r in range(6):
                out[r] = dy[r] - 0.5 * da[r]
            # da2 = adT(dx, a1) + adT(xi, da1)
            adT_apply(dx, sv[1], t)
            adT_apply(xi, da, da)
            for r in range(6):
                da[r] += t[r]
                out[r] += d2 * wd * sv[2, r] + c2 * da[r] + d4 * wd * sv[4, r]
            for lvl in range(2):  # da3, da4
                adT_apply(dx, sv[2 + lvl], t)
                adT_apply(xi, da, da)
                for r in range(6):
                    da[r] += t[r]
            for r in range(6):
                out[r] += c4 * da[r]
                dw.K[b, i, r, col] = out[r] / dt


@kernel
def drnea_jacobian(m, dw, b, dt, Jac):
    """Exact ``d f / d q_k+1`` (right perturbations), column by column in O(n) each (Alg. 4):
    forward pass ``eta_i = Ad_{T^k+1_{p,i}^-1} eta_p + S_i e_j``, backward pass of ``K_i eta_i``
    with the transforms at k.  Needs :func:`drnea_eval` at the same q_k+1 first."""
    _local_blocks(m, dw, b, dt)
    eta = dw.eta[b]
    F = dw.F[b]
    for i in range(m.nb):
        for k in range(m.nvj[i]):
            col = m.iv[i] + k
            for l in range(m.nb):
                for r in range(6):
                    F[l, r] = 0.0
            for l in range(i, m.nb):
                par = m.parent[l]
                if l == i:
                    for r in range(6):
                        eta[l, r] = m.S[l, k, r]
                elif par >= i:
                    motion_to_child(dw.R1[b, l], dw.p1[b, l], eta[par], eta[l])
                else:
                    for r in range(6):
                        eta[l, r] = 0.0
                mat6_vec(dw.K[b, l], eta[l], F[l])
            for l in range(m.nb - 1, -1, -1):
                j0 = m.iv[l]
                for kk in range(m.nvj[l]):
                    s = 0.0
                    for r in range(6):
                        s += m.S[l, kk, r] * F[l, r]
                    Jac[j0 + kk, col] = s
                par = m.parent[l]
                if par >= 0:
                    force_to_parent_add(dw.R0[b, l], dw.p0[b, l], F[l], F[par])


@kernel(parallel=True)
def drnea_batch(m, dw, q_prev, q, q_next, dt, arm_dt, Q, f, dd):
    """Full DRNEA residual per state: body part + armature ``arm (d_k - d_k-1) / dt`` - Q."""
    for i in prange(q.shape[0]):
        b = np.int64(i)
        drnea_setup(m, dw, b, q_prev[b], q[b], dt, True, 1.0)
        drnea_eval(m, dw, b, q_next[b], dt, f[b])
        difference_config(m, q_prev[b], q[b], dd[b, 0], dw.Rj[b])
        difference_config(m, q[b], q_next[b], dd[b, 1], dw.Rj[b])
        for j in range(m.nv):
            f[b, j] += arm_dt[j] * (dd[b, 1, j] - dd[b, 0, j]) - Q[b, j]


def drnea(model, q_prev, q, q_next, dt, tau=None):
    """DEL residual impulse ``f(q_next)`` of Alg. 2 for (q_k-1, q_k, q_k+1) with joint torques ``tau``
    (impulse Q = dt * tau).  Zero when q_next is the variational step from (q_prev, q)."""
    from pbsim.dynamics.api import as_batch
    from pbsim.errors import check_dt

    dt = check_dt(dt)
    Q1, single = as_batch(q, model.nq, "q")
    B = Q1.shape[0]
    Q0, _ = as_batch(q_prev, model.nq, "q_prev", B)
    Q2, _ = as_batch(q_next, model.nq, "q_next", B)
    T, _ = as_batch(np.zeros(model.nv) if tau is None else tau, model.nv, "tau", B)
    f = np.empty((B, model.nv))
    drnea_batch(model.k, make_drnea_work(model, B), np.ascontiguousarray(Q0), Q1, np.ascontiguousarray(Q2),
                dt, model.armature / dt, np.ascontiguousarray(T * dt), f, np.empty((B, 2, model.nv)))
    return f[0] if single else f
