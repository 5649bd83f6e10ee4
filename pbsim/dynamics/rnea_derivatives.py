"""Analytic derivatives of inverse dynamics, d tau / d q and d tau / d qd, in O(n * depth).

``tau = RNEA(q, qd, qdd) = M(q) qdd + C(q, qd) qd + g(q)`` (gravity included, armature in M, no
damping), differentiated along the lines of Carpentier & Mansard 2018, *Analytical derivatives of
rigid body dynamics algorithms* (RSS; "C&M" below): every spatial quantity in world coordinates
(at the world origin), so that moving joint j moves its whole subtree as one rigid body and the
derivatives of subtree sums are a few 6-vector products.  Derived and written for pbsim's joints
and tangent convention (the equations are in the comments; no code is taken from Pinocchio).

Tangent convention.  ``d tau / d q`` is the derivative along ``q (+) dq`` of
:func:`pbsim.dynamics.joints.integrate_config`: one column per velocity coordinate (nv x nv), right
(body-frame) increments, a quaternion moved by ``R exp(dq)``, a free joint's position by
``R dq_lin``.  Pinocchio's local tangent (``pin.integrate``: SE(3) exp for the free-flyer) differs
from pbsim's R^3 x SO(3) only at second order in dq, so the two Jacobians are *the same matrix*
(tests/dynamics/test_rnea_derivatives.py checks it against ``pin.computeRNEADerivatives``).

World-frame quantities (C&M Sec. III): ``S_j`` joint j's motion subspace (6 x nv_j), ``v_i``,
``a_i`` body velocity and acceleration (``a_world = -g``), ``I_i`` body inertia, ``f_i = I_i a_i +
v_i x* I_i v_i``.  Moving joint j by ``dq`` moves its subtree by the twist ``xi = S_j dq``, so for
b in subtree(j): ``dS_b = xi x S_b``, ``dI_b = xi x* I_b - I_b xi x`` (also b = j: the joint's own
bracket term for ball/free joints) and, with ``u = xi x v_lambda(j)``,

    dv_b = xi x v_b - u                                                  (C&M Eq. 12, world form)
    da_b = xi x a_b - xi x a_lambda(j) - u x (v_b - v_lambda(j))         (C&M Eq. 13, world form)
    df_b = xi x* f_b - I_b beta + P_b u - u x* h_b,   beta = xi x a_lambda(j) - u x v_lambda(j)

with ``h_b = I_b v_b`` and ``P_b = I_b (v_b x) - (v_b x*) I_b`` (symmetric).  Summed over a
subtree these need only the composite ``Y_i = sum I_b``, ``F_i = sum f_b``, ``H_i = sum h_b``,
``P_i = sum P_b`` (one backward pass).  ``tau_i = S_i^T F_i``, and ``xi x*`` acting on ``F_i``
cancels against ``dS_i`` when i is in subtree(j), so (rows i, columns j):

    i in subtree(j):   d tau_i / dq_j  = (P_i S_i + S_i x* H_i) . u - (Y_i S_i) . beta
                       d tau_i / dqd_j = (Y_i S_i) . w - (P_i S_i + S_i x* H_i) . S_j
    i above j:         d tau_i / dq_j  = S_i . (S_j x* F_j - Y_j beta + P_j u - u x* H_j)
                       d tau_i / dqd_j = S_i . (Y_j w - P_j S_j + S_j x* H_j)

with ``w = (v_lambda(j) + v_j) x S_j`` (``dv_b/dqd_j = S_j``, ``da_b/dqd_j = w + S_j x v_b``).
"""
import weakref
from collections import namedtuple

import numpy as np
from numba import prange

from pbsim.jit import kernel
from pbsim.dynamics.crba import motion_to_world
from pbsim.dynamics.kinematics import pose_pass, world_pass
from pbsim.dynamics.spatial import force_cross_add, inertia_to_parent_add, mat6_vec, motion_cross

# Leading axis B everywhere.  R p Rw pw Rj: poses (as DynWork, so pose_pass/world_pass take it);
# S (nb, 6 cols, 6): world motion subspaces; v a: world velocity/acceleration; Y F H P: composite
# inertia, force, momentum and P (subtree sums after the backward pass); U Bt W (nb, 6 cols, 6):
# per joint column u, beta, w; loc (8, 6, 6): per-state scratch.
RneaDerivWork = namedtuple("RneaDerivWork", "R p Rw pw Rj S v a Y F H P U Bt W loc")


def make_rnea_derivatives_work(model, batch: int) -> RneaDerivWork:
    nb = max(model.nb, 1)
    B = max(int(batch), 1)
    z = np.zeros
    return RneaDerivWork(
        R=z((B, nb, 3, 3)), p=z((B, nb, 3)), Rw=z((B, nb, 3, 3)), pw=z((B, nb, 3)), Rj=z((B, 3, 3)),
        S=z((B, nb, 6, 6)), v=z((B, nb, 6)), a=z((B, nb, 6)),
        Y=z((B, nb, 6, 6)), F=z((B, nb, 6)), H=z((B, nb, 6)), P=z((B, nb, 6, 6)),
        U=z((B, nb, 6, 6)), Bt=z((B, nb, 6, 6)), W=z((B, nb, 6, 6)), loc=z((B, 8, 6, 6)),
    )


_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def rnea_derivatives_work_for(model, batch: int) -> RneaDerivWork:
    """A workspace for ``batch`` states, reused across calls on the same model."""
    per_model = _cache.setdefault(model, {})
    w = per_model.get(batch)
    if w is None:
        if len(per_model) > 4:
            per_model.clear()
        w = per_model[batch] = make_rnea_derivatives_work(model, batch)
    return w


@kernel(inline=True)
def dot6(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@kernel
def sym_cross_inertia(I, v, T, out):
    """``out = I (v x) - (v x*) I = I V + V^T I`` with ``V = v x`` (symmetric); ``T`` 6x6 scratch."""
    wx, wy, wz, lx, ly, lz = v[0], v[1], v[2], v[3], v[4], v[5]
    for r in range(6):  # T = I V, V = [[w^, 0], [l^, w^]]
        i0, i1, i2, i3, i4, i5 = I[r, 0], I[r, 1], I[r, 2], I[r, 3], I[r, 4], I[r, 5]
        T[r, 0] = i1 * wz - i2 * wy + i4 * lz - i5 * ly
        T[r, 1] = -i0 * wz + i2 * wx - i3 * lz + i5 * lx
        T[r, 2] = i0 * wy - i1 * wx + i3 * ly - i4 * lx
        T[r, 3] = i4 * wz - i5 * wy
        T[r, 4] = -i3 * wz + i5 * wx
        T[r, 5] = i3 * wy - i4 * wx
    for r in range(6):
        for c in range(r, 6):
            s = T[r, c] + T[c, r]
            out[r, c] = s
            out[c, r] = s


@kernel
def rnea_derivatives_state(m, x, b, q, v, a, dq, dv):
    """``dq = d tau / d q`` and ``dv = d tau / d qd`` (nv x nv, rows tau) at state b; ``q``, ``v``,
    ``a`` are rows; ``x`` a :class:`RneaDerivWork`.  Every entry of dq and dv is written."""
    for r in range(m.nv):
        for c in range(m.nv):
            dq[r, c] = 0.0
            dv[r, c] = 0.0
    pose_pass(m, x, b, q)
    world_pass(m, x, b)
    Rw = x.Rw[b]
    pw = x.pw[b]
    S = x.S[b]
    vw = x.v[b]
    aw = x.a[b]
    Y = x.Y[b]
    F = x.F[b]
    H = x.H[b]
    P = x.P[b]
    U = x.U[b]
    Bt = x.Bt[b]
    W = x.W[b]
    L = x.loc[b]
    t = L[6]  # six 6-vectors of scratch
    vp = t[0]
    ap = t[1]
    vj = t[2]
    for i in range(m.nb):  # forward pass, world frame
        par = m.parent[i]
        j0 = m.iv[i]
        nvi = m.nvj[i]
        for r in range(6):
            if par >= 0:
                vp[r] = vw[par, r]
                ap[r] = aw[par, r]
            else:  # the world at rest; gravity as an acceleration of the base: a_world = -g
                vp[r] = 0.0
                ap[r] = 0.0 if r < 3 else -m.gravity[r - 3]
        for k in range(nvi):
            motion_to_world(Rw[i], pw[i], m.S[i, k], S[i, k])
        for r in range(6):  # v_i = v_lambda + S qd ; a_i = a_lambda + S qdd + v_lambda x S qd
            sv = 0.0
            sa = 0.0
            for k in range(nvi):
                sv += S[i, k, r] * v[j0 + k]
                sa += S[i, k, r] * a[j0 + k]
            vj[r] = sv
            vw[i, r] = vp[r] + sv
            aw[i, r] = ap[r] + sa
        motion_cross(vp, vj, t[3])
        for r in range(6):
            aw[i, r] += t[3, r]
            t[5, r] = vp[r] + vw[i, r]
        for k in range(nvi):  # per column xi = S_i[:, k]: u, beta, w
            motion_cross(S[i, k], vp, U[i, k])  # u = xi x v_lambda
            motion_cross(S[i, k], ap, Bt[i, k])  # beta = xi x a_lambda - u x v_lambda
            motion_cross(U[i, k], vp, t[4])
            for r in range(6):
                Bt[i, k, r] -= t[4, r]
            motion_cross(t[5], S[i, k], W[i, k])  # w = (v_lambda + v_i) x xi
        for r in range(6):
            for c in range(6):
                Y[i, r, c] = 0.0
        inertia_to_parent_add(Rw[i], pw[i], m.inertia[i], L[0], Y[i])  # I_i in world coordinates
        mat6_vec(Y[i], vw[i], H[i])  # h = I v
        mat6_vec(Y[i], aw[i], F[i])  # f = I a + v x* I v
        force_cross_add(vw[i], H[i], F[i])
        sym_cross_inertia(Y[i], vw[i], L[0], P[i])  # P = I (v x) - (v x*) I
    A1 = L[1]
    A2 = L[2]
    Gq = L[3]
    Gv = L[4]
    for i in range(m.nb - 1, -1, -1):  # backward pass: Y F H P hold subtree(i)'s sums here
        j0 = m.iv[i]
        nvi = m.nvj[i]
        for k in range(nvi):
            xi = S[i, k]
            mat6_vec(Y[i], xi, A1[k])  # Y_i S_i
            mat6_vec(P[i], xi, A2[k])  # P_i S_i + S_i x* H_i
            force_cross_add(xi, H[i], A2[k])
            mat6_vec(P[i], U[i, k], Gq[k])  # dF_i/dq_i = xi x* F_i - Y_i beta + P_i u - u x* H_i
            mat6_vec(Y[i], Bt[i, k], t[3])
            for r in range(6):
                t[4, r] = 0.0
            force_cross_add(U[i, k], H[i], t[4])
            for r in range(6):
                Gq[k, r] -= t[3, r] + t[4, r]
            force_cross_add(xi, F[i], Gq[k])
            mat6_vec(Y[i], W[i, k], Gv[k])  # dF_i/dqd_i = Y_i w - P_i xi + xi x* H_i
            mat6_vec(P[i], xi, t[3])
            for r in range(6):
                Gv[k, r] -= t[3, r]
            force_cross_add(xi, H[i], Gv[k])
        for k in range(nvi):
            row = j0 + k
            c0 = j0
            for l in range(nvi):  # the diagonal block (j = i)
                dq[row, c0 + l] = dot6(A2[k], U[i, l]) - dot6(A1[k], Bt[i, l])
                dv[row, c0 + l] = dot6(A1[k], W[i, l]) - dot6(A2[k], S[i, l])
            y0, y1, y2, y3, y4, y5 = A1[k, 0], A1[k, 1], A1[k, 2], A1[k, 3], A1[k, 4], A1[k, 5]
            z0, z1, z2, z3, z4, z5 = A2[k, 0], A2[k, 1], A2[k, 2], A2[k, 3], A2[k, 4], A2[k, 5]
            g0, g1, g2, g3, g4, g5 = Gq[k, 0], Gq[k, 1], Gq[k, 2], Gq[k, 3], Gq[k, 4], Gq[k, 5]
            h0, h1, h2, h3, h4, h5 = Gv[k, 0], Gv[k, 1], Gv[k, 2], Gv[k, 3], Gv[k, 4], Gv[k, 5]
            j = m.parent[i]
            while j >= 0:  # the ancestors j of i: entries (i, j) and (j, i)
                c0 = m.iv[j]
                for l in range(m.nvj[j]):
                    u0, u1, u2, u3, u4, u5 = U[j, l, 0], U[j, l, 1], U[j, l, 2], U[j, l, 3], U[j, l, 4], U[j, l, 5]
                    b0, b1, b2, b3, b4, b5 = Bt[j, l, 0], Bt[j, l, 1], Bt[j, l, 2], Bt[j, l, 3], Bt[j, l, 4], Bt[j, l, 5]
                    w0, w1, w2, w3, w4, w5 = W[j, l, 0], W[j, l, 1], W[j, l, 2], W[j, l, 3], W[j, l, 4], W[j, l, 5]
                    s0, s1, s2, s3, s4, s5 = S[j, l, 0], S[j, l, 1], S[j, l, 2], S[j, l, 3], S[j, l, 4], S[j, l, 5]
                    dq[row, c0 + l] = (z0 * u0 + z1 * u1 + z2 * u2 + z3 * u3 + z4 * u4 + z5 * u5
                                       - y0 * b0 - y1 * b1 - y2 * b2 - y3 * b3 - y4 * b4 - y5 * b5)
                    dv[row, c0 + l] = (y0 * w0 + y1 * w1 + y2 * w2 + y3 * w3 + y4 * w4 + y5 * w5
                                       - z0 * s0 - z1 * s1 - z2 * s2 - z3 * s3 - z4 * s4 - z5 * s5)
                    dq[c0 + l, row] = s0 * g0 + s1 * g1 + s2 * g2 + s3 * g3 + s4 * g4 + s5 * g5
                    dv[c0 + l, row] = s0 * h0 + s1 * h1 + s2 * h2 + s3 * h3 + s4 * h4 + s5 * h5
                j = m.parent[j]
        par = m.parent[i]
        if par >= 0:
            for r in range(6):
                F[par, r] += F[i, r]
                H[par, r] += H[i, r]
                for c in range(6):
                    Y[par, r, c] += Y[i, r, c]
                    P[par, r, c] += P[i, r, c]


@kernel(parallel=True)
def rnea_derivatives_batch(m, x, q, v, a, dq, dv):
    for b in prange(q.shape[0]):
        rnea_derivatives_state(m, x, b, q[b], v[b], a[b], dq[b], dv[b])
