"""Contact queries (one numba source for CPU and CUDA): environment signed distance and normal,
and per contact point world position, penetration depth ``d >= 0``, normal ``n`` and ``dd/dv``.

:func:`contact_detect` is the one detection every contact model calls (the penalty forces of
:mod:`.penalty`, the PBAD energy of :mod:`.energy`, :func:`contact_query_state`): for contact
point ``k`` on its body at any pose, its world position ``x``, signed depth ``r - phi(x)`` and
normal, for every environment shape (:func:`env_sdf`).
``d = max(0, r - phi(x))`` for a contact point at world position ``x`` with radius ``r`` (the
offset surface of a sphere/capsule); ``n = grad phi(x)`` (unit, out of the environment).
``dd/dv = -n^T J_lin(x)`` where ``J_lin`` is the point's linear-velocity Jacobian (as
``pbsim.dynamics.jacobian.point_jacobian`` rows 3-5; v in the body-frame tangent space), which is
the exact derivative of d wherever d > 0 (grad phi = n inside a grid cell / analytic shape).
"""

import numpy as np
from numba import prange

from pbsim.jit import kernel
from pbsim.contact.sdf import (_normalize, sdf_box, sdf_capsule, sdf_cylinder, sdf_ellipsoid,  # noqa: F401
                               sdf_heightfield, sdf_heightfield_posed, sdf_hull, sdf_sphere)
from pbsim.contact.sdf_grid import grid_sample
from pbsim.dynamics.kinematics import fk_state

BIG = 1.0e30


@kernel
def env_sdf(s, x, y, z, mask):
    """Union of the environment shapes at (x, y, z) that ``mask`` lets in: (phi, nx, ny, nz); phi =
    BIG if none.  ``mask`` (W,) int64: bit ``e & 63`` of word ``e >> 6`` for the e-th shape in the
    packed order (planes, spheres, boxes, capsules, heightfields, grids, cylinders, ellipsoids);
    ``s.env_all`` lets every
    shape in (the contact rules: :mod:`pbsim.contact.filter`)."""
    best, bx, by, bz = BIG, 0.0, 0.0, 1.0
    e = 0
    for i in range(s.env_plane.shape[0]):
        if (mask[e >> 6] >> (e & 63)) & 1:
            r = s.env_plane[i]
            phi = r[0] * x + r[1] * y + r[2] * z - r[3]
            if phi < best:
                best, bx, by, bz = phi, r[0], r[1], r[2]
        e += 1
    for i in range(s.env_sphere.shape[0]):
        if (mask[e >> 6] >> (e & 63)) & 1:
            phi, nx, ny, nz = sdf_sphere(s.env_sphere[i], x, y, z)
            if phi < best:
                best, bx, by, bz = phi, nx, ny, nz
        e += 1
    for i in range(s.env_box.shape[0]):
        if (mask[e >> 6] >> (e & 63)) & 1:
            phi, nx, ny, nz = sdf_box(s.env_box[i], x, y, z)
            if phi < best:
                best, bx, by, bz = phi, nx, ny, nz
        e += 1
    for i in range(s.env_capsule.shape[0]):
        if (mask[e >> 6] >> (e & 63)) & 1:
            phi, nx, ny, nz = sdf_capsule(s.env_capsule[i], x, y, z)
            if phi < best:
                best, bx, by, bz = phi, nx, ny, nz
        e += 1
    for i in range(s.hf_meta.shape[0]):
        if (mask[e >> 6] >> (e & 63)) & 1:
            if s.hf_meta[i, 3] == 0:
                phi, nx, ny, nz = sdf_heightfield(s.hf_meta[i], s.hf_geom[i], s.hf_data, x, y, z)
            else:  # posed, bounded, triangles (MJCF hfields)
                phi, nx, ny, nz = sdf_heightfield_posed(s.hf_meta[i], s.hf_geom[i], s.hf_data, x, y, z)
            if phi < best:
                best, bx, by, bz = phi, nx, ny, nz
        e += 1
    for i in range(s.gr_meta.shape[0]):
        if (mask[e >> 6] >> (e & 63)) & 1:
            mt = s.gr_meta[i]
            ge = s.gr_geom[i]
            phi, gx, gy, gz = grid_sample(s.gr_data, mt[0], mt[1], mt[2], mt[3], ge[0], ge[1], ge[2], ge[3], x, y, z)
            if phi < best:
                best = phi
                bx, by, bz = _normalize(gx, gy, gz)
        e += 1
    for i in range(s.env_cylinder.shape[0]):
        if (mask[e >> 6] >> (e & 63)) & 1:
            phi, nx, ny, nz = sdf_cylinder(s.env_cylinder[i], x, y, z)
            if phi < best:
                best, bx, by, bz = phi, nx, ny, nz
        e += 1
    for i in range(s.env_ellipsoid.shape[0]):
        if (mask[e >> 6] >> (e & 63)) & 1:
            phi, nx, ny, nz = sdf_ellipsoid(s.env_ellipsoid[i], x, y, z)
            if phi < best:
                best, bx, by, bz = phi, nx, ny, nz
        e += 1
    return best, bx, by, bz


@kernel
def shape_sdf(s, j, x, y, z):
    """Signed distance and normal of body shape ``j`` (:mod:`pbsim.contact.shapes`) at (x, y, z)
    given in its body's frame (the normal in that frame too)."""
    kind = s.shp_kind[j]
    e = s.shp_row[j]
    if kind == 2:
        return sdf_box(e, x, y, z)
    if kind == 0:
        return sdf_sphere(e, x, y, z)
    if kind == 1:
        return sdf_capsule(e, x, y, z)
    if kind == 3:
        return sdf_cylinder(e, x, y, z)
    if kind == 5:
        return sdf_ellipsoid(e, x, y, z)
    return sdf_hull(s.hull_plane, int(e[0]), int(e[1]), x, y, z)


@kernel(parallel=True)
def env_sdf_points(s, X, out):
    """Batch query: ``out[i] = (phi, nx, ny, nz)`` at points ``X[i]``."""
    for i in prange(X.shape[0]):
        p, a, b, c = env_sdf(s, X[i, 0], X[i, 1], X[i, 2], s.env_all)
        out[i, 0] = p
        out[i, 1] = a
        out[i, 2] = b
        out[i, 3] = c


@kernel
def contact_detect(s, k, R, p):
    """The contact detection: contact point k on its body at world pose ``(R, p)`` (``R`` indexed
    ``[r, c]`` for c < 3, e.g. a 3x3 rotation or a 3x4 pose; ``p`` (3,)).  Returns ``(x, y, z, sd,
    nx, ny, nz)``: world point ``x = p + R l_k``, signed depth ``sd = r_k - phi(x)`` (the depth is
    ``d = max(0, sd)``, in contact when ``sd > 0``) and the environment normal ``n = grad phi(x)``
    (:func:`env_sdf`: every environment shape)."""
    l = s.pt_local[k]
    x = p[0] + R[0, 0] * l[0] + R[0, 1] * l[1] + R[0, 2] * l[2]
    y = p[1] + R[1, 0] * l[0] + R[1, 1] * l[1] + R[1, 2] * l[2]
    z = p[2] + R[2, 0] * l[0] + R[2, 1] * l[1] + R[2, 2] * l[2]
    phi, nx, ny, nz = env_sdf(s, x, y, z, s.pt_envmask[k])
    return x, y, z, s.pt_radius[k] - phi, nx, ny, nz


@kernel
def chain_force_jt(m, w, b, body, stop, px, py, pz, fx, fy, fz, out):
    """``out += J_lin(x)^T f`` over the DOFs of ``body`` and its ancestors below ``stop`` (-1: all
    of them): a world force f at world point x (no scratch)."""
    Rw = w.Rw[b]
    pw = w.pw[b]
    j = body
    while j != stop:
        j0 = m.iv[j]
        dx = px - pw[j, 0]
        dy = py - pw[j, 1]
        dz = pz - pw[j, 2]
        for k in range(m.nvj[j]):
            s = m.S[j, k]
            wx = Rw[j, 0, 0] * s[0] + Rw[j, 0, 1] * s[1] + Rw[j, 0, 2] * s[2]
            wy = Rw[j, 1, 0] * s[0] + Rw[j, 1, 1] * s[1] + Rw[j, 1, 2] * s[2]
            wz = Rw[j, 2, 0] * s[0] + Rw[j, 2, 1] * s[1] + Rw[j, 2, 2] * s[2]
            vx = Rw[j, 0, 0] * s[3] + Rw[j, 0, 1] * s[4] + Rw[j, 0, 2] * s[5] + wy * dz - wz * dy
            vy = Rw[j, 1, 0] * s[3] + Rw[j, 1, 1] * s[4] + Rw[j, 1, 2] * s[5] + wz * dx - wx * dz
            vz = Rw[j, 2, 0] * s[3] + Rw[j, 2, 1] * s[4] + Rw[j, 2, 2] * s[5] + wx * dy - wy * dx
            out[j0 + k] += vx * fx + vy * fy + vz * fz
        j = m.parent[j]


@kernel
def point_force_jt(m, w, b, body, px, py, pz, fx, fy, fz, out):
    """``out += J_lin(x)^T f`` for a world force f at world point x on ``body`` (no scratch).
    With f = n this is ``-dd/dv`` (J as in ``point_jacobian``, rows 3-5)."""
    chain_force_jt(m, w, b, body, -1, px, py, pz, fx, fy, fz, out)


@kernel
def pair_force_jt(m, w, b, A, B, lca, px, py, pz, fx, fy, fz, out):
    """``out += (J_A(x) - J_B(x))^T f``: a world force f at world point x acting on body ``A`` and
    its reaction ``-f`` on body ``B`` (Newton's third law).  The relative Jacobian is zero on the
    DOFs at and above their lowest common ancestor ``lca``, which are never touched."""
    chain_force_jt(m, w, b, A, lca, px, py, pz, fx, fy, fz, out)
    chain_force_jt(m, w, b, B, lca, px, py, pz, -fx, -fy, -fz, out)


@kernel
def item_culled(s, it, RA, pA, RB, pB, extra):
    """The broadphase of body-body item ``it`` (:mod:`pbsim.contact.pairs`): True when the bounding
    sphere of its points (on body A at pose ``(RA, pA)``) and that of its shape (on B at
    ``(RB, pB)``) are more than ``extra`` apart (poses as :func:`contact_detect` takes them)."""
    c = s.it_sphere[it]
    dx = pA[0] + RA[0, 0] * c[0] + RA[0, 1] * c[1] + RA[0, 2] * c[2]
    dy = pA[1] + RA[1, 0] * c[0] + RA[1, 1] * c[1] + RA[1, 2] * c[2]
    dz = pA[2] + RA[2, 0] * c[0] + RA[2, 1] * c[1] + RA[2, 2] * c[2]
    dx -= pB[0] + RB[0, 0] * c[4] + RB[0, 1] * c[5] + RB[0, 2] * c[6]
    dy -= pB[1] + RB[1, 0] * c[4] + RB[1, 1] * c[5] + RB[1, 2] * c[6]
    dz -= pB[2] + RB[2, 0] * c[4] + RB[2, 1] * c[5] + RB[2, 2] * c[6]
    r = c[3] + c[7] + extra
    return dx * dx + dy * dy + dz * dz > r * r


@kernel
def pair_local(s, k, RA, pA, RB, pB):
    """Body-body point ``k`` at the poses of its bodies: its world position ``x`` and its position
    ``y = R_B^T (x - p_B)`` in the frame of the shape's body B."""
    l = s.pp_local[k]
    x = pA[0] + RA[0, 0] * l[0] + RA[0, 1] * l[1] + RA[0, 2] * l[2]
    y = pA[1] + RA[1, 0] * l[0] + RA[1, 1] * l[1] + RA[1, 2] * l[2]
    z = pA[2] + RA[2, 0] * l[0] + RA[2, 1] * l[1] + RA[2, 2] * l[2]
    dx, dy, dz = x - pB[0], y - pB[1], z - pB[2]
    return (x, y, z, RB[0, 0] * dx + RB[1, 0] * dy + RB[2, 0] * dz, RB[0, 1] * dx + RB[1, 1] * dy + RB[2, 1] * dz,
            RB[0, 2] * dx + RB[1, 2] * dy + RB[2, 2] * dz)


@kernel
def item_face(s, it, RA, pA, RB, pB):
    """The face of item ``it``'s box through which its points are pushed out, when its shape is a
    box: a separating-axis choice over the box's three face axes -- the axis along which the
    interval of the item's points (on A, with their radii) overlaps the box's least -- and the
    side A is on.  Returns ``2 axis + (0: + side, 1: - side)``, or -1 (not a box; no overlap).
    Why: a point inside a box takes its nearest face, and points lying on a side plane (two equal
    boxes stacked: every top-edge point of the lower one lies on the upper one's side faces) got
    a zero depth with a sideways normal while 2.5 mm under the bottom face; the stack drifted
    sideways and toppled.  MuJoCo's box-box test likewise picks one separating axis per pair."""
    j = s.it_shape[it]
    if s.shp_kind[j] != 2:
        return -1
    e = s.shp_row[j]
    lo0, lo1, lo2 = 1e30, 1e30, 1e30
    hi0, hi1, hi2 = -1e30, -1e30, -1e30
    for k in range(s.it_start[it], s.it_start[it + 1]):
        _x, _y, _z, y0, y1, y2 = pair_local(s, k, RA, pA, RB, pB)
        d0, d1, d2 = y0 - e[9], y1 - e[10], y2 - e[11]
        r = s.pp_radius[k]
        l0 = e[0] * d0 + e[3] * d1 + e[6] * d2  # in the box's frame
        l1 = e[1] * d0 + e[4] * d1 + e[7] * d2
        l2 = e[2] * d0 + e[5] * d1 + e[8] * d2
        lo0, hi0 = min(lo0, l0 - r), max(hi0, l0 + r)
        lo1, hi1 = min(lo1, l1 - r), max(hi1, l1 + r)
        lo2, hi2 = min(lo2, l2 - r), max(hi2, l2 + r)
    best = 1e30
    face = -1
    for a in range(3):
        lo = lo0 if a == 0 else (lo1 if a == 1 else lo2)
        hi = hi0 if a == 0 else (hi1 if a == 1 else hi2)
        h = e[12 + a]
        ov = min(hi, h) - max(lo, -h)
        if ov < 0.0:
            return -1
        if ov < best:
            best = ov
            face = 2 * a if lo + hi >= 0.0 else 2 * a + 1
    return face


@kernel
def face_sdf(s, j, face, x, y, z):
    """:func:`shape_sdf` of body shape ``j`` with the face choice of :func:`item_face`: a point
    inside a box is pushed out through that face (depth along its normal); elsewhere the shape's
    own distance."""
    if face >= 0:
        e = s.shp_row[j]
        dx, dy, dz = x - e[9], y - e[10], z - e[11]
        l0 = e[0] * dx + e[3] * dy + e[6] * dz
        l1 = e[1] * dx + e[4] * dy + e[7] * dz
        l2 = e[2] * dx + e[5] * dy + e[8] * dz
        if abs(l0) < e[12] and abs(l1) < e[13] and abs(l2) < e[14]:
            a = face >> 1
            sg = 1.0 if (face & 1) == 0 else -1.0
            la = l0 if a == 0 else (l1 if a == 1 else l2)
            return sg * la - e[12 + a], sg * e[a], sg * e[3 + a], sg * e[6 + a]
    return shape_sdf(s, j, x, y, z)


@kernel
def pair_detect(s, k, RA, pA, RB, pB, face):
    """The detection between bodies (:func:`contact_detect`'s sibling): body-body point ``k``
    (:mod:`pbsim.contact.pairs`) on body A at pose ``(RA, pA)`` against its item's shape on body B
    at ``(RB, pB)``, queried in B's frame (``face``: its item's :func:`item_face`).  Returns ``(x,
    y, z, sd, nx, ny, nz)``: the world point, the signed depth ``r_k - phi_B(y)`` and the world
    normal ``R_B grad phi_B(y)`` out of B."""
    x, y, z, ly0, ly1, ly2 = pair_local(s, k, RA, pA, RB, pB)
    phi, m0, m1, m2 = face_sdf(s, s.it_shape[s.pp_item[k]], face, ly0, ly1, ly2)
    return (x, y, z, s.pp_radius[k] - phi, RB[0, 0] * m0 + RB[0, 1] * m1 + RB[0, 2] * m2,
            RB[1, 0] * m0 + RB[1, 1] * m1 + RB[1, 2] * m2, RB[2, 0] * m0 + RB[2, 1] * m1 + RB[2, 2] * m2)


@kernel
def pair_detect_step(s, k, RA, pA, RB, pB, RAk, pAk, RBk, pBk, face):
    """:func:`pair_detect` over a step (the position-based methods' detection between bodies), from
    the poses at the start of the step ``(RAk, ...)`` to the iterate ``(RA, ...)``.  A point that
    touches B's shape at the start (signed depth > -0.1 r - 1e-4 m there) keeps that start's contact
    plane in B's frame for the whole step: ``sd = r - phi_B(y_k) - n_Bk . (y - y_k)`` with normal
    ``n_Bk = grad phi_B(y_k)`` (as MuJoCo detects once per step and keeps the contact frame); any
    other point uses the shape's distance at the iterate.  Inside a box the nearest face switches
    at the medial planes, where the penalty energy ``(r - phi)^2`` has a concave kink: an implicit
    step across it gains energy (measured: a box landing 1 cm from another box's edge at 5 ms
    tipped over and slid off, the environment's box included); with the frozen plane the energy
    of a step is a convex quadratic in y.  Returns ``(x, y, z, sd, nx, ny, nz, dx, dy, dz, mx, my,
    mz)``: the world point, signed depth and normal, the displacement relative to B ``Delta = R_B
    (y - y_k)`` and the start normal ``n_k = R_B n_Bk`` (world).  ``face``: the
    item's :func:`item_face` at the start of the step."""
    x, y, z, a0, a1, a2 = pair_local(s, k, RA, pA, RB, pB)
    _x, _y, _z, b0, b1, b2 = pair_local(s, k, RAk, pAk, RBk, pBk)
    j = s.it_shape[s.pp_item[k]]
    r = s.pp_radius[k]
    phik, m0, m1, m2 = face_sdf(s, j, face, b0, b1, b2)
    d0, d1, d2 = a0 - b0, a1 - b1, a2 - b2
    if r - phik > -0.1 * r - 1e-4:  # touching at the start: its contact plane for the step
        sd = r - phik - (m0 * d0 + m1 * d1 + m2 * d2)
        n0, n1, n2 = m0, m1, m2
    else:
        phi, n0, n1, n2 = face_sdf(s, j, face, a0, a1, a2)
        sd = r - phi
    return (x, y, z, sd, RB[0, 0] * n0 + RB[0, 1] * n1 + RB[0, 2] * n2, RB[1, 0] * n0 + RB[1, 1] * n1 + RB[1, 2] * n2,
            RB[2, 0] * n0 + RB[2, 1] * n1 + RB[2, 2] * n2, RB[0, 0] * d0 + RB[0, 1] * d1 + RB[0, 2] * d2,
            RB[1, 0] * d0 + RB[1, 1] * d1 + RB[1, 2] * d2, RB[2, 0] * d0 + RB[2, 1] * d1 + RB[2, 2] * d2,
            RB[0, 0] * m0 + RB[0, 1] * m1 + RB[0, 2] * m2, RB[1, 0] * m0 + RB[1, 1] * m1 + RB[1, 2] * m2,
            RB[2, 0] * m0 + RB[2, 1] * m1 + RB[2, 2] * m2)


@kernel
def contact_query_state(m, s, w, b, X, D, N, dD):
    """For state b (world poses done): X (npts, 3) world points, D (npts,) depth >= 0, N (npts, 3)
    normals, dD (npts, nv) = dd/dv (zero rows where d == 0)."""
    for k in range(s.npts):
        body = s.pt_body[k]
        x, y, z, d, nx, ny, nz = contact_detect(s, k, w.Rw[b, body], w.pw[b, body])
        X[k, 0], X[k, 1], X[k, 2] = x, y, z
        N[k, 0], N[k, 1], N[k, 2] = nx, ny, nz
        for j in range(m.nv):
            dD[k, j] = 0.0
        if d > 0.0:
            D[k] = d
            point_force_jt(m, w, b, body, x, y, z, -nx, -ny, -nz, dD[k])
        else:
            D[k] = 0.0


@kernel
def pair_query_state(m, s, w, b, X, D, N):
    """For state b (world poses done): every body-body point's world position ``X`` (npp, 3), signed
    depth ``D`` (npp,; -1e30 where the broadphase culls its item) and normal ``N`` (out of B)."""
    for it in range(s.nitem):
        A = s.it_a[it]
        B = s.it_b[it]
        RA, pA, RB, pB = w.Rw[b, A], w.pw[b, A], w.Rw[b, B], w.pw[b, B]
        culled = item_culled(s, it, RA, pA, RB, pB, 0.0)
        face = -1 if culled else item_face(s, it, RA, pA, RB, pB)
        for k in range(s.it_start[it], s.it_start[it + 1]):
            x, y, z, sd, nx, ny, nz = pair_detect(s, k, RA, pA, RB, pB, face)
            X[k, 0], X[k, 1], X[k, 2] = x, y, z
            N[k, 0], N[k, 1], N[k, 2] = nx, ny, nz
            D[k] = -1e30 if culled else sd


@kernel(parallel=True)
def pair_query_batch(m, s, w, q, X, D, N):
    """Batch driver: FK then :func:`pair_query_state` for every state (leading axis B)."""
    for i in prange(q.shape[0]):
        b = np.int64(i)
        fk_state(m, w, b, q[b])
        pair_query_state(m, s, w, b, X[b], D[b], N[b])


@kernel(parallel=True)
def contact_query_batch(m, s, w, q, X, D, N, dD):
    """Batch driver: FK then :func:`contact_query_state` for every state (leading axis B)."""
    for i in prange(q.shape[0]):
        b = np.int64(i)
        fk_state(m, w, b, q[b])
        contact_query_state(m, s, w, b, X[b], D[b], N[b], dD[b])
