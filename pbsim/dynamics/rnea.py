"""Recursive Newton-Euler Algorithm: inverse dynamics tau = M(q) qdd + h(q, v) in O(n)
(Featherstone, Table 5.1).  Armature is included in M; joint damping is not (it is a passive
force the integrators add)."""
from numba import prange

from pbsim.jit import kernel
from pbsim.dynamics.kinematics import velocity_pass
from pbsim.dynamics.spatial import force_cross_add, force_to_parent_add, mat6_vec, motion_to_child


@kernel
def rnea_state(m, w, b, q, v, qdd, tau):
    velocity_pass(m, w, b, q, v)
    acc = w.acc[b]
    f = w.pA[b]
    a0 = w.vec[b, 1]
    for r in range(3):
        a0[r] = 0.0
        a0[3 + r] = -m.gravity[r]
    for i in range(m.nb):
        par = m.parent[i]
        j0 = m.iv[i]
        if par >= 0:
            motion_to_child(w.R[b, i], w.p[b, i], acc[par], acc[i])
        else:
            motion_to_child(w.R[b, i], w.p[b, i], a0, acc[i])
        for r in range(6):  # a_i = X a_parent + S qdd + v x vJ
            s = w.c[b, i, r]
            for k in range(m.nvj[i]):
                s += m.S[i, k, r] * qdd[j0 + k]
            acc[i, r] += s
        mat6_vec(m.inertia[i], acc[i], f[i])  # f_i = I a + v x* I v
        mat6_vec(m.inertia[i], w.vel[b, i], w.vec[b, 0])
        force_cross_add(w.vel[b, i], w.vec[b, 0], f[i])
    for i in range(m.nb - 1, -1, -1):
        j0 = m.iv[i]
        for k in range(m.nvj[i]):
            s = m.armature[j0 + k] * qdd[j0 + k]
            for r in range(6):
                s += m.S[i, k, r] * f[i, r]
            tau[j0 + k] = s
        par = m.parent[i]
        if par >= 0:
            force_to_parent_add(w.R[b, i], w.p[b, i], f[i], f[par])


@kernel(parallel=True)
def rnea_batch(m, w, q, v, qdd, tau):
    for b in prange(q.shape[0]):
        rnea_state(m, w, b, q[b], v[b], qdd[b], tau[b])
