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

from pbsim.backends.kernel import kernel


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
    out[0] = k * x
    out[1] = k * y
    out[2] = k * z


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
    """``out += X^T I X``: a spatial inertia from child to parent coordinates.

    Rotation first, ``I1 = diag(R, R) I diag(R, R)^T`` (in ``tmp[0]``), then the
    shift by ``p``: with blocks ``I1 = [[A, B], [B^T, C]]``,
    ``B2 = B + p^ C`` and ``A2 = A + p^ B^T - B2 p^`` (Featherstone Eq. 2.66).
    ``tmp`` is scratch of shape (2, 6, 6).
    """
    T = tmp[1]
    for br in range(2):
        for bc in range(2):
            o_r = 3 * br
            o_c = 3 * bc
            # T = I_blk R^T
            for k in range(3):
                for c in range(3):
                    T[o_r + k, o_c + c] = (I[o_r + k, o_c] * R[c, 0] + I[o_r + k, o_c + 1] * R[c, 1]
                                           + I[o_r + k, o_c + 2] * R[c, 2])
    I1 = tmp[0]
    for br in range(2):
        for bc in range(2):
            o_r = 3 * br
            o_c = 3 * bc
            for r in range(3):
                for c in range(3):
                    I1[o_r + r, o_c + c] = (R[r, 0] * T[o_r, o_c + c] + R[r, 1] * T[o_r + 1, o_c + c]
                                            + R[r, 2] * T[o_r + 2, o_c + c])
    px, py, pz = p[0], p[1], p[2]
    # B2 = B + p^ C  (column c of p^ C is p x C[:, c]); stored in T[0:3, 3:6]
    for c in range(3):
        cx, cy, cz = I1[3, 3 + c], I1[4, 3 + c], I1[5, 3 + c]
        T[0, 3 + c] = I1[0, 3 + c] + py * cz - pz * cy
        T[1, 3 + c] = I1[1, 3 + c] + pz * cx - px * cz
        T[2, 3 + c] = I1[2, 3 + c] + px * cy - py * cx
    # A2[r, c] = A[r, c] + (p x B[c, :])[r] + (p x B2[r, :])[c]
    for r in range(3):
        for c in range(3):
            bx, by, bz = I1[c, 3], I1[c, 4], I1[c, 5]
            if r == 0:
                t1 = py * bz - pz * by
            elif r == 1:
                t1 = pz * bx - px * bz
            else:
                t1 = px * by - py * bx
            ex, ey, ez = T[r, 3], T[r, 4], T[r, 5]
            if c == 0:
                t2 = py * ez - pz * ey
            elif c == 1:
                t2 = pz * ex - px * ez
            else:
                t2 = px * ey - py * ex
            out[r, c] += I1[r, c] + t1 + t2
    for r in range(3):
        for c in range(3):
            out[r, 3 + c] += T[r, 3 + c]
            out[3 + c, r] += T[r, 3 + c]
            out[3 + r, 3 + c] += I1[3 + r, 3 + c]


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
