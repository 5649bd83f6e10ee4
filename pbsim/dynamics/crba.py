"""Composite-Rigid-Body Algorithm: joint-space mass matrix M(q) (Featherstone, Table 6.2).

Composite inertias are carried in the 10-parameter form (mass m, first moment h = m c, rotational
inertia J about the body origin), which moves to the parent in ~75 flops instead of ~250 for a
general 6x6 spatial inertia (a rigid-body inertia has that structure; an articulated one does not).
Everything is evaluated in world coordinates (as Pinocchio does): body inertias are moved to
the world once, composite inertias then simply add up, ``S_i`` and ``F_i = I^c_i S_i`` are formed
there, and every block ``M[j, i] = S_j . F_i`` (j = i or an ancestor) is one 6-vector dot product.
"""
from numba import prange

from pbsim.jit import kernel
from pbsim.dynamics.kinematics import pose_pass, world_pass


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
def rigid_inertia_to_parent_add(R, p, cj, ch, oj, oh):
    """``out += X^T I X`` for rigid-body inertias in 10-parameter form, ``cj = (Jxx, Jyy, Jzz, Jxy,
    Jxz, Jyz)`` (J about the body origin) and ``ch = (hx, hy, hz, m)`` (h = m com), added to (oj, oh):
    ``h' = R h + m p``, ``J' = R J R^T + (2 (R h).p + m p.p) 1 - ((R h) p^T + p (R h)^T + m p p^T)``."""
    jxx, jyy, jzz, jxy, jxz, jyz = cj[0], cj[1], cj[2], cj[3], cj[4], cj[5]
    m = ch[3]
    px, py, pz = p[0], p[1], p[2]
    hx = R[0, 0] * ch[0] + R[0, 1] * ch[1] + R[0, 2] * ch[2]
    hy = R[1, 0] * ch[0] + R[1, 1] * ch[1] + R[1, 2] * ch[2]
    hz = R[2, 0] * ch[0] + R[2, 1] * ch[1] + R[2, 2] * ch[2]
    # T = J R^T (rows of J times rows of R)
    t00 = jxx * R[0, 0] + jxy * R[0, 1] + jxz * R[0, 2]
    t01 = jxx * R[1, 0] + jxy * R[1, 1] + jxz * R[1, 2]
    t02 = jxx * R[2, 0] + jxy * R[2, 1] + jxz * R[2, 2]
    t10 = jxy * R[0, 0] + jyy * R[0, 1] + jyz * R[0, 2]
    t11 = jxy * R[1, 0] + jyy * R[1, 1] + jyz * R[1, 2]
    t12 = jxy * R[2, 0] + jyy * R[2, 1] + jyz * R[2, 2]
    t20 = jxz * R[0, 0] + jyz * R[0, 1] + jzz * R[0, 2]
    t21 = jxz * R[1, 0] + jyz * R[1, 1] + jzz * R[1, 2]
    t22 = jxz * R[2, 0] + jyz * R[2, 1] + jzz * R[2, 2]
    diag = 2.0 * (hx * px + hy * py + hz * pz) + m * (px * px + py * py + pz * pz)
    oj[0] += R[0, 0] * t00 + R[0, 1] * t10 + R[0, 2] * t20 + diag - 2.0 * hx * px - m * px * px
    oj[1] += R[1, 0] * t01 + R[1, 1] * t11 + R[1, 2] * t21 + diag - 2.0 * hy * py - m * py * py
    oj[2] += R[2, 0] * t02 + R[2, 1] * t12 + R[2, 2] * t22 + diag - 2.0 * hz * pz - m * pz * pz
    oj[3] += R[0, 0] * t01 + R[0, 1] * t11 + R[0, 2] * t21 - hx * py - px * hy - m * px * py
    oj[4] += R[0, 0] * t02 + R[0, 1] * t12 + R[0, 2] * t22 - hx * pz - px * hz - m * px * pz
    oj[5] += R[1, 0] * t02 + R[1, 1] * t12 + R[1, 2] * t22 - hy * pz - py * hz - m * py * pz
    oh[0] += hx + m * px
    oh[1] += hy + m * py
    oh[2] += hz + m * pz
    oh[3] += m


@kernel
def rigid_inertia_times(c, ch, s, out):
    """``out = I s`` for a 10-parameter inertia: ``n = J w + h x v``, ``f = m v - h x w``."""
    wx, wy, wz, vx, vy, vz = s[0], s[1], s[2], s[3], s[4], s[5]
    hx, hy, hz, m = ch[0], ch[1], ch[2], ch[3]
    out[0] = c[0] * wx + c[3] * wy + c[4] * wz + hy * vz - hz * vy
    out[1] = c[3] * wx + c[1] * wy + c[5] * wz + hz * vx - hx * vz
    out[2] = c[4] * wx + c[5] * wy + c[2] * wz + hx * vy - hy * vx
    out[3] = m * vx - (hy * wz - hz * wy)
    out[4] = m * vy - (hz * wx - hx * wz)
    out[5] = m * vz - (hx * wy - hy * wx)


@kernel
def crba_state(m, w, b, q, M):
    """M(q) into ``M`` (every entry written)."""
    for r in range(m.nv):
        for c in range(m.nv):
            M[r, c] = 0.0
    crba_fill(m, w, b, q, M)


@kernel
def crba_fill(m, w, b, q, M):
    """M(q) into ``M``, writing only the entries the tree couples (diagonal blocks and ancestor
    pairs): the others must already be zero (e.g. ``M`` allocated with zeros and reused)."""
    pose_pass(m, w, b, q)
    world_pass(m, w, b)
    C = w.IA[b]  # C[i, 0, :6] = J, C[i, 1, :4] = (h, m): composite inertia of body i, world frame
    F = w.U[b]  # F[i, k] = I^c_i S_i[:, k], world frame
    Sw = w.Dinv[b]  # Sw[i, k] = S_i[:, k], world frame
    Mb = M
    for i in range(m.nb):  # body inertias in world coordinates (10-parameter form)
        I = m.inertia[i]
        T = w.tmp[b, 0]
        T[0, 0] = I[0, 0]
        T[0, 1] = I[1, 1]
        T[0, 2] = I[2, 2]
        T[0, 3] = I[0, 1]
        T[0, 4] = I[0, 2]
        T[0, 5] = I[1, 2]
        T[1, 0] = I[2, 4]  # h^ = I[0:3, 3:6]: h = (h^[2,1], h^[0,2], h^[1,0])
        T[1, 1] = I[0, 5]
        T[1, 2] = I[1, 3]
        T[1, 3] = I[3, 3]
        for r in range(6):
            C[i, 0, r] = 0.0
        for r in range(4):
            C[i, 1, r] = 0.0
        rigid_inertia_to_parent_add(w.Rw[b, i], w.pw[b, i], T[0], T[1], C[i, 0], C[i, 1])
    for i in range(m.nb - 1, -1, -1):  # composite inertias: in one frame they simply add up
        par = m.parent[i]
        if par >= 0:
            for r in range(6):
                C[par, 0, r] += C[i, 0, r]
            for r in range(4):
                C[par, 1, r] += C[i, 1, r]
    for i in range(m.nb):
        j0 = m.iv[i]
        nvi = m.nvj[i]
        for k in range(nvi):
            motion_to_world(w.Rw[b, i], w.pw[b, i], m.S[i, k], Sw[i, k])
            rigid_inertia_times(C[i, 0], C[i, 1], Sw[i, k], F[i, k])
        for k in range(nvi):
            for a in range(nvi):  # diagonal block
                Mb[j0 + a, j0 + k] = (Sw[i, a, 0] * F[i, k, 0] + Sw[i, a, 1] * F[i, k, 1] + Sw[i, a, 2] * F[i, k, 2]
                                      + Sw[i, a, 3] * F[i, k, 3] + Sw[i, a, 4] * F[i, k, 4] + Sw[i, a, 5] * F[i, k, 5])
            Mb[j0 + k, j0 + k] += m.armature[j0 + k]
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
