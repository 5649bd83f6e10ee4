"""The constraint-space inverse inertia (Delassus matrix) ``K = J A^-1 J^T`` and the responses
``Y = A^-1 J^T`` of all constraint rows from ABA's factor, in world coordinates (no transforms).

ABA's factor of ``A = M + diag(arm)`` (``U_i = I^A_i S_i``, ``D_i^-1`` per joint) left in place by
the solve is reused, not recomputed.  Every spatial quantity is expressed at the world origin in
world axes; a motion ``[w; v]`` and a force ``[n; f]`` of body i (world pose ``R_i, x_i``) become::

    (1)  [R_i w; R_i v + x_i x R_i w],    (2)  [R_i n + x_i x R_i f; R_i f]

(Featherstone RBDA Sec. 2.8, the inverse of the world-to-body Plücker transform), which leaves
``S^T p`` and ``U^T a`` unchanged and makes every body-to-body transform the identity.  The
impulse-based solve ``Y = A^-1 J^T`` (paper 004 Eq. 25; RBDA Table 7.1 with no velocity and no
gravity) then has no transforms, and runs for all K rows (columns of ``J^T``) in one sweep over
the tree, the K columns innermost (contiguous, vectorised; no pass per row)::

    (3)  backward (leaves to root):  u_i = J_i^T - S_i^T p_i,   d_i = D_i^-1 u_i,
                                     p_parent += p_i + U_i d_i
    (4)  forward (root to leaves):   a'_i = a_parent (0 at a root),
                                     Y_i = d_i - D_i^-1 U_i^T a'_i,   a_i = a'_i + S_i Y_i
    (5)  K = J Y

(``J_i``: joint i's columns of J; p and a: (6, K) per body).  About 40 flops per DOF and row,
vectorised over rows, against ~130 scalar ones per DOF and row for one body-frame pass per row
(:func:`pbsim.dynamics.minv.minv_solve`).  The world axes ``S`` (1) also give the point and
angular Jacobians of the rows (:mod:`pbsim.dynamics.equality`) without walking transforms.
"""
from pbsim.jit import kernel


@kernel
def world_motion_axes(m, w, b):
    """Every DOF's motion axis ``S`` at the world origin in world axes (Eq. 1) into ``w.eS``
    (the world-frame Jacobian column of the DOF).  Expects world poses."""
    Sw = w.eS[b]
    Rw = w.Rw[b]
    pw = w.pw[b]
    for i in range(m.nb):
        px = pw[i, 0]
        py = pw[i, 1]
        pz = pw[i, 2]
        j0 = m.iv[i]
        for k in range(m.nvj[i]):
            jk = j0 + k
            for r in range(3):
                Sw[jk, r] = Rw[i, r, 0] * m.S[i, k, 0] + Rw[i, r, 1] * m.S[i, k, 1] + Rw[i, r, 2] * m.S[i, k, 2]
                Sw[jk, 3 + r] = Rw[i, r, 0] * m.S[i, k, 3] + Rw[i, r, 1] * m.S[i, k, 4] + Rw[i, r, 2] * m.S[i, k, 5]
            Sw[jk, 3] += py * Sw[jk, 2] - pz * Sw[jk, 1]  # v0 = R v + x x w0 (Eq. 1)
            Sw[jk, 4] += pz * Sw[jk, 0] - px * Sw[jk, 2]
            Sw[jk, 5] += px * Sw[jk, 1] - py * Sw[jk, 0]


@kernel
def world_force_axes(m, w, b):
    """ABA's ``U = I^A S`` of every DOF at the world origin in world axes (Eq. 2) into ``w.eU``.
    Expects world poses and ABA's factor."""
    Uw = w.eU[b]
    Rw = w.Rw[b]
    pw = w.pw[b]
    U = w.U[b]
    for i in range(m.nb):
        px = pw[i, 0]
        py = pw[i, 1]
        pz = pw[i, 2]
        j0 = m.iv[i]
        for k in range(m.nvj[i]):
            jk = j0 + k
            for r in range(3):
                Uw[jk, r] = Rw[i, r, 0] * U[i, k, 0] + Rw[i, r, 1] * U[i, k, 1] + Rw[i, r, 2] * U[i, k, 2]
                Uw[jk, 3 + r] = Rw[i, r, 0] * U[i, k, 3] + Rw[i, r, 1] * U[i, k, 4] + Rw[i, r, 2] * U[i, k, 5]
            Uw[jk, 0] += py * Uw[jk, 5] - pz * Uw[jk, 4]  # n0 = R n + x x f0 (Eq. 2)
            Uw[jk, 1] += pz * Uw[jk, 3] - px * Uw[jk, 5]
            Uw[jk, 2] += px * Uw[jk, 4] - py * Uw[jk, 3]


@kernel
def responses(m, w, b, J, Y, K):
    """``Y = A^-1 J^T`` (nv, K) for the K rows of ``J`` (K, nv) in one sweep (Eq. 3-4), with
    :func:`world_motion_axes` and :func:`world_force_axes` done; ``w.ez[b, r]`` = 1 for a row
    that is identically zero (its column of Y is 0; the sweep runs over the others only).
    Scratch: ``w.eP``, ``w.ei``, ``w.vec``.  Indexed in place (no per-body views: at a few rows
    their set-up cost more than the arithmetic)."""
    Sw = w.eS[b]
    Uw = w.eU[b]
    Dinv = w.Dinv[b]
    P = w.eP[b]
    t = w.vec[b, 0]
    x = w.vec[b, 1]
    ez = w.ez[b]
    ei = w.ei[b]
    n = 0  # the nonzero rows ei[:n]: the sweep's columns, compacted (moved into place at the end)
    for r in range(K):
        z = 1.0
        for j in range(m.nv):
            if J[r, j] != 0.0:
                z = 0.0
                break
        ez[r] = z
        if z == 0.0:
            ei[n] = r
            n += 1
    for i in range(m.nb):
        for c in range(6):
            for r in range(n):
                P[i, c, r] = 0.0
    for i in range(m.nb - 1, -1, -1):  # Eq. 3
        j0 = m.iv[i]
        nvi = m.nvj[i]
        for a in range(nvi):  # u = J^T - S^T p
            ja = j0 + a
            s0, s1, s2, s3, s4, s5 = Sw[ja, 0], Sw[ja, 1], Sw[ja, 2], Sw[ja, 3], Sw[ja, 4], Sw[ja, 5]
            for r in range(n):
                Y[ja, r] = J[ei[r], ja] - (s0 * P[i, 0, r] + s1 * P[i, 1, r] + s2 * P[i, 2, r]
                                           + s3 * P[i, 3, r] + s4 * P[i, 4, r] + s5 * P[i, 5, r])
        if nvi == 1:  # d = D^-1 u
            d = Dinv[i, 0, 0]
            for r in range(n):
                Y[j0, r] *= d
        else:
            for r in range(n):
                for a in range(nvi):
                    t[a] = Y[j0 + a, r]
                for a in range(nvi):
                    s = 0.0
                    for k in range(nvi):
                        s += Dinv[i, a, k] * t[k]
                    Y[j0 + a, r] = s
        par = m.parent[i]
        if par < 0:
            continue
        if nvi == 1:  # p_parent += p + U d
            u0, u1, u2, u3, u4, u5 = Uw[j0, 0], Uw[j0, 1], Uw[j0, 2], Uw[j0, 3], Uw[j0, 4], Uw[j0, 5]
            for r in range(n):
                y = Y[j0, r]
                P[par, 0, r] += P[i, 0, r] + u0 * y
                P[par, 1, r] += P[i, 1, r] + u1 * y
                P[par, 2, r] += P[i, 2, r] + u2 * y
                P[par, 3, r] += P[i, 3, r] + u3 * y
                P[par, 4, r] += P[i, 4, r] + u4 * y
                P[par, 5, r] += P[i, 5, r] + u5 * y
            continue
        for c in range(6):
            for r in range(n):
                P[par, c, r] += P[i, c, r]
            for a in range(nvi):
                uc = Uw[j0 + a, c]
                for r in range(n):
                    P[par, c, r] += uc * Y[j0 + a, r]
    for i in range(m.nb):  # Eq. 4 (P now holds the accelerations a)
        j0 = m.iv[i]
        nvi = m.nvj[i]
        par = m.parent[i]
        if par < 0:  # a' = 0: Y = d, a = S Y
            for c in range(6):
                for r in range(n):
                    P[i, c, r] = 0.0
            for a in range(nvi):
                for c in range(6):
                    sc = Sw[j0 + a, c]
                    for r in range(n):
                        P[i, c, r] += sc * Y[j0 + a, r]
            continue
        if nvi == 1:
            d = Dinv[i, 0, 0]
            u0, u1, u2, u3, u4, u5 = Uw[j0, 0], Uw[j0, 1], Uw[j0, 2], Uw[j0, 3], Uw[j0, 4], Uw[j0, 5]
            s0, s1, s2, s3, s4, s5 = Sw[j0, 0], Sw[j0, 1], Sw[j0, 2], Sw[j0, 3], Sw[j0, 4], Sw[j0, 5]
            for r in range(n):
                a0, a1, a2 = P[par, 0, r], P[par, 1, r], P[par, 2, r]
                a3, a4, a5 = P[par, 3, r], P[par, 4, r], P[par, 5, r]
                y = Y[j0, r] - d * (u0 * a0 + u1 * a1 + u2 * a2 + u3 * a3 + u4 * a4 + u5 * a5)
                Y[j0, r] = y
                P[i, 0, r] = a0 + s0 * y
                P[i, 1, r] = a1 + s1 * y
                P[i, 2, r] = a2 + s2 * y
                P[i, 3, r] = a3 + s3 * y
                P[i, 4, r] = a4 + s4 * y
                P[i, 5, r] = a5 + s5 * y
            continue
        for c in range(6):
            for r in range(n):
                P[i, c, r] = P[par, c, r]
        for r in range(n):
            for a in range(nvi):
                t[a] = (Uw[j0 + a, 0] * P[i, 0, r] + Uw[j0 + a, 1] * P[i, 1, r] + Uw[j0 + a, 2] * P[i, 2, r]
                        + Uw[j0 + a, 3] * P[i, 3, r] + Uw[j0 + a, 4] * P[i, 4, r] + Uw[j0 + a, 5] * P[i, 5, r])
            for a in range(nvi):
                s = Y[j0 + a, r]
                for k in range(nvi):
                    s -= Dinv[i, a, k] * t[k]
                x[a] = s
            for a in range(nvi):
                Y[j0 + a, r] = x[a]
                for c in range(6):
                    P[i, c, r] += Sw[j0 + a, c] * x[a]
    for c in range(n - 1, -1, -1):  # column c to row ei[c] >= c (from the last: nothing overwritten)
        r = ei[c]
        if r != c:
            for j in range(m.nv):
                Y[j, r] = Y[j, c]
    for r in range(K):
        if ez[r] != 0.0:
            for j in range(m.nv):
                Y[j, r] = 0.0


@kernel
def delassus(m, w, b, J, Y, Km, K):
    """``Km = J Y = J A^-1 J^T`` (Eq. 5; K x K, symmetric; the zero rows' entries 0 without a
    product), after :func:`responses`."""
    ez = w.ez[b]
    for a in range(K):
        for c in range(a + 1):
            s = 0.0
            if ez[a] == 0.0 and ez[c] == 0.0:
                for j in range(m.nv):
                    s += J[a, j] * Y[j, c]
            Km[a, c] = s
            Km[c, a] = s
