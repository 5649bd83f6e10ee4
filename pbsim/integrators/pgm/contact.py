"""The PGM's contact set and the contact part of G, A and B (scene points, contact between bodies).

Against the environment a candidate is a scene point with NMDP's polytope
(:func:`pbsim.contact.nmdp.nmdp_point`) and ``A``'s contact part :func:`pgm_contact_jacobian`;
:func:`pgm_contact` sums both kinds into G (and with ``deriv`` into A, B) for both forms.

**Contact between bodies** (issue 28, notes/body_contact.md Sec. 3.4).  The contact set holds the
scene's points against the environment (candidate ``kp < s.npts``) and, when the scene has
body-body items (:mod:`pbsim.contact.pairs`), the body-body points (``kp = s.npts + k``) with signed
depth above ``-margin`` at ``q0`` or at the prediction, among the items the broadphase keeps with
the margin (:func:`pbsim.contact.depth.pair_candidates_state`).  Their buffer is bounded: at most
``max_contacts`` (option; memory per trajectory stays static), on overflow the deepest are kept,
``stats[S_OVER]`` counts the dropped, the step is flagged (converged 0, so ``rollout`` hands it to
:meth:`Integrator.step`, which warns; ``extra["contact_overflow"]``): never silent.  Fixed with the
set for the step: the item's box face (:func:`pbsim.contact.query.item_face`), the tangent basis'
sign ``sigma = sign(n . up)`` (a lower body's points against an upper body's underside have ``n =
-up``, the smooth basis' singular point: the basis of ``sigma n`` is smooth there:
:func:`pbsim.contact.nmdp.pair_basis`) and, against a box, cylinder or hull, the contact plane in
B's frame (:func:`pbsim.contact.nmdp.pair_plane`: the box distance with a face choice jumps where a
point deep along the face leaves through a side plane, which failed the projection's Newton steps).
The wrench ``v^i = (k d^3 + zeta)(n + mu t^i)`` (``mu`` the point's own, ``n`` out of B) acts on A
at ``a = c - r n`` and ``-v^i`` on B: ``G -= (J_A(a) - J_B(a))^T f`` and the rows of ``B^T``
through :func:`pbsim.contact.query.pair_force_jt`; ``A``'s contact part is
:func:`pgm_pair_jacobian` (the exact derivative at first order; zeroth order: f fixed in B's frame).
The body-body kernels are compiled only into runs whose scene has items (:data:`.integrator.PGM_FEATURES`: :data:`BODY_CONTACT`).
"""

from __future__ import annotations

import numpy as np

from pbsim.jit import kernel, unused
from pbsim.contact.depth import pair_candidates_state, predicted_depths_state
from pbsim.contact.nmdp import nmdp_pair_point, nmdp_point, pair_plane
from pbsim.contact.query import contact_detect, pair_force_jt, point_force_jt
from pbsim.integrators.pgm.problem import S_OVER


@kernel
def pgm_candidates(m, s, w, x, b, q0, v0, h):
    """The step's contact set (fixed for the step): points with signed depth above ``-margin`` at
    q0 or at ``q0 (+) h v0``, into ``x.act``; returns its size.  Candidate ``kp < s.npts`` is the
    scene point ``kp`` against the environment, ``kp >= s.npts`` the body-body point ``kp - s.npts``
    (:func:`pgm_pair_candidates`)."""
    predicted_depths_state(m, s, w, b, q0, v0, h, x.dq[b], x.qp[b], x.sdp[b])
    nc = 0
    for kp in range(s.npts):
        body = s.pt_body[kp]
        _x, _y, _z, sd, _nx, _ny, _nz = contact_detect(s, kp, w.Rw[b, body], w.pw[b, body])
        if sd > -x.margin or x.sdp[b, kp] > -x.margin:
            x.act[b, nc] = kp
            nc += 1
    if s.nitem > 0:
        nc += pgm_pair_candidates(m, s, w, x, b, q0, nc)
    return nc


@kernel
def pgm_pair_candidates(m, s, w, x, b, q0, nw):
    """The body-body part of the contact set (after the ``nw`` environment candidates): points with
    signed depth above ``-margin`` at q0 or at the prediction ``x.qp`` (:func:`pbsim.contact.depth.
    pair_candidates_state`: their item's face and basis sign are fixed for the step), at most
    ``x.npair``, the deepest kept; the largest number dropped by a (sub-)step goes to
    ``stats[S_OVER]`` (the step is then flagged, :func:`pgm_step`).  Returns how many it added."""
    n, over = pair_candidates_state(
        m, s, w, b, q0, x.qp[b], True, x.Tq[b], x.margin, x.F, nw, x.npair, x.act[b], x.cface[b], x.csig[b], x.csc[b]
    )
    if over > x.stats[b, S_OVER]:
        x.stats[b, S_OVER] = over
    Tq = x.Tq[b]
    for c in range(nw, nw + n):  # the contact planes of the step (used against boxes, cylinders, hulls)
        k = x.act[b, c] - s.npts
        it = s.pp_item[k]
        A = s.it_a[it]
        B = s.it_b[it]
        pair_plane(s, k, x.cface[b, c], Tq[A], Tq[A, :, 3], Tq[B], Tq[B, :, 3], x.cpl[b, c])
    return n


@kernel
def pgm_chain_columns(m, w, x, b, body):
    """The world columns of ``body``'s chain (body to root) into ``x.Jc[b]``: per DOF ``omega``
    (0-2), the velocity at the world origin ``v0 = R s_lin + p x omega`` (3-5), its body (6), its
    index (7) and ``R s_lin`` (9-11).  Returns their number."""
    Rw = w.Rw[b]
    pw = w.pw[b]
    Jc = x.Jc[b]
    nn = 0
    j = body
    while j >= 0:  # the chain's world columns at the origin: omega, v0 = R s_lin + p x omega
        j0 = m.iv[j]
        for kk in range(m.nvj[j]):
            sv = m.S[j, kk]
            ox = Rw[j, 0, 0] * sv[0] + Rw[j, 0, 1] * sv[1] + Rw[j, 0, 2] * sv[2]
            oy = Rw[j, 1, 0] * sv[0] + Rw[j, 1, 1] * sv[1] + Rw[j, 1, 2] * sv[2]
            oz = Rw[j, 2, 0] * sv[0] + Rw[j, 2, 1] * sv[1] + Rw[j, 2, 2] * sv[2]
            rx = Rw[j, 0, 0] * sv[3] + Rw[j, 0, 1] * sv[4] + Rw[j, 0, 2] * sv[5]
            ry = Rw[j, 1, 0] * sv[3] + Rw[j, 1, 1] * sv[4] + Rw[j, 1, 2] * sv[5]
            rz = Rw[j, 2, 0] * sv[3] + Rw[j, 2, 1] * sv[4] + Rw[j, 2, 2] * sv[5]
            px, py, pz = pw[j, 0], pw[j, 1], pw[j, 2]
            Jc[nn, 0], Jc[nn, 1], Jc[nn, 2] = ox, oy, oz
            Jc[nn, 3] = rx + py * oz - pz * oy
            Jc[nn, 4] = ry + pz * ox - px * oz
            Jc[nn, 5] = rz + px * oy - py * ox
            Jc[nn, 6] = j
            Jc[nn, 7] = j0 + kk
            Jc[nn, 9], Jc[nn, 10], Jc[nn, 11] = rx, ry, rz
            nn += 1
        j = m.parent[j]
    return nn


@kernel
def pgm_point_rows(m, w, x, b, ci, nn, ax, ay, az, fx, fy, fz):
    """From the chain columns (:func:`pgm_chain_columns`): ``x.G -= J_a^T f`` and candidate ``ci``'s
    rows of ``B^T``, ``-J_a^T v^i`` (its vertices ``x.Vt``), for the point ``a`` -- the numbers of
    :func:`pbsim.contact.query.point_force_jt` (the same products in the same order), one chain walk
    instead of ``1 + vx``."""
    V = x.vx
    nv = m.nv
    Jc = x.Jc[b]
    pw = w.pw[b]
    G = x.G[b]
    Vt = x.Vt[b, ci]
    for i in range(V):
        row = x.Bm[b, ci * V + i]
        for jj in range(nv):
            row[jj] = 0.0
    for kc in range(nn):
        j = np.int64(Jc[kc, 6])
        col = np.int64(Jc[kc, 7])
        dx = ax - pw[j, 0]
        dy = ay - pw[j, 1]
        dz = az - pw[j, 2]
        wx, wy, wz = Jc[kc, 0], Jc[kc, 1], Jc[kc, 2]
        ux = Jc[kc, 9] + wy * dz - wz * dy  # the point's velocity column at a
        uy = Jc[kc, 10] + wz * dx - wx * dz
        uz = Jc[kc, 11] + wx * dy - wy * dx
        G[col] += ux * -fx + uy * -fy + uz * -fz
        for i in range(V):
            x.Bm[b, ci * V + i, col] += ux * -Vt[i, 0] + uy * -Vt[i, 1] + uz * -Vt[i, 2]


@kernel
def pgm_contact_jacobian(m, w, x, b, nn, cx, cy, cz, ax, ay, az, r, fx, fy, fz, first, keep, A):
    """``A -= d(J^T f)/dtheta`` (f fixed; module docstring) for the force ``f`` at ``a`` (the
    sphere surface of centre ``c``, radius ``r``; ``x.Dn[b]`` = dn/dx at c) and, with ``first``,
    ``A -= J_a^T x.Dd[b] J_c`` (``Dd = sum_i w_i dv^i/dx``), with ``keep`` also into ``x.Ad[b]``
    (the first-order-only part); the chain's ``nn`` columns in ``x.Jc`` (:func:`pgm_chain_columns`)."""
    Jc = x.Jc[b]
    Dn = x.Dn[b]
    Dd = x.Dd[b]
    Ad = x.Ad[b]
    # the wrench [a x f; f] at the origin
    mx = ay * fz - az * fy
    my = az * fx - ax * fz
    mz = ax * fy - ay * fx
    for kc in range(nn):  # the moving joint (column of A)
        xw0, xw1, xw2 = Jc[kc, 0], Jc[kc, 1], Jc[kc, 2]
        xv0, xv1, xv2 = Jc[kc, 3], Jc[kc, 4], Jc[kc, 5]
        bk = Jc[kc, 6]
        col = np.int64(Jc[kc, 7])
        # dc = xi_w x c + xi_v; da = dc - r Dn dc
        dcx = xw1 * cz - xw2 * cy + xv0
        dcy = xw2 * cx - xw0 * cz + xv1
        dcz = xw0 * cy - xw1 * cx + xv2
        dax = dcx - r * (Dn[0, 0] * dcx + Dn[0, 1] * dcy + Dn[0, 2] * dcz)
        day = dcy - r * (Dn[1, 0] * dcx + Dn[1, 1] * dcy + Dn[1, 2] * dcz)
        daz = dcz - r * (Dn[2, 0] * dcx + Dn[2, 1] * dcy + Dn[2, 2] * dcz)
        ddx = Dd[0, 0] * dcx + Dd[0, 1] * dcy + Dd[0, 2] * dcz  # (sum_i w_i dv^i/dx) dc
        ddy = Dd[1, 0] * dcx + Dd[1, 1] * dcy + Dd[1, 2] * dcz
        ddz = Dd[2, 0] * dcx + Dd[2, 1] * dcy + Dd[2, 2] * dcz
        # row jc's entry as S_w . P_w + S_v . P_v (triple products): the point moves, (S_w x da) . f =
        # S_w . (da x f); S_j moves with joint k (below it on the chain), (xi x S_j) . [a x f; f] =
        # S_w . (m x xi_w + f x xi_v) + S_v . (f x xi_w); first order, (S_v + S_w x a) . dd =
        # S_v . dd + S_w . (a x dd)
        ew0 = day * fz - daz * fy
        ew1 = daz * fx - dax * fz
        ew2 = dax * fy - day * fx
        mw0 = my * xw2 - mz * xw1 + fy * xv2 - fz * xv1 + ew0
        mw1 = mz * xw0 - mx * xw2 + fz * xv0 - fx * xv2 + ew1
        mw2 = mx * xw1 - my * xw0 + fx * xv1 - fy * xv0 + ew2
        mv0 = fy * xw2 - fz * xw1
        mv1 = fz * xw0 - fx * xw2
        mv2 = fx * xw1 - fy * xw0
        fw0 = ay * ddz - az * ddy
        fw1 = az * ddx - ax * ddz
        fw2 = ax * ddy - ay * ddx
        for jc in range(nn):  # the torque row
            sw0, sw1, sw2 = Jc[jc, 0], Jc[jc, 1], Jc[jc, 2]
            sv0, sv1, sv2 = Jc[jc, 3], Jc[jc, 4], Jc[jc, 5]
            row = np.int64(Jc[jc, 7])
            if Jc[jc, 6] >= bk:
                t = sw0 * mw0 + sw1 * mw1 + sw2 * mw2 + sv0 * mv0 + sv1 * mv1 + sv2 * mv2
            else:
                t = sw0 * ew0 + sw1 * ew1 + sw2 * ew2
            if first:  # J_a^T (Dd dc)
                tf = sw0 * fw0 + sw1 * fw1 + sw2 * fw2 + sv0 * ddx + sv1 * ddy + sv2 * ddz
                t += tf
                if keep:
                    Ad[row, col] -= tf
            A[row, col] -= t


@kernel
def pgm_pair_jacobian(
    m, w, x, b, A, B, lca, cx, cy, cz, nx, ny, nz, ax, ay, az, r, fx, fy, fz, gx, gy, gz, first, keep, Am
):
    """``Am -= d(J_rel(a)^T f)/dtheta`` for a body-body point (:func:`pgm_pair_point`): the force
    ``f`` on body A at ``a = c - r n`` and ``-f`` on body B (``c``: the point's sphere centre on A,
    ``n``: the normal out of B's shape at ``y = T_B^-1 c``).  With ``s_a = +1`` on A's chain below
    the bodies' lowest common ancestor ``lca``, ``-1`` on B's, the row of DOF ``a`` is ``tau_a = s_a
    (w_a x a + u_a) . f`` and its derivative along DOF ``c`` (world twist ``xi_c = (w_c, u_c)``,
    which moves A when on A's chain or above ``lca``, B when on B's or above)::

        d tau_a = s_a [ (xi_c x xi_a) . [a x f; f]   (c at or above a on a's chain: the column moves)
                      + (w_a x da) . f + (w_a x a + u_a) . df ]
        R_B dy = s_c P(c) xi_c,  P(c) xi = w x c + u          (c relative to B; s_c = 0 above lca)
        dn = [moves B] w_c x n + Dn R_B dy,  dsd = -n . R_B dy
        da = [moves A] P(c) xi_c - r dn
        df = g dsd + Nn dn                                    (first order, Eq. 7)
        df = [moves B] w_c x f                                (zeroth order, Eq. 10: f fixed in B's frame)

    ``Dn`` = ``x.Dn[b]`` (the shape's curvature, world), ``Nn`` = ``x.Dd[b]`` = ``sum_i w_i dv^i/dn``
    and ``g`` = ``sum_i w_i dv^i/dsd``.  The first order is the exact derivative of G(theta): the
    vertices are functions of y and of n = R_B nB(y) (their tangent basis is built from n in the
    world's up frame, so f is not exactly fixed in B's frame; the zeroth order's reading drops
    only that twist of the basis and the dependence on y).  With B the world (``lca = -1``, no B
    side) this is :func:`pgm_contact_jacobian`.  Columns: A's chain to the root (flag 1 below
    ``lca``, 3 from ``lca`` up) and B's chain below ``lca`` (flag 2), in ``x.Jc`` (columns 0-8 of its 12).  With
    ``keep`` (and ``first``) the first order's part less the zeroth order's also goes to ``x.Ad[b]``."""
    Rw = w.Rw[b]
    pw = w.pw[b]
    Jc = x.Jc[b]
    Dn = x.Dn[b]
    Nn = x.Dd[b]
    Ad = x.Ad[b]
    nn = 0
    for side in range(2):
        j = A if side == 0 else B
        fl = 1 if side == 0 else 2
        while j >= 0 and not (side == 1 and j == lca):
            if side == 0 and j == lca:
                fl = 3
            j0 = m.iv[j]
            for kk in range(m.nvj[j]):
                sv = m.S[j, kk]
                ox = Rw[j, 0, 0] * sv[0] + Rw[j, 0, 1] * sv[1] + Rw[j, 0, 2] * sv[2]
                oy = Rw[j, 1, 0] * sv[0] + Rw[j, 1, 1] * sv[1] + Rw[j, 1, 2] * sv[2]
                oz = Rw[j, 2, 0] * sv[0] + Rw[j, 2, 1] * sv[1] + Rw[j, 2, 2] * sv[2]
                px, py, pz = pw[j, 0], pw[j, 1], pw[j, 2]
                Jc[nn, 0], Jc[nn, 1], Jc[nn, 2] = ox, oy, oz
                Jc[nn, 3] = Rw[j, 0, 0] * sv[3] + Rw[j, 0, 1] * sv[4] + Rw[j, 0, 2] * sv[5] + py * oz - pz * oy
                Jc[nn, 4] = Rw[j, 1, 0] * sv[3] + Rw[j, 1, 1] * sv[4] + Rw[j, 1, 2] * sv[5] + pz * ox - px * oz
                Jc[nn, 5] = Rw[j, 2, 0] * sv[3] + Rw[j, 2, 1] * sv[4] + Rw[j, 2, 2] * sv[5] + px * oy - py * ox
                Jc[nn, 6] = j
                Jc[nn, 7] = j0 + kk
                Jc[nn, 8] = fl
                nn += 1
            j = m.parent[j]
    mx = ay * fz - az * fy  # [a x f; f]
    my = az * fx - ax * fz
    mz = ax * fy - ay * fx
    for kc in range(nn):  # the moving DOF (column of A)
        xw0, xw1, xw2 = Jc[kc, 0], Jc[kc, 1], Jc[kc, 2]
        xv0, xv1, xv2 = Jc[kc, 3], Jc[kc, 4], Jc[kc, 5]
        bk = Jc[kc, 6]
        col = np.int64(Jc[kc, 7])
        fc = np.int64(Jc[kc, 8])
        mA = (fc & 1) != 0
        mB = (fc & 2) != 0
        sc = (1.0 if mA else 0.0) - (1.0 if mB else 0.0)
        vx_ = xw1 * cz - xw2 * cy + xv0  # P(c) xi_c
        vy_ = xw2 * cx - xw0 * cz + xv1
        vz_ = xw0 * cy - xw1 * cx + xv2
        ry0, ry1, ry2 = sc * vx_, sc * vy_, sc * vz_  # R_B dy
        dn0 = Dn[0, 0] * ry0 + Dn[0, 1] * ry1 + Dn[0, 2] * ry2
        dn1 = Dn[1, 0] * ry0 + Dn[1, 1] * ry1 + Dn[1, 2] * ry2
        dn2 = Dn[2, 0] * ry0 + Dn[2, 1] * ry1 + Dn[2, 2] * ry2
        if mB:
            dn0 += xw1 * nz - xw2 * ny
            dn1 += xw2 * nx - xw0 * nz
            dn2 += xw0 * ny - xw1 * nx
        da0, da1, da2 = -r * dn0, -r * dn1, -r * dn2
        if mA:
            da0 += vx_
            da1 += vy_
            da2 += vz_
        if mB:  # the zeroth order's df
            ez0 = xw1 * fz - xw2 * fy
            ez1 = xw2 * fx - xw0 * fz
            ez2 = xw0 * fy - xw1 * fx
        else:
            ez0, ez1, ez2 = 0.0, 0.0, 0.0
        if first:
            dsd = -(nx * ry0 + ny * ry1 + nz * ry2)
            df0 = gx * dsd + Nn[0, 0] * dn0 + Nn[0, 1] * dn1 + Nn[0, 2] * dn2
            df1 = gy * dsd + Nn[1, 0] * dn0 + Nn[1, 1] * dn1 + Nn[1, 2] * dn2
            df2 = gz * dsd + Nn[2, 0] * dn0 + Nn[2, 1] * dn1 + Nn[2, 2] * dn2
        else:
            df0, df1, df2 = ez0, ez1, ez2
        for jc in range(nn):  # the torque row: DOFs below lca only
            fr = np.int64(Jc[jc, 8])
            if fr == 3:
                continue
            sw0, sw1, sw2 = Jc[jc, 0], Jc[jc, 1], Jc[jc, 2]
            sv0, sv1, sv2 = Jc[jc, 3], Jc[jc, 4], Jc[jc, 5]
            row = np.int64(Jc[jc, 7])
            t = 0.0
            if (fr & fc) != 0 and Jc[jc, 6] >= bk:  # S_j moves with joint k: (xi x S_j) . [a x f; f]
                cw0 = xw1 * sw2 - xw2 * sw1
                cw1 = xw2 * sw0 - xw0 * sw2
                cw2 = xw0 * sw1 - xw1 * sw0
                cv0 = xw1 * sv2 - xw2 * sv1 + xv1 * sw2 - xv2 * sw1
                cv1 = xw2 * sv0 - xw0 * sv2 + xv2 * sw0 - xv0 * sw2
                cv2 = xw0 * sv1 - xw1 * sv0 + xv0 * sw1 - xv1 * sw0
                t += cw0 * mx + cw1 * my + cw2 * mz + cv0 * fx + cv1 * fy + cv2 * fz
            # the point moves: (S_w x da) . f
            t += (sw1 * da2 - sw2 * da1) * fx + (sw2 * da0 - sw0 * da2) * fy + (sw0 * da1 - sw1 * da0) * fz
            # the force changes: (S_w x a + S_v) . df
            ux = sv0 + sw1 * az - sw2 * ay
            uy = sv1 + sw2 * ax - sw0 * az
            uz = sv2 + sw0 * ay - sw1 * ax
            t += ux * df0 + uy * df1 + uz * df2
            td = ux * (df0 - ez0) + uy * (df1 - ez1) + uz * (df2 - ez2) if keep else 0.0
            if fr == 1:
                Am[row, col] -= t
                if keep:
                    Ad[row, col] -= td
            else:
                Am[row, col] += t
                if keep:
                    Ad[row, col] += td


@kernel
def pgm_pair_point(m, s, w, x, b, ci, k, wts, deriv, first, keep):
    """Candidate ``ci``, the body-body point ``k``, in :func:`pgm_contact`: ``x.G -= J_rel(a)^T f``
    (``f = sum_i w_i v^i`` on A at the sphere surface ``a = c - r n``, ``-f`` on B:
    :func:`pbsim.contact.query.pair_force_jt`), with ``deriv`` the rows of ``B^T`` (``-J_rel(a)^T
    v^i``), its capacity and ``A -= d(J_rel^T f)/dtheta`` (:func:`pgm_pair_jacobian`).  The vertices
    (:func:`pbsim.contact.nmdp.nmdp_pair_point`) take the point's own mu, its item's face and the
    basis sign chosen with the contact set."""
    nv = m.nv
    V = x.vx
    it = s.pp_item[k]
    A = s.it_a[it]
    B = s.it_b[it]
    lca = s.it_lca[it]
    Vt = x.Vt[b, ci]
    Dv = x.Dv[b, ci]
    cx, cy, cz, _sd, nx, ny, nz, cap, dcap = nmdp_pair_point(
        s, x.F, x.k, x.zeta, V, k, x.cface[b, ci], x.csig[b, ci], x.cpl[b, ci], w.Rw[b, A], w.pw[b, A], w.Rw[b, B],
        w.pw[b, B], Vt, Dv, x.T1[b], x.T2[b], x.Dn[b])  # fmt: skip
    x.cap[b, ci] = cap
    r = s.pp_radius[k]
    ax, ay, az = cx - r * nx, cy - r * ny, cz - r * nz
    fx, fy, fz = 0.0, 0.0, 0.0
    for i in range(V):
        wi = wts[ci * V + i]
        fx += wi * Vt[i, 0]
        fy += wi * Vt[i, 1]
        fz += wi * Vt[i, 2]
    pair_force_jt(m, w, b, A, B, lca, ax, ay, az, -fx, -fy, -fz, x.G[b])
    if not deriv:
        return
    for i in range(V):
        row = x.Bm[b, ci * V + i]
        for j in range(nv):
            row[j] = 0.0
        pair_force_jt(m, w, b, A, B, lca, ax, ay, az, -Vt[i, 0], -Vt[i, 1], -Vt[i, 2], row)
    Nn = x.Dd[b]
    for rr in range(3):
        for cc in range(3):
            sdd = 0.0
            for i in range(V):
                sdd += wts[ci * V + i] * Dv[i, rr, cc]
            Nn[rr, cc] = sdd
    q = dcap / cap if cap > 0.0 else 0.0  # sum_i w_i dv^i/dsd = (dcap / cap) f
    pgm_pair_jacobian(
        m, w, x, b, A, B, lca, cx, cy, cz, nx, ny, nz, ax, ay, az, r, fx, fy, fz, q * fx, q * fy, q * fz, first, keep,
        x.A[b],
    )


@kernel
def pgm_contact(m, s, w, x, b, wts, nc, deriv, first):
    """The contact part of G (both forms): ``x.G -= sum_x J_x^T v_x(theta) w_x`` (Eq. 6 / 12) over
    the step's ``nc`` candidates, and with ``deriv`` the rows ``x.Bm`` of ``B^T = -[J_x^T v_x^i]^T``
    (Eq. 7), the capacities ``x.cap`` and ``A -= d(J^T f)/dtheta`` (:func:`pgm_contact_jacobian`;
    the vertex derivative with ``first``, Eq. 7 vs Eq. 10); body-body candidates through
    :func:`pgm_pair_point`.  The world poses in ``w`` must be those of theta (``fk_state``).  An
    exact-A evaluation of a zeroth-order form's projection (``first`` with ``x.zo == 2``) keeps the
    first-order-only part in ``x.Ad`` (:func:`.project.pgm_project` then has Eq. 10's A as
    ``A - Ad`` without evaluating again)."""
    nv = m.nv
    G = x.G[b]
    A = x.A[b]
    V = x.vx
    Dd = x.Dd[b]
    keep = deriv and first and x.zo == 2
    if keep:
        Ad = x.Ad[b]
        for r0 in range(nv):
            for c0 in range(nv):
                Ad[r0, c0] = 0.0
    for ci in range(nc):
        kp = x.act[b, ci]
        if kp >= s.npts:  # a body-body point
            pgm_pair_point(m, s, w, x, b, ci, kp - s.npts, wts, deriv, first, keep)
            continue
        body = s.pt_body[kp]
        Vt = x.Vt[b, ci]
        Dv = x.Dv[b, ci]
        cx, cy, cz, _sd, nx, ny, nz, cap = nmdp_point(
            s, x.F, x.k, x.zeta, x.mu, V, True, kp, w.Rw[b, body], w.pw[b, body], Vt, Dv, x.T1[b], x.T2[b], x.Dn[b]
        )
        x.cap[b, ci] = cap
        r = s.pt_radius[kp]
        ax, ay, az = cx - r * nx, cy - r * ny, cz - r * nz
        fx, fy, fz = 0.0, 0.0, 0.0
        for i in range(V):
            wi = wts[ci * V + i]
            fx += wi * Vt[i, 0]
            fy += wi * Vt[i, 1]
            fz += wi * Vt[i, 2]
        if not deriv:
            point_force_jt(m, w, b, body, ax, ay, az, -fx, -fy, -fz, G)
        else:
            nn = pgm_chain_columns(m, w, x, b, body)
            pgm_point_rows(m, w, x, b, ci, nn, ax, ay, az, fx, fy, fz)
            for rr in range(3):
                for cc in range(3):
                    sdd = 0.0
                    if first:
                        for i in range(V):
                            sdd += wts[ci * V + i] * Dv[i, rr, cc]
                    Dd[rr, cc] = sdd
            pgm_contact_jacobian(m, w, x, b, nn, cx, cy, cz, ax, ay, az, r, fx, fy, fz, first, keep, A)


@kernel
def no_pairs(*args):
    """Stands in for the body-body candidates in a run without body-body items (:data:`BODY_CONTACT`)."""
    return 0


# the body-body kernels, compiled only into runs whose scene has body-body items
# (pbsim.jit.Variants; StepSpec.features / used)
BODY_CONTACT = {"pgm_pair_candidates": no_pairs, "pgm_pair_point": unused}
