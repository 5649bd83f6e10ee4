"""The constraint-space inverse inertia (Delassus matrix) ``K = J A^-1 J^T`` and the responses
``Y = A^-1 J^T`` of all constraint rows from ABA's factor, in world coordinates (no transforms).

ABA's factor of ``A = M + diag(arm)`` (``U_i = I^A_i S_i``, ``D_i^-1`` per joint) left in place by
the solve is reused, not recomputed.  The impulse-based solve ``x = A^-1 tau`` (paper 004 Eq. 25;
Featherstone RBDA Table 7.1 with no velocity and no gravity) is, with every spatial quantity
expressed at the world origin in world axes, free of coordinate transforms (``X = 1`` between any
two bodies)::

    backward (leaves to root):  u_i = tau_i - S_i^T p_i,   p_parent += p_i + U_i D_i^-1 u_i
    forward  (root to leaves):  a'_i = a_parent (0 at a root),
                                x_i = D_i^-1 (u_i - U_i^T a'_i),   a_i = a'_i + S_i x_i

once per row ``tau = J_r^T``: about 40 flops per DOF and row against ~130 with the body-frame
transforms (:func:`pbsim.dynamics.minv.minv_solve`).  ``S`` and ``U`` go to world coordinates once
per factor (:func:`world_axes`, O(n)): a motion ``[w; v]`` of body i (pose ``R_i, x_i``) becomes
``[R_i w; R_i v + x_i x R_i w]``, a force ``[n; f]`` becomes ``[R_i n + x_i x R_i f; R_i f]``
(Featherstone Eq. 2.21/2.22 with the inverse of the world-to-body transform); ``S^T p`` and
``U^T a`` are invariant under the pair.  A row identically zero (the out-of-plane rows of a planar
loop) gets ``Y_r = 0`` and no pass (and is then dropped from the factor).
"""
from pbsim.jit import kernel


@kernel
def world_axes(m, w, b):
    """Every DOF's motion axis ``S`` into ``w.eS`` and ABA's ``U = I^A S`` into ``w.eU``, both at
    the world origin in world axes (module doc).  Expects world poses and ABA's factor."""
    Sw = w.eS[b]
    Uw = w.eU[b]
    for i in range(m.nb):
        R = w.Rw[b, i]
        px = w.pw[b, i, 0]
        py = w.pw[b, i, 1]
        pz = w.pw[b, i, 2]
        j0 = m.iv[i]
        for k in range(m.nvj[i]):
            s = m.S[i, k]
            u = w.U[b, i, k]
            o = Sw[j0 + k]
            f = Uw[j0 + k]
            for r in range(3):  # w0 = R w, f0 = R f; then the linear / angular parts
                o[r] = R[r, 0] * s[0] + R[r, 1] * s[1] + R[r, 2] * s[2]
                o[3 + r] = R[r, 0] * s[3] + R[r, 1] * s[4] + R[r, 2] * s[5]
                f[3 + r] = R[r, 0] * u[3] + R[r, 1] * u[4] + R[r, 2] * u[5]
                f[r] = R[r, 0] * u[0] + R[r, 1] * u[1] + R[r, 2] * u[2]
            o[3] += py * o[2] - pz * o[1]  # v0 = R v + x x w0 (Eq. 2.21)
            o[4] += pz * o[0] - px * o[2]
            o[5] += px * o[1] - py * o[0]
            f[0] += py * f[5] - pz * f[4]  # n0 = R n + x x f0 (Eq. 2.22)
            f[1] += pz * f[3] - px * f[5]
            f[2] += px * f[4] - py * f[3]


@kernel
def responses(m, w, b, J, Y, K):
    """``Y_r = A^-1 J_r^T`` for the K rows of ``J`` (module doc: one transform-free backward and
    forward pass each, with :func:`world_axes` done); ``w.ez[b, r]`` = 1 for a row that is
    identically zero (``Y_r = 0``, no pass).  Overwrites ``w.pA``, ``w.acc``, ``w.vec``."""
    Sw = w.eS[b]
    Uw = w.eU[b]
    Dinv = w.Dinv[b]
    P = w.pA[b]
    acc = w.acc[b]
    du = w.vec[b, 0]
    t = w.vec[b, 1]
    ez = w.ez[b]
    for r in range(K):
        Jr = J[r]
        Yr = Y[r]
        nz = False
        for j in range(m.nv):
            if Jr[j] != 0.0:
                nz = True
                break
        if not nz:
            ez[r] = 1.0
            for j in range(m.nv):
                Yr[j] = 0.0
            continue
        ez[r] = 0.0
        for i in range(m.nb):
            for c in range(6):
                P[i, c] = 0.0
        for i in range(m.nb - 1, -1, -1):  # u_i = tau_i - S_i^T p_i, p_parent += p_i + U_i D_i^-1 u_i
            j0 = m.iv[i]
            nvi = m.nvj[i]
            Pi = P[i]
            for a in range(nvi):
                Sa = Sw[j0 + a]
                Yr[j0 + a] = Jr[j0 + a] - (Sa[0] * Pi[0] + Sa[1] * Pi[1] + Sa[2] * Pi[2]
                                           + Sa[3] * Pi[3] + Sa[4] * Pi[4] + Sa[5] * Pi[5])  # u, in Y
            par = m.parent[i]
            if par < 0:
                continue
            for a in range(nvi):
                s = 0.0
                for k in range(nvi):
                    s += Dinv[i, a, k] * Yr[j0 + k]
                du[a] = s
            Pp = P[par]
            for c in range(6):
                s = Pi[c]
                for a in range(nvi):
                    s += Uw[j0 + a, c] * du[a]
                Pp[c] += s
        for i in range(m.nb):  # a'_i = a_parent, x_i = D_i^-1 (u_i - U_i^T a'_i), a_i = a'_i + S_i x_i
            j0 = m.iv[i]
            nvi = m.nvj[i]
            par = m.parent[i]
            ai = acc[i]
            if par >= 0:
                for c in range(6):
                    ai[c] = acc[par, c]
            else:
                for c in range(6):
                    ai[c] = 0.0
            for a in range(nvi):
                Ua = Uw[j0 + a]
                t[a] = Yr[j0 + a] - (Ua[0] * ai[0] + Ua[1] * ai[1] + Ua[2] * ai[2]
                                     + Ua[3] * ai[3] + Ua[4] * ai[4] + Ua[5] * ai[5])
            for a in range(nvi):
                s = 0.0
                for k in range(nvi):
                    s += Dinv[i, a, k] * t[k]
                Yr[j0 + a] = s
            for a in range(nvi):
                x = Yr[j0 + a]
                Sa = Sw[j0 + a]
                for c in range(6):
                    ai[c] += Sa[c] * x


@kernel
def delassus(m, w, b, J, Y, Km, K):
    """``Km = J A^-1 J^T = J Y`` (K x K, symmetric; the zero rows' entries 0 without a product),
    after :func:`responses`."""
    ez = w.ez[b]
    for a in range(K):
        for c in range(a + 1):
            s = 0.0
            if ez[a] == 0.0 and ez[c] == 0.0:
                for j in range(m.nv):
                    s += J[a, j] * Y[c, j]
            Km[a, c] = s
            Km[c, a] = s
