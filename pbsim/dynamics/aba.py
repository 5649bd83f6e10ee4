"""Articulated-Body Algorithm: forward dynamics qdd = M^-1 (tau - h) in O(n)
(Featherstone, Table 7.1; the same passes as Eq. 30-46 of paper 001 without the SPD terms)."""
from numba import prange

from pbsim.jit import kernel
from pbsim.dynamics.joints import BALL
from pbsim.dynamics.kinematics import velocity_pass
from pbsim.dynamics.spatial import (force_cross_add, force_to_parent_add, inertia_to_parent_add, mat6_vec,
                                    motion_to_child, small_inverse)


@kernel
def aba_backward(m, w, b, tau, arm_extra):
    # tau, arm_extra: (nv,) rows
    """Pass 2: articulated inertias I^A, bias forces p^A and U, D^-1, u per joint.

    Expects ``velocity_pass`` done and ``w.pA`` holding each body's external-force-free bias
    ``v x* I v`` minus external forces.  ``arm_extra`` (nv,) is added to the diagonal of D
    (zero for plain ABA; ``dt * Kd`` for stable PD, paper 001 Eq. 7)."""
    IA = w.IA[b]
    pA = w.pA[b]
    U = w.U[b]
    Dinv = w.Dinv[b]
    u = w.u[b]
    D = w.tmp[b, 0]
    UD = w.tmp[b, 1]
    du = w.vec[b, 0]
    c = w.c[b]
    for i in range(m.nb - 1, -1, -1):
        j0 = m.iv[i]
        nvi = m.nvj[i]
        par = m.parent[i]
        if nvi == 1:  # revolute / prismatic: scalar D, symmetric rank-1 update
            Ii = IA[i]
            Ui = U[i, 0]
            S0 = m.S[i, 0]
            s0, s1, s2, s3, s4, s5 = S0[0], S0[1], S0[2], S0[3], S0[4], S0[5]
            for r in range(6):  # U = I^A S
                Ui[r] = Ii[r, 0] * s0 + Ii[r, 1] * s1 + Ii[r, 2] * s2 + Ii[r, 3] * s3 + Ii[r, 4] * s4 + Ii[r, 5] * s5
            d = (s0 * Ui[0] + s1 * Ui[1] + s2 * Ui[2] + s3 * Ui[3] + s4 * Ui[4] + s5 * Ui[5]
                 + m.armature[j0] + arm_extra[j0])
            dinv = 1.0 / d
            Dinv[i, 0, 0] = dinv
            pa = pA[i]
            uu = tau[j0] - (s0 * pa[0] + s1 * pa[1] + s2 * pa[2] + s3 * pa[3] + s4 * pa[4] + s5 * pa[5])
            u[i, 0] = uu
            if par < 0:
                continue
            for r in range(6):  # I^a = I^A - U U^T / D
                ur = Ui[r] * dinv
                for cc in range(r, 6):
                    val = Ii[r, cc] - ur * Ui[cc]
                    Ii[r, cc] = val
                    Ii[cc, r] = val
            du0 = dinv * uu
            ci = c[i]
            for r in range(6):  # p^a = p^A + I^a c + U D^-1 u
                pa[r] += (Ii[r, 0] * ci[0] + Ii[r, 1] * ci[1] + Ii[r, 2] * ci[2] + Ii[r, 3] * ci[3]
                          + Ii[r, 4] * ci[4] + Ii[r, 5] * ci[5] + Ui[r] * du0)
            inertia_to_parent_add(w.R[b, i], w.p[b, i], Ii, w.tmp[b], IA[par])
            force_to_parent_add(w.R[b, i], w.p[b, i], pa, pA[par])
            continue
        if m.jtype[i] == BALL:  # S = [1; 0]: U = I^A[:, 0:3], D = I^A[0:3, 0:3], closed-form 3x3 inverse
            Ii = IA[i]
            Ub = U[i]
            pa = pA[i]
            for k in range(3):
                for r in range(6):
                    Ub[k, r] = Ii[r, k]
                u[i, k] = tau[j0 + k] - pa[k]
            a00 = Ii[0, 0] + m.armature[j0] + arm_extra[j0]
            a11 = Ii[1, 1] + m.armature[j0 + 1] + arm_extra[j0 + 1]
            a22 = Ii[2, 2] + m.armature[j0 + 2] + arm_extra[j0 + 2]
            a01 = Ii[0, 1]
            a02 = Ii[0, 2]
            a12 = Ii[1, 2]
            c00 = a11 * a22 - a12 * a12
            c01 = a02 * a12 - a01 * a22
            c02 = a01 * a12 - a02 * a11
            idet = 1.0 / (a00 * c00 + a01 * c01 + a02 * c02)
            Di = Dinv[i]
            Di[0, 0] = c00 * idet
            Di[0, 1] = c01 * idet
            Di[0, 2] = c02 * idet
            Di[1, 1] = (a00 * a22 - a02 * a02) * idet
            Di[1, 2] = (a01 * a02 - a00 * a12) * idet
            Di[2, 2] = (a00 * a11 - a01 * a01) * idet
            Di[1, 0] = Di[0, 1]
            Di[2, 0] = Di[0, 2]
            Di[2, 1] = Di[1, 2]
            if par < 0:
                continue
            for k in range(3):
                du[k] = Di[k, 0] * u[i, 0] + Di[k, 1] * u[i, 1] + Di[k, 2] * u[i, 2]
            for r in range(6):  # UD[a, r] = (U D^-1)[r, a]
                for k in range(3):
                    UD[k, r] = Ub[0, r] * Di[0, k] + Ub[1, r] * Di[1, k] + Ub[2, r] * Di[2, k]
            for r in range(6):  # I^a = I^A - U D^-1 U^T (symmetric)
                for cc in range(r, 6):
                    val = Ii[r, cc] - (UD[0, r] * Ub[0, cc] + UD[1, r] * Ub[1, cc] + UD[2, r] * Ub[2, cc])
                    Ii[r, cc] = val
                    Ii[cc, r] = val
            ci = c[i]
            for r in range(6):  # p^a = p^A + I^a c + U D^-1 u
                pa[r] += (Ii[r, 0] * ci[0] + Ii[r, 1] * ci[1] + Ii[r, 2] * ci[2] + Ii[r, 3] * ci[3]
                          + Ii[r, 4] * ci[4] + Ii[r, 5] * ci[5]
                          + Ub[0, r] * du[0] + Ub[1, r] * du[1] + Ub[2, r] * du[2])
            inertia_to_parent_add(w.R[b, i], w.p[b, i], Ii, w.tmp[b], IA[par])
            force_to_parent_add(w.R[b, i], w.p[b, i], pa, pA[par])
            continue
        for k in range(nvi):
            mat6_vec(IA[i], m.S[i, k], U[i, k])  # U = I^A S
        for a in range(nvi):
            for k in range(nvi):
                s = 0.0
                for r in range(6):
                    s += m.S[i, a, r] * U[i, k, r]
                D[a, k] = s
            D[a, a] += m.armature[j0 + a] + arm_extra[j0 + a]
            s = 0.0
            for r in range(6):
                s += m.S[i, a, r] * pA[i, r]
            u[i, a] = tau[j0 + a] - s  # u = tau - S^T p^A
        small_inverse(D, nvi, Dinv[i])
        if par < 0:
            continue
        for a in range(nvi):
            s = 0.0
            for k in range(nvi):
                s += Dinv[i, a, k] * u[i, k]
            du[a] = s
            for r in range(6):  # UD[a, r] = (U D^-1)[r, a]
                s = 0.0
                for k in range(nvi):
                    s += U[i, k, r] * Dinv[i, k, a]
                UD[a, r] = s
        for r in range(6):  # I^a = I^A - U D^-1 U^T
            for cc in range(6):
                s = 0.0
                for a in range(nvi):
                    s += UD[a, r] * U[i, a, cc]
                IA[i, r, cc] -= s
        for r in range(6):  # p^a = p^A + I^a c + U D^-1 u
            s = pA[i, r]
            for cc in range(6):
                s += IA[i, r, cc] * c[i, cc]
            for a in range(nvi):
                s += U[i, a, r] * du[a]
            pA[i, r] = s
        inertia_to_parent_add(w.R[b, i], w.p[b, i], IA[i], w.tmp[b], IA[par])
        force_to_parent_add(w.R[b, i], w.p[b, i], pA[i], pA[par])


@kernel
def joint_acceleration(m, w, b, i, t, qdd):
    """Pass-3 tail for body i, given ``w.acc[b, i] = a'``: ``qdd_i = D^-1 (u - U^T a')`` and
    ``a_i = a' + S qdd_i`` (Featherstone Table 7.1).  ``t`` is (6,) scratch."""
    acc = w.acc[b, i]
    j0 = m.iv[i]
    nvi = m.nvj[i]
    for a in range(nvi):
        s = w.u[b, i, a]
        for r in range(6):
            s -= w.U[b, i, a, r] * acc[r]
        t[a] = s
    for a in range(nvi):
        s = 0.0
        for k in range(nvi):
            s += w.Dinv[b, i, a, k] * t[k]
        qdd[j0 + a] = s
    for k in range(nvi):
        for r in range(6):
            acc[r] += m.S[i, k, r] * qdd[j0 + k]


@kernel
def aba_forward(m, w, b, qdd):
    """Pass 3: accelerations ``a' = X a_parent + c``, ``qdd = D^-1 (u - U^T a')``, ``a = a' + S qdd``."""
    acc = w.acc[b]
    a0 = w.vec[b, 1]
    t = w.vec[b, 0]
    for r in range(3):
        a0[r] = 0.0
        a0[3 + r] = -m.gravity[r]
    for i in range(m.nb):
        par = m.parent[i]
        if par >= 0:
            motion_to_child(w.R[b, i], w.p[b, i], acc[par], acc[i])
        else:
            motion_to_child(w.R[b, i], w.p[b, i], a0, acc[i])
        for r in range(6):
            acc[i, r] += w.c[b, i, r]
        joint_acceleration(m, w, b, i, t, qdd)


@kernel
def aba_init(m, w, b):
    """I^A = I and p^A = v x* I v (Pass 1 tail; external forces are subtracted by callers)."""
    for i in range(m.nb):
        for r in range(6):
            for cc in range(6):
                w.IA[b, i, r, cc] = m.inertia[i, r, cc]
            w.pA[b, i, r] = 0.0
        mat6_vec(m.inertia[i], w.vel[b, i], w.acc[b, i])
        force_cross_add(w.vel[b, i], w.acc[b, i], w.pA[b, i])


@kernel
def aba_state(m, w, b, q, v, tau, arm_extra, qdd):
    velocity_pass(m, w, b, q, v)
    aba_init(m, w, b)
    aba_backward(m, w, b, tau, arm_extra)
    aba_forward(m, w, b, qdd)


@kernel(parallel=True)
def aba_batch(m, w, q, v, tau, arm_extra, qdd):
    for b in prange(q.shape[0]):
        aba_state(m, w, b, q[b], v[b], tau[b], arm_extra, qdd[b])
