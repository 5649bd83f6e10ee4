"""Articulated-Body Algorithm: forward dynamics qdd = M^-1 (tau - h) in O(n)
(Featherstone, Table 7.1; the same passes as Eq. 30-46 of paper 001 without the SPD terms)."""
from numba import prange

from pbsim.backends.kernel import kernel
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
        par = m.parent[i]
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
        j0 = m.iv[i]
        nvi = m.nvj[i]
        if par >= 0:
            motion_to_child(w.R[b, i], w.p[b, i], acc[par], acc[i])
        else:
            motion_to_child(w.R[b, i], w.p[b, i], a0, acc[i])
        for r in range(6):
            acc[i, r] += w.c[b, i, r]
        for a in range(nvi):
            s = w.u[b, i, a]
            for r in range(6):
                s -= w.U[b, i, a, r] * acc[i, r]
            t[a] = s
        for a in range(nvi):
            s = 0.0
            for k in range(nvi):
                s += w.Dinv[b, i, a, k] * t[k]
            qdd[j0 + a] = s
        for k in range(nvi):
            for r in range(6):
                acc[i, r] += m.S[i, k, r] * qdd[j0 + k]


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
