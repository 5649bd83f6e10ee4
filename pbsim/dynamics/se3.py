"""SE(3) exponential/logarithm, adjoint actions and closed-form dexp^-1 (paper 004, Eq. 10-15).

Twists are ``xi = [w; v]`` (angular; linear, body frame), poses ``(R, p)`` as in spatial.py.

``ad_xi = [[w^, 0], [v^, w^]]`` satisfies ``ad^5 + 2 th^2 ad^3 + th^4 ad = 0`` (th = |w|), so any
analytic function of ``ad`` is a degree-4 polynomial in ``ad`` whose coefficients depend on th only.
For ``dexp^-1`` (the Bernoulli series of Eq. 13, ``x / (e^x - 1)``) this gives the closed form

    Jl^-1(xi) = dexp^-1_xi  = I - ad/2 + c2(th) ad^2 + c4(th) ad^4      (Eq. 12-13, left-trivialised)
    Jr^-1(xi) = dexp^-1_-xi = I + ad/2 + c2(th) ad^2 + c4(th) ad^4      (right-trivialised)

with ``A = (th/2) cot(th/2)``, ``B = -dA/dth``: ``c4 = (1 - A - B th/2) / th^4`` and
``c2 = (2 (1 - A) - B th/2) / th^2`` (Hermite interpolation of ``(x/2) coth(x/2)`` at 0, ±i th);
Taylor series below th = 0.2.  ``exp(xi + d) = exp(xi) exp(Jr(xi) d)``.
"""
import math

from pbsim.jit import kernel
from pbsim.dynamics.spatial import motion_cross

_SMALL = 0.2


@kernel(inline=True)
def dexpinv_coeffs(th):
    """(c2, c4, c2'/th, c4'/th) of the closed-form dexp^-1 polynomial (Eq. 13 summed)."""
    if th < _SMALL:
        t2 = th * th
        t4 = t2 * t2
        t6 = t4 * t2
        t8 = t4 * t4
        c2 = 1.0 / 12.0 - t4 / 30240.0 - t6 / 604800.0 - t8 / 15966720.0
        c4 = -1.0 / 720.0 - t2 / 15120.0 - t4 / 403200.0 - t6 / 11975040.0 - 691.0 * t8 / 261534873600.0
        d2 = -t2 / 7560.0 - t4 / 100800.0 - t6 / 1995840.0 - 691.0 * t8 / 32691859200.0
        d4 = -1.0 / 7560.0 - t2 / 100800.0 - t4 / 1995840.0 - 691.0 * t6 / 32691859200.0 - t8 / 1245404160.0
        return c2, c4, d2, d4
    h = 0.5 * th
    s = math.sin(h)
    co = math.cos(h)
    A = h * co / s
    B = -0.5 * co / s + th / (4.0 * s * s)  # -dA/dth
    A2 = -1.0 / (2.0 * s * s) + th * co / (4.0 * s * s * s)  # d^2A/dth^2
    t2 = th * th
    t4 = t2 * t2
    c2 = (2.0 * (1.0 - A) - 0.5 * B * th) / t2
    c4 = (1.0 - A - 0.5 * B * th) / t4
    dc2 = (1.5 * B + 0.5 * A2 * th) / t2 - 2.0 * c2 / th
    dc4 = (0.5 * B + 0.5 * A2 * th) / t4 - 4.0 * c4 / th
    return c2, c4, dc2 / th, dc4 / th


@kernel(inline=True)
def adT_apply(xi, f, out):
    """``out = ad_xi^T f = -(xi x* f)`` (dual adjoint; out may alias f)."""
    w0, w1, w2, v0, v1, v2 = xi[0], xi[1], xi[2], xi[3], xi[4], xi[5]
    n0, n1, n2, f0, f1, f2 = f[0], f[1], f[2], f[3], f[4], f[5]
    out[0] = -(w1 * n2 - w2 * n1 + v1 * f2 - v2 * f1)
    out[1] = -(w2 * n0 - w0 * n2 + v2 * f0 - v0 * f2)
    out[2] = -(w0 * n1 - w1 * n0 + v0 * f1 - v1 * f0)
    out[3] = -(w1 * f2 - w2 * f1)
    out[4] = -(w2 * f0 - w0 * f2)
    out[5] = -(w0 * f1 - w1 * f0)


@kernel
def Ad_apply(R, p, x, out):
    """``out = Ad_T x`` for T = (R, p): ``[R w; p x R w + R v]`` (Eq. 15; out may alias x)."""
    w0 = R[0, 0] * x[0] + R[0, 1] * x[1] + R[0, 2] * x[2]
    w1 = R[1, 0] * x[0] + R[1, 1] * x[1] + R[1, 2] * x[2]
    w2 = R[2, 0] * x[0] + R[2, 1] * x[1] + R[2, 2] * x[2]
    v0 = R[0, 0] * x[3] + R[0, 1] * x[4] + R[0, 2] * x[5] + p[1] * w2 - p[2] * w1
    v1 = R[1, 0] * x[3] + R[1, 1] * x[4] + R[1, 2] * x[5] + p[2] * w0 - p[0] * w2
    v2 = R[2, 0] * x[3] + R[2, 1] * x[4] + R[2, 2] * x[5] + p[0] * w1 - p[1] * w0
    out[0] = w0
    out[1] = w1
    out[2] = w2
    out[3] = v0
    out[4] = v1
    out[5] = v2


@kernel
def dexpinv_apply(xi, x, sign, tmp, out):
    """``out = (I + sign ad/2 + c2 ad^2 + c4 ad^4) x``: sign=-1 gives Jl^-1 = dexp^-1_xi, sign=+1
    gives Jr^-1 = dexp^-1_-xi (Eq. 12-13 closed form).  ``tmp`` (6,) scratch; out may alias x."""
    th = math.sqrt(xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2])
    c2, c4, d2, d4 = dexpinv_coeffs(th)
    for r in range(6):
        tmp[r] = x[r]
    motion_cross(xi, tmp, tmp)  # ad_xi x = xi x x (Eq. 12)
    b10, b11, b12, b13, b14, b15 = tmp[0], tmp[1], tmp[2], tmp[3], tmp[4], tmp[5]
    motion_cross(xi, tmp, tmp)  # ad^2 x
    b20, b21, b22, b23, b24, b25 = tmp[0], tmp[1], tmp[2], tmp[3], tmp[4], tmp[5]
    motion_cross(xi, tmp, tmp)
    motion_cross(xi, tmp, tmp)  # ad^4 x
    h = 0.5 * sign
    out[0] = x[0] + h * b10 + c2 * b20 + c4 * tmp[0]
    out[1] = x[1] + h * b11 + c2 * b21 + c4 * tmp[1]
    out[2] = x[2] + h * b12 + c2 * b22 + c4 * tmp[2]
    out[3] = x[3] + h * b13 + c2 * b23 + c4 * tmp[3]
    out[4] = x[4] + h * b14 + c2 * b24 + c4 * tmp[4]
    out[5] = x[5] + h * b15 + c2 * b25 + c4 * tmp[5]


@kernel
def dexpinv_T_apply(xi, f, sign, tmp, out):
    """``out = (I + sign ad/2 + c2 ad^2 + c4 ad^4)^T f`` (transpose of :func:`dexpinv_apply`:
    sign=-1 is the paper's [dlog_xi]^T of Eq. 16c/21b).  ``tmp`` (6,) scratch; out may alias f."""
    th = math.sqrt(xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2])
    c2, c4, d2, d4 = dexpinv_coeffs(th)
    for r in range(6):
        tmp[r] = f[r]
    adT_apply(xi, tmp, tmp)
    b10, b11, b12, b13, b14, b15 = tmp[0], tmp[1], tmp[2], tmp[3], tmp[4], tmp[5]
    adT_apply(xi, tmp, tmp)
    b20, b21, b22, b23, b24, b25 = tmp[0], tmp[1], tmp[2], tmp[3], tmp[4], tmp[5]
    adT_apply(xi, tmp, tmp)
    adT_apply(xi, tmp, tmp)
    h = 0.5 * sign
    out[0] = f[0] + h * b10 + c2 * b20 + c4 * tmp[0]
    out[1] = f[1] + h * b11 + c2 * b21 + c4 * tmp[1]
    out[2] = f[2] + h * b12 + c2 * b22 + c4 * tmp[2]
    out[3] = f[3] + h * b13 + c2 * b23 + c4 * tmp[3]
    out[4] = f[4] + h * b14 + c2 * b24 + c4 * tmp[4]
    out[5] = f[5] + h * b15 + c2 * b25 + c4 * tmp[5]


@kernel(inline=True)
def _adT6(w0, w1, w2, v0, v1, v2, n0, n1, n2, f0, f1, f2):
    """``ad_xi^T f = -(xi x* f)`` on scalars (xi = [w; v], f = [n; f])."""
    return (-(w1 * n2 - w2 * n1 + v1 * f2 - v2 * f1), -(w2 * n0 - w0 * n2 + v2 * f0 - v0 * f2),
            -(w0 * n1 - w1 * n0 + v0 * f1 - v1 * f0), -(w1 * f2 - w2 * f1), -(w2 * f0 - w0 * f2),
            -(w0 * f1 - w1 * f0))


@kernel(inline=True)
def dexpinv_T_pair(xi, f, outl, outr):
    """Both transposes at once: ``outl = Jl^-T f`` (the paper's [dlog_xi]^T of Eq. 21b) and
    ``outr = Jr^-T f = outl + ad_xi^T f`` (they differ only in the sign of the ad/2 term, Eq. 13).
    Scalar code (no scratch); out arrays must not alias f."""
    w0, w1, w2, v0, v1, v2 = xi[0], xi[1], xi[2], xi[3], xi[4], xi[5]
    c2, c4, d2, d4 = dexpinv_coeffs(math.sqrt(w0 * w0 + w1 * w1 + w2 * w2))
    y0, y1, y2, y3, y4, y5 = f[0], f[1], f[2], f[3], f[4], f[5]
    a0, a1, a2, a3, a4, a5 = _adT6(w0, w1, w2, v0, v1, v2, y0, y1, y2, y3, y4, y5)
    b0, b1, b2, b3, b4, b5 = _adT6(w0, w1, w2, v0, v1, v2, a0, a1, a2, a3, a4, a5)
    e0, e1, e2, e3, e4, e5 = _adT6(w0, w1, w2, v0, v1, v2, b0, b1, b2, b3, b4, b5)
    e0, e1, e2, e3, e4, e5 = _adT6(w0, w1, w2, v0, v1, v2, e0, e1, e2, e3, e4, e5)
    outl[0] = y0 - 0.5 * a0 + c2 * b0 + c4 * e0
    outl[1] = y1 - 0.5 * a1 + c2 * b1 + c4 * e1
    outl[2] = y2 - 0.5 * a2 + c2 * b2 + c4 * e2
    outl[3] = y3 - 0.5 * a3 + c2 * b3 + c4 * e3
    outl[4] = y4 - 0.5 * a4 + c2 * b4 + c4 * e4
    outl[5] = y5 - 0.5 * a5 + c2 * b5 + c4 * e5
    outr[0] = outl[0] + a0
    outr[1] = outl[1] + a1
    outr[2] = outl[2] + a2
    outr[3] = outl[3] + a3
    outr[4] = outl[4] + a4
    outr[5] = outl[5] + a5


@kernel(inline=True)
def so3_log(R, out):
    """Rotation vector of R (``out[0:3]``), robust near th = pi."""
    c = 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)
    if c > 1.0:
        c = 1.0
    if c < -1.0:
        c = -1.0
    x = 0.5 * (R[2, 1] - R[1, 2])
    y = 0.5 * (R[0, 2] - R[2, 0])
    z = 0.5 * (R[1, 0] - R[0, 1])
    s = math.sqrt(x * x + y * y + z * z)
    if c > 0.0 and s < 0.1:  # th / sin th = asin(s) / s, series (next term 143 s^14 / 10240 < 2e-16)
        s2 = s * s
        k = 1.0 + s2 * (1.0 / 6.0 + s2 * (3.0 / 40.0 + s2 * (5.0 / 112.0 + s2 * (35.0 / 1152.0 + s2 * (
            63.0 / 2816.0 + s2 * (231.0 / 13312.0))))))
        out[0] = k * x
        out[1] = k * y
        out[2] = k * z
        return
    th = math.atan2(s, c)
    if c > -0.9:
        if th < 1e-6:
            k = 1.0 + th * th / 6.0  # th / sin th
        else:
            k = th / s
        out[0] = k * x
        out[1] = k * y
        out[2] = k * z
        return
    # near pi: axis from the symmetric part, R + R^T - 2c I = 2 (1 - c) u u^T
    d = 1.0 - c
    ux = math.sqrt(max((R[0, 0] - c) / d, 0.0))
    uy = math.sqrt(max((R[1, 1] - c) / d, 0.0))
    uz = math.sqrt(max((R[2, 2] - c) / d, 0.0))
    if ux >= uy and ux >= uz:
        uy = (R[0, 1] + R[1, 0]) / (2.0 * d * ux)
        uz = (R[0, 2] + R[2, 0]) / (2.0 * d * ux)
    elif uy >= uz:
        ux = (R[0, 1] + R[1, 0]) / (2.0 * d * uy)
        uz = (R[1, 2] + R[2, 1]) / (2.0 * d * uy)
    else:
        ux = (R[0, 2] + R[2, 0]) / (2.0 * d * uz)
        uy = (R[1, 2] + R[2, 1]) / (2.0 * d * uz)
    n = math.sqrt(ux * ux + uy * uy + uz * uz)
    if ux * x + uy * y + uz * z < 0.0:
        n = -n
    out[0] = th * ux / n
    out[1] = th * uy / n
    out[2] = th * uz / n


@kernel(inline=True)
def se3_log(R, p, out):
    """Twist ``xi = log(T)`` = [w; v] with ``v = J_SO3(w)^-1 p`` (inverse of Eq. 10's exp)."""
    so3_log(R, out)
    wx, wy, wz = out[0], out[1], out[2]
    t2 = wx * wx + wy * wy + wz * wz
    th = math.sqrt(t2)
    if th < 0.2:  # (1 - (th/2) cot(th/2)) / th^2, series (next term th^12 / 7.5e10 < 1e-19)
        g = 1.0 / 12.0 + t2 * (1.0 / 720.0 + t2 * (1.0 / 30240.0 + t2 * (1.0 / 1209600.0 + t2 * (
            1.0 / 47900160.0 + t2 * (691.0 / 1307674368000.0)))))
    else:
        h = 0.5 * th
        g = (1.0 - h * math.cos(h) / math.sin(h)) / t2
    px, py, pz = p[0], p[1], p[2]
    cx = wy * pz - wz * py
    cy = wz * px - wx * pz
    cz = wx * py - wy * px
    ccx = wy * cz - wz * cy
    ccy = wz * cx - wx * cz
    ccz = wx * cy - wy * cx
    out[3] = px - 0.5 * cx + g * ccx
    out[4] = py - 0.5 * cy + g * ccy
    out[5] = pz - 0.5 * cz + g * ccz


@kernel
def se3_exp(xi, R, p):
    """``T = exp([xi])`` (Rodrigues; p = J_SO3(w) v)."""
    wx, wy, wz = xi[0], xi[1], xi[2]
    t2 = wx * wx + wy * wy + wz * wz
    th = math.sqrt(t2)
    if th < 1e-4:
        a = 1.0 - t2 / 6.0
        bb = 0.5 - t2 / 24.0
        cc = 1.0 / 6.0 - t2 / 120.0
    else:
        a = math.sin(th) / th
        bb = (1.0 - math.cos(th)) / t2
        cc = (th - math.sin(th)) / (t2 * th)
    W = ((0.0, -wz, wy), (wz, 0.0, -wx), (-wy, wx, 0.0))
    for r in range(3):
        for c in range(3):
            w2 = W[r][0] * W[0][c] + W[r][1] * W[1][c] + W[r][2] * W[2][c]
            R[r, c] = (1.0 if r == c else 0.0) + a * W[r][c] + bb * w2
    vx, vy, vz = xi[3], xi[4], xi[5]
    cx = wy * vz - wz * vy
    cy = wz * vx - wx * vz
    cz = wx * vy - wy * vx
    ccx = wy * cz - wz * cy
    ccy = wz * cx - wx * cz
    ccz = wx * cy - wy * cx
    p[0] = vx + bb * cx + cc * ccx
    p[1] = vy + bb * cy + cc * ccy
    p[2] = vz + bb * cz + cc * ccz
