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
import math

import numpy as np
from numba import prange

from pbsim.backends.kernel import kernel
from pbsim.contact.sdf_grid import grid_sample
from pbsim.dynamics.kinematics import fk_state

BIG = 1.0e30


@kernel
def _normalize(gx, gy, gz):
    n = math.sqrt(gx * gx + gy * gy + gz * gz)
    if n > 0.0:
        return gx / n, gy / n, gz / n
    return 0.0, 0.0, 1.0


@kernel
def sdf_box(e, x, y, z):
    """Signed distance and normal of box row ``e = [R (9), p (3), half (3)]``."""
    dx, dy, dz = x - e[9], y - e[10], z - e[11]
    lx = e[0] * dx + e[3] * dy + e[6] * dz  # R^T (x - p)
    ly = e[1] * dx + e[4] * dy + e[7] * dz
    lz = e[2] * dx + e[5] * dy + e[8] * dz
    qx, qy, qz = abs(lx) - e[12], abs(ly) - e[13], abs(lz) - e[14]
    sx = 1.0 if lx >= 0.0 else -1.0
    sy = 1.0 if ly >= 0.0 else -1.0
    sz = 1.0 if lz >= 0.0 else -1.0
    if qx > 0.0 or qy > 0.0 or qz > 0.0:
        ox, oy, oz = max(qx, 0.0), max(qy, 0.0), max(qz, 0.0)
        phi = math.sqrt(ox * ox + oy * oy + oz * oz)
        nx, ny, nz = sx * ox / phi, sy * oy / phi, sz * oz / phi
    else:
        if qx >= qy and qx >= qz:
            phi, nx, ny, nz = qx, sx, 0.0, 0.0
        elif qy >= qz:
            phi, nx, ny, nz = qy, 0.0, sy, 0.0
        else:
            phi, nx, ny, nz = qz, 0.0, 0.0, sz
    wx = e[0] * nx + e[1] * ny + e[2] * nz  # R n
    wy = e[3] * nx + e[4] * ny + e[5] * nz
    wz = e[6] * nx + e[7] * ny + e[8] * nz
    return phi, wx, wy, wz


@kernel
def sdf_heightfield(meta, geo, data, x, y, z):
    off, nx, ny = meta[0], meta[1], meta[2]
    fx = min(max((x - geo[0]) / geo[2], 0.0), nx - 1.0)
    fy = min(max((y - geo[1]) / geo[3], 0.0), ny - 1.0)
    i = min(int(fx), nx - 2)
    j = min(int(fy), ny - 2)
    tx = fx - i
    ty = fy - j
    inx = 1.0 if (x - geo[0]) / geo[2] == fx else 0.0  # slope is zero where the edge is extended
    iny = 1.0 if (y - geo[1]) / geo[3] == fy else 0.0
    h00 = data[off + i * ny + j]
    h01 = data[off + i * ny + j + 1]
    h10 = data[off + (i + 1) * ny + j]
    h11 = data[off + (i + 1) * ny + j + 1]
    h = (h00 * (1 - tx) + h10 * tx) * (1 - ty) + (h01 * (1 - tx) + h11 * tx) * ty
    hx = inx * ((h10 - h00) * (1 - ty) + (h11 - h01) * ty) / geo[2]
    hy = iny * ((h01 - h00) * (1 - tx) + (h11 - h10) * tx) / geo[3]
    nrm = math.sqrt(1.0 + hx * hx + hy * hy)
    return (z - h) / nrm, -hx / nrm, -hy / nrm, 1.0 / nrm


@kernel
def env_sdf(s, x, y, z):
    """Union of all environment shapes at (x, y, z): (phi, nx, ny, nz); phi = BIG if empty."""
    best, bx, by, bz = BIG, 0.0, 0.0, 1.0
    for i in range(s.env_plane.shape[0]):
        e = s.env_plane[i]
        phi = e[0] * x + e[1] * y + e[2] * z - e[3]
        if phi < best:
            best, bx, by, bz = phi, e[0], e[1], e[2]
    for i in range(s.env_sphere.shape[0]):
        e = s.env_sphere[i]
        dx, dy, dz = x - e[0], y - e[1], z - e[2]
        r = math.sqrt(dx * dx + dy * dy + dz * dz)
        phi = r - e[3]
        if phi < best:
            best = phi
            bx, by, bz = _normalize(dx, dy, dz)
    for i in range(s.env_box.shape[0]):
        phi, nx, ny, nz = sdf_box(s.env_box[i], x, y, z)
        if phi < best:
            best, bx, by, bz = phi, nx, ny, nz
    for i in range(s.env_capsule.shape[0]):
        e = s.env_capsule[i]
        ux, uy, uz = e[3] - e[0], e[4] - e[1], e[5] - e[2]
        uu = ux * ux + uy * uy + uz * uz
        t = 0.0
        if uu > 0.0:
            t = min(max(((x - e[0]) * ux + (y - e[1]) * uy + (z - e[2]) * uz) / uu, 0.0), 1.0)
        dx, dy, dz = x - e[0] - t * ux, y - e[1] - t * uy, z - e[2] - t * uz
        phi = math.sqrt(dx * dx + dy * dy + dz * dz) - e[6]
        if phi < best:
            best = phi
            bx, by, bz = _normalize(dx, dy, dz)
    for i in range(s.hf_meta.shape[0]):
        phi, nx, ny, nz = sdf_heightfield(s.hf_meta[i], s.hf_geom[i], s.hf_data, x, y, z)
        if phi < best:
            best, bx, by, bz = phi, nx, ny, nz
    for i in range(s.gr_meta.shape[0]):
        mt = s.gr_meta[i]
        ge = s.gr_geom[i]
        phi, gx, gy, gz = grid_sample(s.gr_data, mt[0], mt[1], mt[2], mt[3], ge[0], ge[1], ge[2], ge[3], x, y, z)
        if phi < best:
            best = phi
            bx, by, bz = _normalize(gx, gy, gz)
    return best, bx, by, bz


@kernel(parallel=True)
def env_sdf_points(s, X, out):
    """Batch query: ``out[i] = (phi, nx, ny, nz)`` at points ``X[i]``."""
    for i in prange(X.shape[0]):
        p, a, b, c = env_sdf(s, X[i, 0], X[i, 1], X[i, 2])
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
    phi, nx, ny, nz = env_sdf(s, x, y, z)
    return x, y, z, s.pt_radius[k] - phi, nx, ny, nz


@kernel
def point_force_jt(m, w, b, body, px, py, pz, fx, fy, fz, out):
    """``out += J_lin(x)^T f`` for a world force f at world point x on ``body`` (no scratch).
    With f = n this is ``-dd/dv`` (J as in ``point_jacobian``, rows 3-5)."""
    Rw = w.Rw[b]
    pw = w.pw[b]
    j = body
    while j >= 0:
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


@kernel(parallel=True)
def contact_query_batch(m, s, w, q, X, D, N, dD):
    """Batch driver: FK then :func:`contact_query_state` for every state (leading axis B)."""
    for i in prange(q.shape[0]):
        b = np.int64(i)
        fk_state(m, w, b, q[b])
        contact_query_state(m, s, w, b, X[b], D[b], N[b], dD[b])
