"""PBAD objective kernels (paper 000, Eq. 4-9; Algorithms 1-3).

Everything is expressed through the world poses ``T_i = [R_i | t_i]`` (3x4) of the bodies and the
per-body 4x4 second-moment matrix ``M~_i = int rho [p;1][p;1]^T`` (Eq. 8).  The integral
``int rho ||A [p;1]||^2 = <A M~, A>`` makes the inertial term of Eq. 5 a sum of traces.

Derivatives are taken with respect to a tangent increment ``d`` around the current iterate
``q (+) d`` (the same right/body-frame increments as ``integrate_config``), so ball and free
joints with quaternions work.  At ``d = 0`` the derivative of a body pose w.r.t. DOF ``a`` is
``hat(xi_a) T_i`` with ``xi_a = (w_a, u_a)`` the world twist of DOF ``a`` (angular, and velocity
of the point at the world origin); second derivatives are ``hat(xi_a) hat(xi_b) T_i`` (ancestor on
the left; symmetrised inside one ball joint, zero between a free joint's linear and angular part).

Notation used by the kernels (all preallocated, leading batch axis B in ``PbadWork``):
``G_i = dE/dT_i`` (3x4), ``W_i = sum_{subtree(i)} G_j T_j^T`` (3x4, the 4x4 adjoint ``A`` of
Algorithm 1 expressed in world coordinates), so ``dE/dd_a = <hat(xi_a), W_body(a)>`` (O(N)) and
the second-derivative part of the Hessian is ``<hat(xi_a) hat(xi_b), W_body(b)>`` (Algorithm 2).
The Gauss-Newton / cross-configuration blocks ``sum tr(hat(xi_a) C hat(xi_b)^T)`` with
``C = sum_subtree T(q_i) M~ T(q_j)^T`` are Algorithm 3.

Penalty contact (Eq. 9) is the contact layer's energy model (:mod:`pbsim.contact.energy`) at the
contact points of the scene arrays ``s`` (:class:`pbsim.contact.KScene`: every environment shape,
through the one detection); drag (Sec. 6.2) is PBAD's own, here.
"""
from collections import namedtuple

import numpy as np

from pbsim.jit import kernel
from pbsim.contact.energy import contact_energy, contact_step_fraction
from pbsim.contact.query import contact_detect
from pbsim.dynamics.joints import BALL, FREE
from pbsim.dynamics.gravcomp import weight_moment

# Model-side constants of PBAD: per body M~; drag sample points (Sec. 6.2); per contact point of the
# scene (``s``, a KScene) the Eq. 9 parameters D1, D2 (:mod:`pbsim.contact.energy`) and the normal
# damping Cn the collocation orders add (:mod:`.colloc`; order 2 does not read it)
# pair_cn: 1.0 when the collocation orders add the normal damper between bodies too (each body-body
# point's scene damping pp_c), else 0.0
# friction_ev: 0.0 for Eq. 9's friction, > 0 for the lagged Coulomb friction smoothed below this speed
# (m/s; pbsim.contact.energy, option friction="coulomb")
PbadModel = namedtuple("PbadModel", "Mt npts pt_body pt_local pt_axis drag_n drag_t D1 D2 Cn pair_cn friction_ev")


def second_moments(model) -> np.ndarray:
    """Per-body ``M~ = int rho [p;1][p;1]^T`` (Eq. 8) from mass, com and inertia about the com."""
    nb = model.nb
    Mt = np.zeros((nb, 4, 4))
    for i in range(nb):
        m = float(model.mass[i])
        c = np.asarray(model.com[i], float)
        Ic = np.asarray(model.inertia_com[i], float)
        S = 0.5 * np.trace(Ic) * np.eye(3) - Ic + m * np.outer(c, c)  # int rho p p^T
        Mt[i, :3, :3] = S
        Mt[i, :3, 3] = m * c
        Mt[i, 3, :3] = m * c
        Mt[i, 3, 3] = m
    return Mt


def make_pbad_model(model, points_body=None, points_local=None, points_axis=None, drag_n=None, drag_t=None,
                    D1=None, D2=None, Cn=None) -> PbadModel:
    """PBAD's constants: drag points (``points_*``, ``drag_n``/``drag_t``) and the contact energy's
    per-point ``D1``, ``D2`` (arrays over the scene's contact points, :mod:`pbsim.contact.energy`),
    and per contact point the normal damping ``Cn`` of the collocation orders (default 0)."""
    n = 0 if points_body is None else len(points_body)
    z = np.zeros
    pb = z(0, np.int32) if n == 0 else np.ascontiguousarray(points_body, np.int32)
    pl = z((0, 3)) if n == 0 else np.ascontiguousarray(points_local, np.float64).reshape(n, 3)
    pa = z((n, 3)) if points_axis is None else np.ascontiguousarray(points_axis, np.float64).reshape(n, 3)
    # np.array copies: a read-only broadcast view is another numba type (a second compilation)
    dn = z(n) if drag_n is None else np.array(np.broadcast_to(drag_n, (n,)), np.float64)
    dtg = z(n) if drag_t is None else np.array(np.broadcast_to(drag_t, (n,)), np.float64)
    d1 = z(0) if D1 is None else np.array(D1, np.float64).reshape(-1)
    d2 = z(len(d1)) if D2 is None else np.array(np.broadcast_to(D2, d1.shape), np.float64)
    cn = z(len(d1)) if Cn is None else np.array(np.broadcast_to(Cn, d1.shape), np.float64)
    return PbadModel(second_moments(model), n, pb, pl, pa, dn, dtg, d1, d2, cn, 0.0, 0.0)


# ---------------------------------------------------------------------------------------------
# small helpers (scalar code only)

@kernel
def poses_from_work(m, w, b, T):
    """Copy the world poses of ``world_pass`` into ``T`` (nb, 3, 4)."""
    for i in range(m.nb):
        for r in range(3):
            for c in range(3):
                T[i, r, c] = w.Rw[b, i, r, c]
            T[i, r, 3] = w.pw[b, i, r]


@kernel
def world_twists(m, T, xi):
    """World twist (w, u) of every DOF: w angular, u the velocity of the point at the world origin."""
    for i in range(m.nb):
        j0 = m.iv[i]
        for k in range(m.nvj[i]):
            s = m.S[i, k]
            for r in range(3):
                xi[j0 + k, r] = T[i, r, 0] * s[0] + T[i, r, 1] * s[1] + T[i, r, 2] * s[2]
                xi[j0 + k, 3 + r] = T[i, r, 0] * s[3] + T[i, r, 1] * s[4] + T[i, r, 2] * s[5]
            wx, wy, wz = xi[j0 + k, 0], xi[j0 + k, 1], xi[j0 + k, 2]
            tx, ty, tz = T[i, 0, 3], T[i, 1, 3], T[i, 2, 3]
            xi[j0 + k, 3] -= wy * tz - wz * ty  # u = u_origin_of_body - w x t
            xi[j0 + k, 4] -= wz * tx - wx * tz
            xi[j0 + k, 5] -= wx * ty - wy * tx


@kernel
def hat_dot(x, W):
    """<hat(x)_top, W> for a twist x and a 3x4 matrix W."""
    return (x[0] * (W[2, 1] - W[1, 2]) + x[1] * (W[0, 2] - W[2, 0]) + x[2] * (W[1, 0] - W[0, 1])
            + x[3] * W[0, 3] + x[4] * W[1, 3] + x[5] * W[2, 3])


@kernel
def hat2_dot(xa, xb, W):
    """<(hat(xa) hat(xb))_top, W>: [a][b] = b a^T - (a.b) I, translation column a x u_b."""
    ab = xa[0] * xb[0] + xa[1] * xb[1] + xa[2] * xb[2]
    s = -ab * (W[0, 0] + W[1, 1] + W[2, 2])
    for r in range(3):
        for c in range(3):
            s += xb[r] * xa[c] * W[r, c]
    s += (xa[1] * xb[5] - xa[2] * xb[4]) * W[0, 3]
    s += (xa[2] * xb[3] - xa[0] * xb[5]) * W[1, 3]
    s += (xa[0] * xb[4] - xa[1] * xb[3]) * W[2, 3]
    return s


@kernel
def hat_pair(xa, C, xb):
    """tr(hat(xa) C hat(xb)^T) for a 4x4 C (Algorithm 3's double contraction)."""
    s = 0.0
    for l in range(4):
        # u = hat(xa) C[:, l]
        ux = xa[1] * C[2, l] - xa[2] * C[1, l] + xa[3] * C[3, l]
        uy = xa[2] * C[0, l] - xa[0] * C[2, l] + xa[4] * C[3, l]
        uz = xa[0] * C[1, l] - xa[1] * C[0, l] + xa[5] * C[3, l]
        if l == 3:
            s += ux * xb[3] + uy * xb[4] + uz * xb[5]
        elif l == 0:  # column 0 of [wb]x is (0, wb_z, -wb_y)
            s += uy * xb[2] - uz * xb[1]
        elif l == 1:  # (-wb_z, 0, wb_x)
            s += -ux * xb[2] + uz * xb[0]
        else:  # (wb_y, -wb_x, 0)
            s += ux * xb[1] - uy * xb[0]
    return s


# ---------------------------------------------------------------------------------------------
# body terms

@kernel
def inertial_gravity_terms(m, pm, T, A, scale, with_gravity, G):
    """``G_i = scale * A_i M~_i - m_i g [c_i; 1]^T`` and the energy ``scale/2 <A M~, A> + V`` (Eq. 5, 8).

    ``A`` (nb, 3, 4) is the finite-difference combination of poses (for Eq. 5:
    T_{k+1} - 2 T_k + T_{k-1}); ``scale = 1/dt^2``."""
    e = 0.0
    for i in range(m.nb):
        for r in range(3):
            for c in range(4):
                s = 0.0
                for k in range(4):
                    s += A[i, r, k] * pm.Mt[i, k, c]
                G[i, r, c] = scale * s
                e += 0.5 * scale * s * A[i, r, c]
        if with_gravity:  # V = -g . (m_w p + R s): gravcomp's share taken out (pbsim.dynamics.gravcomp)
            mw, s0, s1, s2 = weight_moment(m, i)
            for r in range(3):
                gr = m.gravity[r]
                e -= gr * (mw * T[i, r, 3] + T[i, r, 0] * s0 + T[i, r, 1] * s1 + T[i, r, 2] * s2)
                G[i, r, 0] -= gr * s0
                G[i, r, 1] -= gr * s1
                G[i, r, 2] -= gr * s2
                G[i, r, 3] -= gr * mw
    return e


@kernel
def point_xyz(T, i, pl):
    """World position (x, y, z) of the body-``i`` point ``pl`` under the 4x4 poses ``T``."""
    return (T[i, 0, 0] * pl[0] + T[i, 0, 1] * pl[1] + T[i, 0, 2] * pl[2] + T[i, 0, 3],
            T[i, 1, 0] * pl[0] + T[i, 1, 1] * pl[1] + T[i, 1, 2] * pl[2] + T[i, 1, 3],
            T[i, 2, 0] * pl[0] + T[i, 2, 1] * pl[1] + T[i, 2, 2] * pl[2] + T[i, 2, 3])


@kernel
def point_terms(m, pm, T, Tk, dt, G, F, K):
    """Anisotropic drag (Sec. 6.2, axis frozen at q_k) at the drag sample points of ``pm``.

    Adds dE/dx [p;1]^T to ``G``; returns the energy; stores per point the force dE/dx in ``F``
    (npts, 3) and the Hessian d2E/dx2 in ``K`` (npts, 3, 3)."""
    e = 0.0
    for k in range(pm.npts):
        i = pm.pt_body[k]
        pl = pm.pt_local[k]
        x0, x1, x2 = point_xyz(T, i, pl)
        y0, y1, y2 = point_xyz(Tk, i, pl)
        d0, d1, d2 = x0 - y0, x1 - y1, x2 - y2
        for r in range(3):
            F[k, r] = 0.0
            for c in range(3):
                K[k, r, c] = 0.0
        # drag: E = 1/(2 dt) dx^T (cn (I - a a^T) + ct a a^T) dx, a = body axis at q_k
        cn = pm.drag_n[k]
        ct = pm.drag_t[k]
        if cn != 0.0 or ct != 0.0:
            pa = pm.pt_axis[k]
            a0 = Tk[i, 0, 0] * pa[0] + Tk[i, 0, 1] * pa[1] + Tk[i, 0, 2] * pa[2]
            a1 = Tk[i, 1, 0] * pa[0] + Tk[i, 1, 1] * pa[1] + Tk[i, 1, 2] * pa[2]
            a2 = Tk[i, 2, 0] * pa[0] + Tk[i, 2, 1] * pa[1] + Tk[i, 2, 2] * pa[2]
            for r in range(3):
                ar = a0 if r == 0 else (a1 if r == 1 else a2)
                for c in range(3):
                    ac = a0 if c == 0 else (a1 if c == 1 else a2)
                    K[k, r, c] += ((cn if r == c else 0.0) + (ct - cn) * ar * ac) / dt
            for r in range(3):
                F[k, r] += K[k, r, 0] * d0 + K[k, r, 1] * d1 + K[k, r, 2] * d2
            e += 0.5 * (F[k, 0] * d0 + F[k, 1] * d1 + F[k, 2] * d2)
        for r in range(3):
            G[i, r, 0] += F[k, r] * pl[0]
            G[i, r, 1] += F[k, r] * pl[1]
            G[i, r, 2] += F[k, r] * pl[2]
            G[i, r, 3] += F[k, r]
    return e


@kernel
def contact_terms(m, pm, s, T, Tk, dt, G, F, K):
    """Penalty contact (Eq. 9, :func:`pbsim.contact.energy.contact_energy`: depth and normal from
    the scene's detection, every environment shape) at the contact points of the scene arrays
    ``s``, with the per-point ``pm.D1``, ``pm.D2``.  Adds dE/dx [p;1]^T to ``G``; returns the
    energy; point k's dE/dx and Hessian go to ``F[pm.npts + k]``, ``K[pm.npts + k]`` (after the
    drag points')."""
    e = 0.0
    k0 = pm.npts
    for k in range(s.npts):
        i = s.pt_body[k]
        pl = s.pt_local[k]
        Fk = F[k0 + k]
        e += contact_energy(s, k, pm.D1[k], pm.D2[k], pm.friction_ev, T[i], T[i, :, 3], Tk[i], Tk[i, :, 3], dt, Fk,
                            K[k0 + k])
        for r in range(3):
            G[i, r, 0] += Fk[r] * pl[0]
            G[i, r, 1] += Fk[r] * pl[1]
            G[i, r, 2] += Fk[r] * pl[2]
            G[i, r, 3] += Fk[r]
    return e


@kernel
def adjoint_gradient(m, T, G, xi, W, g):
    """Algorithm 1 (adjoint, O(N)): ``W_i = sum_subtree G_j T_j^T``; ``g_a = <hat(xi_a), W_body(a)>``."""
    for i in range(m.nb):
        for r in range(3):
            for c in range(3):
                W[i, r, c] = G[i, r, 0] * T[i, c, 0] + G[i, r, 1] * T[i, c, 1] + G[i, r, 2] * T[i, c, 2] \
                    + G[i, r, 3] * T[i, c, 3]
            W[i, r, 3] = G[i, r, 3]
    for i in range(m.nb - 1, -1, -1):
        par = m.parent[i]
        j0 = m.iv[i]
        for k in range(m.nvj[i]):
            g[j0 + k] = hat_dot(xi[j0 + k], W[i])
        if par >= 0:
            for r in range(3):
                for c in range(4):
                    W[par, r, c] += W[i, r, c]


@kernel
def hessian_second_order(m, xi, W, H, add):
    """Algorithm 2: the part of d2E/dd2 from the second derivatives of the poses, O(N^2).

    ``W`` must hold the subtree sums of :func:`adjoint_gradient`.  Adds to ``H`` (nv, nv) when
    ``add`` else overwrites."""
    if not add:
        for a in range(m.nv):
            for c in range(m.nv):
                H[a, c] = 0.0
    for i in range(m.nb):
        jt = m.jtype[i]
        j0 = m.iv[i]
        nvi = m.nvj[i]
        # inside the joint
        for ka in range(nvi):
            for kb in range(ka, nvi):
                a = j0 + ka
                c = j0 + kb
                if jt == FREE and (ka < 3 or kb < 3):
                    v = 0.0  # free joint: p += R d_lin is linear and independent of d_ang
                elif jt == BALL or jt == FREE:
                    v = 0.5 * (hat2_dot(xi[a], xi[c], W[i]) + hat2_dot(xi[c], xi[a], W[i]))
                else:
                    v = hat2_dot(xi[a], xi[c], W[i])
                H[a, c] += v
                if c != a:
                    H[c, a] += v
        # ancestors (on the left)
        anc = m.parent[i]
        while anc >= 0:
            ja = m.iv[anc]
            for ka in range(m.nvj[anc]):
                for kb in range(nvi):
                    v = hat2_dot(xi[ja + ka], xi[j0 + kb], W[i])
                    H[ja + ka, j0 + kb] += v
                    H[j0 + kb, ja + ka] += v
            anc = m.parent[anc]


@kernel
def composite_moments(m, pm, Ta, Tb, scale, C):
    """``C_i = scale * sum_subtree(i) T_j(q_a) M~_j T_j(q_b)^T`` (4x4; Algorithm 3's accumulated tensor)."""
    for i in range(m.nb):
        for r in range(4):
            for c in range(4):
                s = 0.0
                for k in range(4):
                    if r < 3:
                        tr = Ta[i, r, k]
                    else:
                        tr = 1.0 if k == 3 else 0.0
                    if tr == 0.0:
                        continue
                    for l in range(4):
                        if c < 3:
                            tc = Tb[i, c, l]
                        else:
                            tc = 1.0 if l == 3 else 0.0
                        s += tr * pm.Mt[i, k, l] * tc
                C[i, r, c] = scale * s
    for i in range(m.nb - 1, -1, -1):
        par = m.parent[i]
        if par >= 0:
            for r in range(4):
                for c in range(4):
                    C[par, r, c] += C[i, r, c]


@kernel
def gn_block(m, xa, xb, C, H, r0, c0, add):
    """``H[r0 + a, c0 + b] (+)= tr(hat(xa_a) C_deeper hat(xb_b)^T)``: Gauss-Newton / mixed block
    (Algorithm 3, O(N^2)).  With xa = xb and q_a = q_b this is M(q) * scale (without armature)."""
    if not add:
        for a in range(m.nv):
            for c in range(m.nv):
                H[r0 + a, c0 + c] = 0.0
    for i in range(m.nb):
        j0 = m.iv[i]
        nvi = m.nvj[i]
        for ka in range(nvi):
            for kb in range(nvi):
                H[r0 + j0 + ka, c0 + j0 + kb] += hat_pair(xa[j0 + ka], C[i], xb[j0 + kb])
        anc = m.parent[i]
        while anc >= 0:
            ja = m.iv[anc]
            for ka in range(m.nvj[anc]):
                for kb in range(nvi):
                    H[r0 + ja + ka, c0 + j0 + kb] += hat_pair(xa[ja + ka], C[i], xb[j0 + kb])
                    H[r0 + j0 + kb, c0 + ja + ka] += hat_pair(xa[j0 + kb], C[i], xb[ja + ka])
            anc = m.parent[anc]


@kernel
def point_pkp(Kk, x0, x1, x2, Wi):
    """``Wi += P^T K P`` (6x6) for a point at world ``x`` with the 3x3 ``K``: ``P = [A  I]``,
    ``A = -[x]x``, so that ``xi_c^T (P^T K P) xi_a`` is the point's ``J^T K J`` on two DOFs'
    twists (:func:`points_jtkj`)."""
    point_pkp2(Kk, x0, x1, x2, x0, x1, x2, Wi)


@kernel
def point_pkp2(Kk, x0, x1, x2, y0, y1, y2, Wi):
    """``Wi += P(x)^T K P(y)`` (6x6): :func:`point_pkp` with the rows' point ``x`` and the columns'
    ``y`` (a point at two collocation nodes)."""
    for r in range(3):
        # row r of K A(y), A = -[y]x = [[0, y2, -y1], [-y2, 0, y0], [y1, -y0, 0]]
        ka0 = -Kk[r, 1] * y2 + Kk[r, 2] * y1
        ka1 = Kk[r, 0] * y2 - Kk[r, 2] * y0
        ka2 = -Kk[r, 0] * y1 + Kk[r, 1] * y0
        Wi[3 + r, 0] += ka0
        Wi[3 + r, 1] += ka1
        Wi[3 + r, 2] += ka2
        for c in range(3):
            Wi[3 + r, 3 + c] += Kk[r, c]
    for c in range(3):
        # A(x)^T K: (A^T K)[r, c] = sum_j A[j, r] K[j, c]; A[:, 0] = (0, -x2, x1), A[:, 1] = (x2, 0, -x0),
        # A[:, 2] = (-x1, x0, 0)
        k0c = Kk[0, c]
        k1c = Kk[1, c]
        k2c = Kk[2, c]
        Wi[0, 3 + c] += -x2 * k1c + x1 * k2c
        Wi[1, 3 + c] += x2 * k0c - x0 * k2c
        Wi[2, 3 + c] += -x1 * k0c + x0 * k1c
    for c in range(3):
        # (K A(y))[:, c], then A(x)^T (K A(y))[:, c]
        if c == 0:
            z0, z1, z2 = -Kk[0, 1] * y2 + Kk[0, 2] * y1, -Kk[1, 1] * y2 + Kk[1, 2] * y1, -Kk[2, 1] * y2 + Kk[2, 2] * y1
        elif c == 1:
            z0, z1, z2 = Kk[0, 0] * y2 - Kk[0, 2] * y0, Kk[1, 0] * y2 - Kk[1, 2] * y0, Kk[2, 0] * y2 - Kk[2, 2] * y0
        else:
            z0, z1, z2 = -Kk[0, 0] * y1 + Kk[0, 1] * y0, -Kk[1, 0] * y1 + Kk[1, 1] * y0, -Kk[2, 0] * y1 + Kk[2, 1] * y0
        Wi[0, c] += -x2 * z1 + x1 * z2
        Wi[1, c] += x2 * z0 - x0 * z2
        Wi[2, c] += -x1 * z0 + x0 * z1


@kernel
def points_jtkj(m, npts, pt_body, pt_local, k0, T, xi, K, H, r0, Wb):
    """Add sum_k J_x^T K[k0 + k] J_x over the points (body ``pt_body[k]``, local ``pt_local[k]``):
    the point terms' Gauss-Newton Hessian, gathered per body.  A point at world ``x`` moves with
    ``P(x) xi`` for an ancestor twist ``xi = (w, u)``, ``P = [A  I]``, ``A = -[x]x`` (3x6), so the
    points of body ``i`` give ``xi_c^T W_i xi_a`` with ``W_i = sum_k P_k^T K_k P_k``
    ``= [[A^T K A, A^T K], [K A, K]]`` summed: O(1) per point into ``Wb[i]`` (nb, 6, 6 scratch),
    then O(depth^2) per touched body, so the cost does not grow with the points per body."""
    for i in range(m.nb):
        for r in range(6):
            for c in range(6):
                Wb[i, r, c] = 0.0
    for k in range(npts):
        Kk = K[k0 + k]
        nz = 0.0
        for r in range(3):
            for c in range(3):
                nz += abs(Kk[r, c])
        if nz == 0.0:
            continue
        i = pt_body[k]
        x0, x1, x2 = point_xyz(T, i, pt_local[k])
        point_pkp(Kk, x0, x1, x2, Wb[i])
    for i in range(m.nb):
        Wi = Wb[i]
        nz = 0.0
        for r in range(6):
            for c in range(6):
                nz += abs(Wi[r, c])
        if nz == 0.0:
            continue
        ja_body = i
        while ja_body >= 0:
            ja0 = m.iv[ja_body]
            for ka in range(m.nvj[ja_body]):
                a = ja0 + ka
                xa = xi[a]
                w0 = Wi[0, 0] * xa[0] + Wi[0, 1] * xa[1] + Wi[0, 2] * xa[2] + Wi[0, 3] * xa[3] + Wi[0, 4] * xa[4] + Wi[0, 5] * xa[5]
                w1 = Wi[1, 0] * xa[0] + Wi[1, 1] * xa[1] + Wi[1, 2] * xa[2] + Wi[1, 3] * xa[3] + Wi[1, 4] * xa[4] + Wi[1, 5] * xa[5]
                w2 = Wi[2, 0] * xa[0] + Wi[2, 1] * xa[1] + Wi[2, 2] * xa[2] + Wi[2, 3] * xa[3] + Wi[2, 4] * xa[4] + Wi[2, 5] * xa[5]
                w3 = Wi[3, 0] * xa[0] + Wi[3, 1] * xa[1] + Wi[3, 2] * xa[2] + Wi[3, 3] * xa[3] + Wi[3, 4] * xa[4] + Wi[3, 5] * xa[5]
                w4 = Wi[4, 0] * xa[0] + Wi[4, 1] * xa[1] + Wi[4, 2] * xa[2] + Wi[4, 3] * xa[3] + Wi[4, 4] * xa[4] + Wi[4, 5] * xa[5]
                w5 = Wi[5, 0] * xa[0] + Wi[5, 1] * xa[1] + Wi[5, 2] * xa[2] + Wi[5, 3] * xa[3] + Wi[5, 4] * xa[4] + Wi[5, 5] * xa[5]
                jb_body = i
                while jb_body >= 0:
                    jb0 = m.iv[jb_body]
                    for kb in range(m.nvj[jb_body]):
                        xc = xi[jb0 + kb]
                        H[r0 + jb0 + kb, r0 + a] += (xc[0] * w0 + xc[1] * w1 + xc[2] * w2 + xc[3] * w3 + xc[4] * w4
                                                     + xc[5] * w5)
                    jb_body = m.parent[jb_body]
            ja_body = m.parent[ja_body]


@kernel
def point_hessian(m, pm, T, xi, K, H, r0, Wb):
    """Add the drag points' J^T K J (:func:`points_jtkj`)."""
    points_jtkj(m, pm.npts, pm.pt_body, pm.pt_local, 0, T, xi, K, H, r0, Wb)


@kernel
def contact_hessian(m, pm, s, T, xi, K, H, r0, Wb):
    """Add the contact points' J^T K J (:func:`points_jtkj`; their K after the drag points')."""
    points_jtkj(m, s.npts, s.pt_body, s.pt_local, pm.npts, T, xi, K, H, r0, Wb)


@kernel
def contact_step_limit(m, s, T, xi, dx, frac):
    """Largest ``alpha`` in (0, 1] such that no contact point of the scene arrays ``s`` outside the
    environment at the current poses ``T`` sinks, along the linearised step ``alpha * dx``, deeper
    than ``frac`` times the depth the full step predicts for it (``xi``: world twists at ``T``;
    :func:`pbsim.contact.energy.contact_step_fraction`).  Eq. 9's energy is C1 but its curvature
    jumps from 0 to 2 (D1 + D2 |u|^2) when a point enters the environment, so a Newton step from
    outside overshoots into the stiff region; limiting it lands the point just inside, where the
    next step sees the contact curvature (a CCD-like step filter; the objective and its gradient
    are unchanged)."""
    alpha = 1.0
    for k in range(s.npts):
        i = s.pt_body[k]
        x0, x1, x2, dep0, n0, n1, n2 = contact_detect(s, k, T[i], T[i, :, 3])
        if dep0 > 0.0:
            continue
        # point velocity along dx: sum over ancestor DOFs of (w_a x x + u_a) dx_a
        v0 = 0.0
        v1 = 0.0
        v2 = 0.0
        j = i
        while j >= 0:
            jj = m.iv[j]
            for a in range(m.nvj[j]):
                x = xi[jj + a]
                sa = dx[jj + a]
                v0 += (x[1] * x2 - x[2] * x1 + x[3]) * sa
                v1 += (x[2] * x0 - x[0] * x2 + x[4]) * sa
                v2 += (x[0] * x1 - x[1] * x0 + x[5]) * sa
            j = m.parent[j]
        a = contact_step_fraction(dep0, n0 * v0 + n1 * v1 + n2 * v2, frac)
        if a < alpha:
            alpha = a
    return alpha
