"""Composite-Rigid-Body Algorithm: joint-space mass matrix M(q) (Featherstone, Table 6.2).

The off-diagonal blocks ``M[j, i] = S_j^T X_j^T ... X_i^T I^c_i S_i`` are evaluated in world
coordinates: ``F_i = I^c_i S_i`` and ``S_j`` are each transformed to the world once, so every
ancestor pair costs one 6-vector dot product instead of a force transform per tree level.
"""
from numba import prange

from pbsim.backends.kernel import kernel
from pbsim.dynamics.kinematics import pose_pass, world_pass
from pbsim.dynamics.spatial import force_to_parent, inertia_to_parent_add, mat6_vec


@kernel
def motion_to_world(Rw, pw, s, out):
    """A motion vector from body to world coordinates (linear part at the world origin)."""
    wx = Rw[0, 0] * s[0] + Rw[0, 1] * s[1] + Rw[0, 2] * s[2]
    wy = Rw[1, 0] * s[0] + Rw[1, 1] * s[1] + Rw[1, 2] * s[2]
    wz = Rw[2, 0] * s[0] + Rw[2, 1] * s[1] + Rw[2, 2] * s[2]
    vx = Rw[0, 0] * s[3] + Rw[0, 1] * s[4] + Rw[0, 2] * s[5]
    vy = Rw[1, 0] * s[3] + Rw[1, 1] * s[4] + Rw[1, 2] * s[5]
    vz = Rw[2, 0] * s[3] + Rw[2, 1] * s[4] + Rw[2, 2] * s[5]
    out[0] = wx
    out[1] = wy
    out[2] = wz
    out[3] = vx + pw[1] * wz - pw[2] * wy  # v_O = v_P + p x w  (moved from body origin P to O)
    out[4] = vy + pw[2] * wx - pw[0] * wz
    out[5] = vz + pw[0] * wy - pw[1] * wx


@kernel
def crba_state(m, w, b, q, M):
    pose_pass(m, w, b, q)
    world_pass(m, w, b)
    Ic = w.IA[b]
    F = w.U[b]  # F[i, k]: I^c_i S_i[:, k], then in world coordinates
    Sw = w.Dinv[b]  # Sw[i, k]: S_i[:, k] in world coordinates
    Mb = M
    for r in range(m.nv):
        for c in range(m.nv):
            Mb[r, c] = 0.0
    for i in range(m.nb):
        for r in range(6):
            for c in range(6):
                Ic[i, r, c] = m.inertia[i, r, c]
    for i in range(m.nb - 1, -1, -1):  # composite inertias
        par = m.parent[i]
        if par >= 0:
            inertia_to_parent_add(w.R[b, i], w.p[b, i], Ic[i], w.tmp[b], Ic[par])
    for i in range(m.nb):
        j0 = m.iv[i]
        nvi = m.nvj[i]
        for k in range(nvi):
            mat6_vec(Ic[i], m.S[i, k], F[i, k])
            for a in range(nvi):  # diagonal block in body coordinates
                s = 0.0
                for r in range(6):
                    s += m.S[i, a, r] * F[i, k, r]
                Mb[j0 + a, j0 + k] = s
            Mb[j0 + k, j0 + k] += m.armature[j0 + k]
            force_to_parent(w.Rw[b, i], w.pw[b, i], F[i, k], F[i, k])  # body -> world
            motion_to_world(w.Rw[b, i], w.pw[b, i], m.S[i, k], Sw[i, k])
    for i in range(m.nb):
        j0 = m.iv[i]
        nvi = m.nvj[i]
        j = m.parent[i]
        while j >= 0:
            jj = m.iv[j]
            for a in range(m.nvj[j]):
                for k in range(nvi):
                    s = (Sw[j, a, 0] * F[i, k, 0] + Sw[j, a, 1] * F[i, k, 1] + Sw[j, a, 2] * F[i, k, 2]
                         + Sw[j, a, 3] * F[i, k, 3] + Sw[j, a, 4] * F[i, k, 4] + Sw[j, a, 5] * F[i, k, 5])
                    Mb[jj + a, j0 + k] = s
                    Mb[j0 + k, jj + a] = s
            j = m.parent[j]


@kernel(parallel=True)
def crba_batch(m, w, q, M):
    for b in prange(q.shape[0]):
        crba_state(m, w, b, q[b], M[b])
