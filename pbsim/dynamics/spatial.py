"""Spatial algebra kernels (Featherstone, *Rigid Body Dynamics Algorithms*, ch. 2).

Conventions used everywhere in pbsim:
- spatial motion and force vectors are ``[angular; linear]`` 6-vectors;
- a pose ``(R, p)`` maps child coordinates to parent ones: ``x_parent = R x_child + p``;
  its Plücker motion transform parent->child is ``X = [[R^T, 0], [-R^T p^, R^T]]``;
- quaternions are ``(w, x, y, z)``;
- all kernels write into caller-provided arrays and read every input before
  writing, so an output may alias an input.
"""
import math

from pbsim.jit import kernel


@kernel
def quat_to_rot(q, R):
    """Rotation matrix of quaternion ``q = (w, x, y, z)`` (normalised on the fly)."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    n = math.sqrt(w * w + x * x + y * y + z * z)
    w /= n
    x /= n
    y /= n
    z /= n
    R[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    R[0, 1] = 2.0 * (x * y - w * z)
    R[0, 2] = 2.0 * (x * z + w * y)
    R[1, 0] = 2.0 * (x * y + w * z)
    R[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    R[1, 2] = 2.0 * (y * z - w * x)
    R[2, 0] = 2.0 * (x * z - w * y)
    R[2, 1] = 2.0 * (y * z + w * x)
    R[2, 2] = 1.0 - 2.0 * (x * x + y * y)


@kernel
def axis_angle_to_rot(a, angle, R):
    """Rodrigues' formula for a unit axis ``a``."""
    c = math.cos(angle)
    s = math.sin(angle)
    t = 1.0 - c
    x, y, z = a[0], a[1], a[2]
    R[0, 0] = c + x * x * t
    R[0, 1] = x * y * t - z * s
    R[0, 2] = x * z * t + y * s
    R[1, 0] = y * x * t + z * s
    R[1, 1] = c + y * y * t
    R[1, 2] = y * z * t - x * s
    R[2, 0] = z * x * t - y * s
    R[2, 1] = z * y * t + x * s
    R[2, 2] = c + z * z * t


@kernel
def quat_mul(a, b, out):
    """Hamilton product ``out = a * b``."""
    w = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3]
    x = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2]
    y = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1]
    z = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]
    out[0] = w
    out[1] = x
    out[2] = y
    out[3] = z


@kernel
def quat_exp_mul(q, wx, wy, wz, out):
    """``out = q * exp(w)`` for a rotation vector ``w`` (right, i.e. body-frame, increment)."""
    th = math.sqrt(wx * wx + wy * wy + wz * wz)
    if th < 1e-8:
        c = 1.0 - th * th / 8.0
        s = 0.5 - th * th / 48.0  # sin(th/2)/th
    else:
        c = math.cos(0.5 * th)
        s = math.sin(0.5 * th) / th
    ew, ex, ey, ez = c, s * wx, s * wy, s * wz
    w = q[0] * ew - q[1] * ex - q[2] * ey - q[3] * ez
    x = q[0] * ex + q[1] * ew + q[2] * ez - q[3] * ey
    y = q[0] * ey - q[1] * ez + q[2] * ew + q[3] * ex
    z = q[0] * ez + q[1] * ey - q[2] * ex + q[3] * ew
    n = math.sqrt(w * w + x * x + y * y + z * z)
    out[0] = w / n
    out[1] = x / n
    out[2] = y / n
    out[3] = z / n


@kernel
def quat_log_between(q0, q1, out):
    """Rotation vector ``log(q0^-1 q1)`` (shortest arc), written to ``out[0:3]``."""
    out[0], out[1], out[2] = quat_log_xyz(q0, q1)


@kernel
def quat_log_xyz(q0, q1):
    """Rotation vector ``log(q0^-1 q1)`` (shortest arc) as three numbers."""
    # r = conj(q0) * q1
    w = q0[0] * q1[0] + q0[1] * q1[1] + q0[2] * q1[2] + q0[3] * q1[3]
    x = q0[0] * q1[1] - q0[1] * q1[0] - q0[2] * q1[3] + q0[3] * q1[2]
    y = q0[0] * q1[2] + q0[1] * q1[3] - q0[2] * q1[0] - q0[3] * q1[1]
    z = q0[0] * q1[3] - q0[1] * q1[2] + q0[2] * q1[1] - q0[3] * q1[0]
    if w < 0.0:
        w, x, y, z = -w, -x, -y, -z
    s = math.sqrt(x * x + y * y + z * z)
    if s < 1e-8:
        k = 2.0 / w  # angle/sin(angle/2) -> 2 as angle -> 0
    else:
        k = 2.0 * math.atan2(s, w) / s
    return k * x, k * y, k * z


@kernel
def quat_rotate_inv(q, x, y, z):
    """``R(q)^T (x, y, z)`` for a unit quaternion ``q`` (w, x, y, z), as three numbers."""
    ux = -q[1]
    uy = -q[2]
    uz = -q[3]
    tx = 2.0 * (uy * z - uz * y)  # t = 2 u x v, v' = v + w t + u x t (conj(q) rotates by R^T)
    ty = 2.0 * (uz * x - ux * z)
    tz = 2.0 * (ux * y - uy * x)
    return (x + q[0] * tx + uy * tz - uz * ty,
            y + q[0] * ty + uz * tx - ux * tz,
            z + q[0] * tz + ux * ty - uy * tx)


@kernel
def motion_to_child(R, p, m, out):
    """``out = X m``: a motion vector from parent to child coordinates."""
    wx, wy, wz = m[0], m[1], m[2]
    # v + w x p
    vx = m[3] + wy * p[2] - wz * p[1]
    vy = m[4] + wz * p[0] - wx * p[2]
    vz = m[5] + wx * p[1] - wy * p[0]
    for r in range(3):
        out[r] = R[0, r] * wx + R[1, r] * wy + R[2, r] * wz
    for r in range(3):
        out[3 + r] = R[0, r] * vx + R[1, r] * vy + R[2, r] * vz


@kernel
def force_to_parent_add(R, p, f, out):
    """``out += X^T f``: a force vector from child to parent coordinates, accumulated."""
    fx = R[0, 0] * f[3] + R[0, 1] * f[4] + R[0, 2] * f[5]
    fy = R[1, 0] * f[3] + R[1, 1] * f[4] + R[1, 2] * f[5]
    fz = R[2, 0] * f[3] + R[2, 1] * f[4] + R[2, 2] * f[5]
    nx = R[0, 0] * f[0] + R[0, 1] * f[1] + R[0, 2] * f[2] + p[1] * fz - p[2] * fy
    ny = R[1, 0] * f[0] + R[1, 1] * f[1] + R[1, 2] * f[2] + p[2] * fx - p[0] * fz
    nz = R[2, 0] * f[0] + R[2, 1] * f[1] + R[2, 2] * f[2] + p[0] * fy - p[1] * fx
    out[0] += nx
    out[1] += ny
    out[2] += nz
    out[3] += fx
    out[4] += fy
    out[5] += fz


@kernel
def force_to_parent(R, p, f, out):
    """``out = X^T f`` (``out`` may alias ``f``)."""
    fx = R[0, 0] * f[3] + R[0, 1] * f[4] + R[0, 2] * f[5]
    fy = R[1, 0] * f[3] + R[1, 1] * f[4] + R[1, 2] * f[5]
    fz = R[2, 0] * f[3] + R[2, 1] * f[4] + R[2, 2] * f[5]
    nx = R[0, 0] * f[0] + R[0, 1] * f[1] + R[0, 2] * f[2] + p[1] * fz - p[2] * fy
    ny = R[1, 0] * f[0] + R[1, 1] * f[1] + R[1, 2] * f[2] + p[2] * fx - p[0] * fz
    nz = R[2, 0] * f[0] + R[2, 1] * f[1] + R[2, 2] * f[2] + p[0] * fy - p[1] * fx
    out[0] = nx
    out[1] = ny
    out[2] = nz
    out[3] = fx
    out[4] = fy
    out[5] = fz


@kernel
def motion_cross(a, b, out):
    """``out = a x b`` (spatial motion cross product, Featherstone Eq. 2.31)."""
    o0 = a[1] * b[2] - a[2] * b[1]
    o1 = a[2] * b[0] - a[0] * b[2]
    o2 = a[0] * b[1] - a[1] * b[0]
    o3 = a[1] * b[5] - a[2] * b[4] + a[4] * b[2] - a[5] * b[1]
    o4 = a[2] * b[3] - a[0] * b[5] + a[5] * b[0] - a[3] * b[2]
    o5 = a[0] * b[4] - a[1] * b[3] + a[3] * b[1] - a[4] * b[0]
    out[0] = o0
    out[1] = o1
    out[2] = o2
    out[3] = o3
    out[4] = o4
    out[5] = o5


@kernel
def force_cross_add(a, f, out):
    """``out += a x* f`` (spatial force cross product, Featherstone Eq. 2.32)."""
    o0 = a[1] * f[2] - a[2] * f[1] + a[4] * f[5] - a[5] * f[4]
    o1 = a[2] * f[0] - a[0] * f[2] + a[5] * f[3] - a[3] * f[5]
    o2 = a[0] * f[1] - a[1] * f[0] + a[3] * f[4] - a[4] * f[3]
    o3 = a[1] * f[5] - a[2] * f[4]
    o4 = a[2] * f[3] - a[0] * f[5]
    o5 = a[0] * f[4] - a[1] * f[3]
    out[0] += o0
    out[1] += o1
    out[2] += o2
    out[3] += o3
    out[4] += o4
    out[5] += o5


@kernel
def mat6_vec(M, x, out):
    """``out = M x`` for a 6x6 matrix (``out`` must not alias ``x``)."""
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += M[r, c] * x[c]
        out[r] = s


@kernel
def inertia_to_parent_add(R, p, I, tmp, out):
    """``out += X^T I X``: a symmetric spatial inertia from child to parent coordinates.

    Rotation first, ``I1 = diag(R, R) I diag(R, R)^T``, then the shift by ``p``: with blocks
    ``I1 = [[A, B], [B^T, C]]``, ``B2 = B + p^ C`` and ``A2 = A + p^ B^T - B2 p^``
    (Featherstone Eq. 2.66).  Unrolled into scalars (generated; no scratch, no views): this is
    the innermost cost of ABA and CRBA.  ``tmp`` is unused (kept for the signature).
    """
    r00 = R[0, 0]
    r01 = R[0, 1]
    r02 = R[0, 2]
    r10 = R[1, 0]
    r11 = R[1, 1]
    r12 = R[1, 2]
    r20 = R[2, 0]
    r21 = R[2, 1]
    r22 = R[2, 2]
    px, py, pz = p[0], p[1], p[2]
    t00 = I[0, 0] * r00 + I[0, 1] * r01 + I[0, 2] * r02
    t01 = I[0, 0] * r10 + I[0, 1] * r11 + I[0, 2] * r12
    t02 = I[0, 0] * r20 + I[0, 1] * r21 + I[0, 2] * r22
    t10 = I[1, 0] * r00 + I[1, 1] * r01 + I[1, 2] * r02
    t11 = I[1, 0] * r10 + I[1, 1] * r11 + I[1, 2] * r12
    t12 = I[1, 0] * r20 + I[1, 1] * r21 + I[1, 2] * r22
    t20 = I[2, 0] * r00 + I[2, 1] * r01 + I[2, 2] * r02
    t21 = I[2, 0] * r10 + I[2, 1] * r11 + I[2, 2] * r12
    t22 = I[2, 0] * r20 + I[2, 1] * r21 + I[2, 2] * r22
    a00 = r00 * t00 + r01 * t10 + r02 * t20
    a01 = r00 * t01 + r01 * t11 + r02 * t21
    a02 = r00 * t02 + r01 * t12 + r02 * t22
    a11 = r10 * t01 + r11 * t11 + r12 * t21
    a12 = r10 * t02 + r11 * t12 + r12 * t22
    a22 = r20 * t02 + r21 * t12 + r22 * t22
    t00 = I[0, 3] * r00 + I[0, 4] * r01 + I[0, 5] * r02
    t01 = I[0, 3] * r10 + I[0, 4] * r11 + I[0, 5] * r12
    t02 = I[0, 3] * r20 + I[0, 4] * r21 + I[0, 5] * r22
    t10 = I[1, 3] * r00 + I[1, 4] * r01 + I[1, 5] * r02
    t11 = I[1, 3] * r10 + I[1, 4] * r11 + I[1, 5] * r12
    t12 = I[1, 3] * r20 + I[1, 4] * r21 + I[1, 5] * r22
    t20 = I[2, 3] * r00 + I[2, 4] * r01 + I[2, 5] * r02
    t21 = I[2, 3] * r10 + I[2, 4] * r11 + I[2, 5] * r12
    t22 = I[2, 3] * r20 + I[2, 4] * r21 + I[2, 5] * r22
    b00 = r00 * t00 + r01 * t10 + r02 * t20
    b01 = r00 * t01 + r01 * t11 + r02 * t21
    b02 = r00 * t02 + r01 * t12 + r02 * t22
    b10 = r10 * t00 + r11 * t10 + r12 * t20
    b11 = r10 * t01 + r11 * t11 + r12 * t21
    b12 = r10 * t02 + r11 * t12 + r12 * t22
    b20 = r20 * t00 + r21 * t10 + r22 * t20
    b21 = r20 * t01 + r21 * t11 + r22 * t21
    b22 = r20 * t02 + r21 * t12 + r22 * t22
    t00 = I[3, 3] * r00 + I[3, 4] * r01 + I[3, 5] * r02
    t01 = I[3, 3] * r10 + I[3, 4] * r11 + I[3, 5] * r12
    t02 = I[3, 3] * r20 + I[3, 4] * r21 + I[3, 5] * r22
    t10 = I[4, 3] * r00 + I[4, 4] * r01 + I[4, 5] * r02
    t11 = I[4, 3] * r10 + I[4, 4] * r11 + I[4, 5] * r12
    t12 = I[4, 3] * r20 + I[4, 4] * r21 + I[4, 5] * r22
    t20 = I[5, 3] * r00 + I[5, 4] * r01 + I[5, 5] * r02
    t21 = I[5, 3] * r10 + I[5, 4] * r11 + I[5, 5] * r12
    t22 = I[5, 3] * r20 + I[5, 4] * r21 + I[5, 5] * r22
    c00 = r00 * t00 + r01 * t10 + r02 * t20
    c01 = r00 * t01 + r01 * t11 + r02 * t21
    c02 = r00 * t02 + r01 * t12 + r02 * t22
    c11 = r10 * t01 + r11 * t11 + r12 * t21
    c12 = r10 * t02 + r11 * t12 + r12 * t22
    c22 = r20 * t02 + r21 * t12 + r22 * t22
    c10 = c01
    c20 = c02
    c21 = c12
    b2_00 = b00 + py * c20 - pz * c10
    b2_10 = b10 + pz * c00 - px * c20
    b2_20 = b20 + px * c10 - py * c00
    b2_01 = b01 + py * c21 - pz * c11
    b2_11 = b11 + pz * c01 - px * c21
    b2_21 = b21 + px * c11 - py * c01
    b2_02 = b02 + py * c22 - pz * c12
    b2_12 = b12 + pz * c02 - px * c22
    b2_22 = b22 + px * c12 - py * c02
    a2 = a00 + (py * b02 - pz * b01) + (py * b2_02 - pz * b2_01)
    out[0, 0] += a2
    a2 = a01 + (py * b12 - pz * b11) + (pz * b2_00 - px * b2_02)
    out[0, 1] += a2
    out[1, 0] += a2
    a2 = a02 + (py * b22 - pz * b21) + (px * b2_01 - py * b2_00)
    out[0, 2] += a2
    out[2, 0] += a2
    a2 = a11 + (pz * b10 - px * b12) + (pz * b2_10 - px * b2_12)
    out[1, 1] += a2
    a2 = a12 + (pz * b20 - px * b22) + (px * b2_11 - py * b2_10)
    out[1, 2] += a2
    out[2, 1] += a2
    a2 = a22 + (px * b21 - py * b20) + (px * b2_21 - py * b2_20)
    out[2, 2] += a2
    out[0, 3] += b2_00
    out[3, 0] += b2_00
    out[0, 4] += b2_01
    out[4, 0] += b2_01
    out[0, 5] += b2_02
    out[5, 0] += b2_02
    out[1, 3] += b2_10
    out[3, 1] += b2_10
    out[1, 4] += b2_11
    out[4, 1] += b2_11
    out[1, 5] += b2_12
    out[5, 1] += b2_12
    out[2, 3] += b2_20
    out[3, 2] += b2_20
    out[2, 4] += b2_21
    out[4, 2] += b2_21
    out[2, 5] += b2_22
    out[5, 2] += b2_22
    out[3, 3] += c00
    out[3, 4] += c01
    out[3, 5] += c02
    out[4, 3] += c01
    out[4, 4] += c11
    out[4, 5] += c12
    out[5, 3] += c02
    out[5, 4] += c12
    out[5, 5] += c22


@kernel
def small_inverse(A, n, out):
    """In-place Gauss-Jordan inverse of a small SPD ``n x n`` block (no pivoting)."""
    for r in range(n):
        for c in range(n):
            out[r, c] = A[r, c]
    for k in range(n):
        piv = out[k, k]
        out[k, k] = 1.0
        for j in range(n):
            out[k, j] /= piv
        for i in range(n):
            if i != k:
                f = out[i, k]
                out[i, k] = 0.0
                for j in range(n):
                    out[i, j] -= f * out[k, j]
