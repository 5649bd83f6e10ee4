"""Signed distances of the primitive shapes (one numba source for CPU and CUDA).

Each returns ``(phi, nx, ny, nz)`` at a point given in the coordinates its row is written in:
``phi > 0`` outside, ``< 0`` inside, ``n = grad phi`` (unit, out of the shape).  Rows:

- sphere ``[c (3), r]``;
- capsule ``[a (3), b (3), r]``: the segment a-b swept by a sphere of radius r;
- box ``[R (9, row-major), p (3), half (3)]``: ``x_frame = R x_box + p``;
- cylinder ``[R (9), p (3), r, h]``: axis along the cylinder frame's z, half height h;
- ellipsoid ``[R (9), p (3), a, b, c]``: semi-axes along the ellipsoid frame's x, y, z; its
  distance has no closed form, :func:`sdf_ellipsoid` finds the closest point by Newton's method
  (exact to round-off);
- convex hull: planes ``[n (3), d]`` (``n . x <= d`` inside), ``phi = max_f (n_f . x - d_f)``: the
  exact distance inside and on the faces, a lower bound outside near edges and corners (the
  distance to the farthest supporting plane); MuJoCo collides meshes as their convex hulls too.

The environment (:func:`pbsim.contact.query.env_sdf`) reads its rows in world coordinates; the
shapes on bodies (:func:`pbsim.contact.query.shape_sdf`) in their body's frame.
"""
import math

from pbsim.jit import kernel


@kernel
def _normalize(gx, gy, gz):
    n = math.sqrt(gx * gx + gy * gy + gz * gz)
    if n > 0.0:
        return gx / n, gy / n, gz / n
    return 0.0, 0.0, 1.0


@kernel
def sdf_sphere(e, x, y, z):
    """Sphere row ``e = [c (3), r]``."""
    dx, dy, dz = x - e[0], y - e[1], z - e[2]
    r = math.sqrt(dx * dx + dy * dy + dz * dz)
    nx, ny, nz = _normalize(dx, dy, dz)
    return r - e[3], nx, ny, nz


@kernel
def sdf_capsule(e, x, y, z):
    """Capsule row ``e = [a (3), b (3), r]``."""
    ux, uy, uz = e[3] - e[0], e[4] - e[1], e[5] - e[2]
    uu = ux * ux + uy * uy + uz * uz
    t = 0.0
    if uu > 0.0:
        t = min(max(((x - e[0]) * ux + (y - e[1]) * uy + (z - e[2]) * uz) / uu, 0.0), 1.0)
    dx, dy, dz = x - e[0] - t * ux, y - e[1] - t * uy, z - e[2] - t * uz
    nx, ny, nz = _normalize(dx, dy, dz)
    return math.sqrt(dx * dx + dy * dy + dz * dz) - e[6], nx, ny, nz


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
def sdf_cylinder(e, x, y, z):
    """Cylinder row ``e = [R (9), p (3), r, h]`` (axis: the cylinder frame's z)."""
    dx, dy, dz = x - e[9], y - e[10], z - e[11]
    lx = e[0] * dx + e[3] * dy + e[6] * dz  # R^T (x - p)
    ly = e[1] * dx + e[4] * dy + e[7] * dz
    lz = e[2] * dx + e[5] * dy + e[8] * dz
    rho = math.sqrt(lx * lx + ly * ly)
    ux, uy = (lx / rho, ly / rho) if rho > 0.0 else (1.0, 0.0)
    sz = 1.0 if lz >= 0.0 else -1.0
    qr = rho - e[12]
    qz = abs(lz) - e[13]
    if qr > 0.0 or qz > 0.0:
        orr, oz = max(qr, 0.0), max(qz, 0.0)
        phi = math.sqrt(orr * orr + oz * oz)
        nx, ny, nz = ux * orr / phi, uy * orr / phi, sz * oz / phi
    elif qr >= qz:
        phi, nx, ny, nz = qr, ux, uy, 0.0
    else:
        phi, nx, ny, nz = qz, 0.0, 0.0, sz
    wx = e[0] * nx + e[1] * ny + e[2] * nz  # R n
    wy = e[3] * nx + e[4] * ny + e[5] * nz
    wz = e[6] * nx + e[7] * ny + e[8] * nz
    return phi, wx, wy, wz


@kernel
def sdf_ellipsoid(e, x, y, z):
    """Ellipsoid row ``e = [R (9), p (3), a, b, c]``: the exact signed distance.  The closest point
    of ``l = R^T (x - p)`` is ``q_i = s_i^2 l_i / (s_i^2 + t)`` with ``t > -min s^2`` the one root of
    ``sum (s_i l_i / (s_i^2 + t))^2 = 1``, found by Newton's method on ``S(t)^(-1/2) = 1`` (linear in
    t for a sphere; 5-12 iterations to round-off for axis ratios up to 100); inside, on the focal
    disc (where the root meets ``-min s^2``), MuJoCo's and Eberly's degenerate closest point.  The
    normal is ``(l - q) / |l - q|`` (outward), the surface normal on the surface."""
    dx, dy, dz = x - e[9], y - e[10], z - e[11]
    lx = e[0] * dx + e[3] * dy + e[6] * dz  # R^T (x - p)
    ly = e[1] * dx + e[4] * dy + e[7] * dz
    lz = e[2] * dx + e[5] * dy + e[8] * dz
    a, b, c = e[12], e[13], e[14]
    a2, b2, c2 = a * a, b * b, c * c
    m2 = min(a2, min(b2, c2))
    smax = max(a, max(b, c))
    pa, pb, pc = a2 * lx * lx, b2 * ly * ly, c2 * lz * lz
    k2 = lx * lx / a2 + ly * ly / b2 + lz * lz / c2
    if pa + pb + pc <= 1e-300:  # the centre: the smallest semi-axis deep
        if c2 <= a2 and c2 <= b2:
            return -c, e[2], e[5], e[8]
        if b2 <= a2:
            return -b, e[1], e[4], e[7]
        return -a, e[0], e[3], e[6]
    lim = -m2
    t = 0.0
    for _it in range(60):
        da, db, dc = a2 + t, b2 + t, c2 + t
        S = pa / (da * da) + pb / (db * db) + pc / (dc * dc)
        S3 = pa / (da * da * da) + pb / (db * db * db) + pc / (dc * dc * dc)
        K = 1.0 / math.sqrt(S)
        tn = t - (K - 1.0) / (K * K * K * S3)
        if tn <= lim:  # keep the root's bracket (-min s^2, inf)
            tn = 0.5 * (t + lim)
        if abs(tn - t) <= 1e-15 * (m2 + abs(t)):
            t = tn
            break
        t = tn
    qx, qy, qz = a2 * lx / (a2 + t), b2 * ly / (b2 + t), c2 * lz / (c2 + t)
    if abs(qx * qx / a2 + qy * qy / b2 + qz * qz / c2 - 1.0) > 1e-9:
        # inside, on the focal disc: the axes of the smallest semi-axis get the rest of the unit norm
        ra = a2 > m2
        rb = b2 > m2
        rc = c2 > m2
        qx = a2 * lx / (a2 - m2) if ra else 0.0
        qy = b2 * ly / (b2 - m2) if rb else 0.0
        qz = c2 * lz / (c2 - m2) if rc else 0.0
        rest = 1.0 - qx * qx / a2 - qy * qy / b2 - qz * qz / c2
        ux = 0.0 if ra else lx
        uy = 0.0 if rb else ly
        uz = 0.0 if rc else lz
        nu = math.sqrt(ux * ux + uy * uy + uz * uz)
        if nu > 0.0:
            ux, uy, uz = ux / nu, uy / nu, uz / nu
        elif not rc:
            uz = 1.0
        elif not rb:
            uy = 1.0
        else:
            ux = 1.0
        f = math.sqrt(max(rest, 0.0) * m2)
        if not ra:
            qx = f * ux
        if not rb:
            qy = f * uy
        if not rc:
            qz = f * uz
    gx, gy, gz = lx - qx, ly - qy, lz - qz
    d = math.sqrt(gx * gx + gy * gy + gz * gz)
    sg = 1.0 if k2 > 1.0 else -1.0
    if d > 1e-14 * smax:
        nx, ny, nz = sg * gx / d, sg * gy / d, sg * gz / d
    else:  # on the surface
        nx, ny, nz = _normalize(lx / a2, ly / b2, lz / c2)
    return (sg * d, e[0] * nx + e[1] * ny + e[2] * nz, e[3] * nx + e[4] * ny + e[5] * nz,
            e[6] * nx + e[7] * ny + e[8] * nz)


@kernel
def sdf_hull(planes, i0, n, x, y, z):
    """Convex hull given by ``n`` planes ``planes[i0:i0 + n] = [normal (3), d]``."""
    best = -1.0e30
    bx, by, bz = 0.0, 0.0, 1.0
    for f in range(i0, i0 + n):
        e = planes[f]
        phi = e[0] * x + e[1] * y + e[2] * z - e[3]
        if phi > best:
            best, bx, by, bz = phi, e[0], e[1], e[2]
    return best, bx, by, bz


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
def sdf_heightfield_tri(meta, geo, data, x, y, z):
    """:func:`sdf_heightfield` with each cell split into two triangles along its diagonal from
    ``(x_i, y_j)`` to ``(x_i+1, y_j+1)`` (MuJoCo's hfield surface): planar pieces, so ``phi`` is
    the exact distance to the piece's plane."""
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
    if tx >= ty:  # the triangle (00, 10, 11)
        sx, sy = h10 - h00, h11 - h10
    else:  # (00, 11, 01)
        sx, sy = h11 - h01, h01 - h00
    h = h00 + sx * tx + sy * ty
    hx = inx * sx / geo[2]
    hy = iny * sy / geo[3]
    nrm = math.sqrt(1.0 + hx * hx + hy * hy)
    return (z - h) / nrm, -hx / nrm, -hy / nrm, 1.0 / nrm


@kernel
def sdf_heightfield_posed(meta, geo, data, x, y, z):
    """A heightfield in its own frame: ``meta[3]`` flags 1 (posed: ``geo[4:13]`` the frame's
    rotation R row-major, ``geo[13:16]`` its origin p; the point is taken to ``R^T (x - p)`` and the
    normal back by R), 2 (bounded: no contact outside the x-y extents, as MuJoCo's hfield, a
    solid only above its own rectangle) and 4 (two triangles a cell: :func:`sdf_heightfield_tri`)."""
    lx, ly, lz = x, y, z
    if meta[3] & 1:
        dx, dy, dz = x - geo[13], y - geo[14], z - geo[15]
        lx = geo[4] * dx + geo[7] * dy + geo[10] * dz
        ly = geo[5] * dx + geo[8] * dy + geo[11] * dz
        lz = geo[6] * dx + geo[9] * dy + geo[12] * dz
    if meta[3] & 2:
        if lx < geo[0] or ly < geo[1] or lx > geo[0] + (meta[1] - 1) * geo[2] or ly > geo[1] + (meta[2] - 1) * geo[3]:
            return 1.0e30, 0.0, 0.0, 1.0
    if meta[3] & 4:
        phi, nx, ny, nz = sdf_heightfield_tri(meta, geo, data, lx, ly, lz)
    else:
        phi, nx, ny, nz = sdf_heightfield(meta, geo, data, lx, ly, lz)
    if meta[3] & 1:
        return (phi, geo[4] * nx + geo[5] * ny + geo[6] * nz, geo[7] * nx + geo[8] * ny + geo[9] * nz,
                geo[10] * nx + geo[11] * ny + geo[12] * nz)
    return phi, nx, ny, nz
