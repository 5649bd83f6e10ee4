"""Composite-Rigid-Body Algorithm: joint-space mass matrix M(q) (Featherstone, Table 6.2)."""
from numba import prange

from pbsim.backends.kernel import kernel
from pbsim.dynamics.kinematics import pose_pass
from pbsim.dynamics.spatial import force_to_parent, inertia_to_parent_add, mat6_vec


@kernel
def crba_state(m, w, b, q, M):
    pose_pass(m, w, b, q)
    Ic = w.IA[b]
    F = w.U[b]
    Mb = M
    for r in range(m.nv):
        for c in range(m.nv):
            Mb[r, c] = 0.0
    for i in range(m.nb):
        for r in range(6):
            for c in range(6):
                Ic[i, r, c] = m.inertia[i, r, c]
    for i in range(m.nb - 1, -1, -1):
        par = m.parent[i]
        if par >= 0:
            inertia_to_parent_add(w.R[b, i], w.p[b, i], Ic[i], w.tmp[b], Ic[par])
    for i in range(m.nb):
        j0 = m.iv[i]
        nvi = m.nvj[i]
        for k in range(nvi):
            mat6_vec(Ic[i], m.S[i, k], F[i, k])  # F = I^c S
            for a in range(nvi):
                s = 0.0
                for r in range(6):
                    s += m.S[i, a, r] * F[i, k, r]
                Mb[j0 + a, j0 + k] = s
            Mb[j0 + k, j0 + k] += m.armature[j0 + k]
        j = i
        while m.parent[j] >= 0:
            for k in range(nvi):
                force_to_parent(w.R[b, j], w.p[b, j], F[i, k], F[i, k])
            j = m.parent[j]
            jj = m.iv[j]
            for a in range(m.nvj[j]):
                for k in range(nvi):
                    s = 0.0
                    for r in range(6):
                        s += m.S[j, a, r] * F[i, k, r]
                    Mb[jj + a, j0 + k] = s
                    Mb[j0 + k, jj + a] = s


@kernel(parallel=True)
def crba_batch(m, w, q, M):
    for b in prange(q.shape[0]):
        crba_state(m, w, b, q[b], M[b])
