"""Tendons (:mod:`pbsim.model.tendons`): length, velocity and moment arms, and the forces they
put on the joints.

Fixed tendon: ``L = sum_i c_i q_i`` over 1-DOF joints, moment ``J = dL/dv = c``.
Spatial tendon: a path of sites, pulleys and wrapping geoms; each straight piece between world
points ``x1`` (on body A) and ``x2`` (on body B) adds ``|x2 - x1| / div`` to L and
``u^T (J_B(x2) - J_A(x1)) / div`` to J (``u`` the unit direction, ``div`` the divisor of the last
pulley).  A sphere or cylinder between two sites makes the piece wrap when the straight line
would pass through it, or around the side its side site is on: two tangent lines and an arc
(a great circle of the sphere, a helix on the cylinder).  The tangent points move with the geom's
body in J: the wrapped length is a minimum over the arc's end points, so its derivative is the
straight pieces' alone (envelope theorem); checked against finite differences and against
MuJoCo's ``ten_length``/``ten_J`` (tests/dynamics/test_tendon.py).

Forces (every integrator): the tendon force ``F`` (passive: spring with a dead band, damping,
limit spring-damper, smoothed friction; actuation through the tendon: the control's ``ta_*``
rows, :mod:`pbsim.control.actuators`) acts on the joints as ``tau = J^T F``.

- explicit steps (:func:`tendon_forces`, called by ``control/solve.py: joint_forces``): ``F`` at
  ``(q, v)``, explicit as in MuJoCo's Euler (spring, damping, actuators: the trajectory equals
  MuJoCo's Euler to round-off).  With ``implicit`` (semi-implicit Euler, NE methods) a fixed
  tendon's limit spring-damper and friction (pbsim's own stiff terms) put their ``dt kd + dt^2
  kp`` on the solver's diagonal as ``a |c_i| sum_j |c_j|`` (a diagonal that bounds ``a c c^T``, so
  a limit is stable at any dt; it adds O(dt) damping while a limit is engaged).  A stiff tendon
  spring or servo at large dt is the position-based methods' case.
- position-based steps (pbad, pbfd, pbd_nmdp, pbd_friction: :func:`tendon_energy` /
  :func:`tendon_hessian`): fixed tendons as potentials of the step (``k/2 r^2``, damping
  ``b/(2 dt) dL^2``, limit ``kp/2 r^2``, friction ``f dt v_f log cosh``, an actuator's affine force
  as its potential), exact gradient and Hessian ``w c c^T``; collocation (pbad3/4):
  :func:`tendon_residual`.  Spatial tendons are refused by those methods (``tendon_check``).
"""

import math

import numpy as np
from numba import prange

from pbsim.jit import kernel
from pbsim.dynamics.jacobian import dof_point_twist
from pbsim.dynamics.kinematics import fk_state, point_motion
from pbsim.dynamics.muscle import JOINT_ROW, muscle_force
from pbsim.dynamics.passive import FRICTION_VEL

JOINT, SITE, SPHERE, CYLINDER, PULLEY = 0, 1, 2, 3, 4  # pbsim.model.tendons
MINVAL = 1e-15


@kernel
def fixed_lv(m, t, q, v):
    """``(L, dL/dt)`` of fixed tendon ``t``: ``L = sum c_i q_i``."""
    L = 0.0
    Ld = 0.0
    for k in range(m.ten_adr[t], m.ten_adr[t + 1]):
        c = m.ten_prm[k]
        L += c * q[m.ten_qadr[k]]
        Ld += c * v[m.ten_dof[k]]
    return L, Ld


@kernel
def fixed_abs_sum(m, t):
    """``sum_j |c_j|`` of fixed tendon ``t``."""
    s = 0.0
    for k in range(m.ten_adr[t], m.ten_adr[t + 1]):
        s += abs(m.ten_prm[k])
    return s


# ---------------------------------------------------------------------------------------------
# spatial tendons


@kernel(inline=True)
def body_point(w, b, body, p):
    """World position of point ``p`` (body frame) of ``body`` (-1: world)."""
    if body < 0:
        return p[0], p[1], p[2]
    R = w.Rw[b, body]
    o = w.pw[b, body]
    return (o[0] + R[0, 0] * p[0] + R[0, 1] * p[1] + R[0, 2] * p[2],
            o[1] + R[1, 0] * p[0] + R[1, 1] * p[1] + R[1, 2] * p[2],
            o[2] + R[2, 0] * p[0] + R[2, 1] * p[1] + R[2, 2] * p[2])


@kernel
def point_jt(m, w, b, body, px, py, pz, fx, fy, fz, v, out, scale):
    """For a world force ``f`` at world point ``x`` on ``body``: returns ``(J_lin(x)^T f) . v`` and
    adds ``scale J_lin(x)^T f`` to ``out`` (J as :func:`pbsim.dynamics.jacobian.point_jacobian`)."""
    Rw = w.Rw[b]
    pw = w.pw[b]
    dot = 0.0
    j = body
    while j >= 0:
        j0 = m.iv[j]
        for k in range(m.nvj[j]):
            wx, wy, wz, vx, vy, vz = dof_point_twist(m, Rw, pw, j, k, px, py, pz)
            g = vx * fx + vy * fy + vz * fz
            dot += g * v[j0 + k]
            out[j0 + k] += scale * g
        j = m.parent[j]
    return dot


@kernel(inline=True)
def segments_cross(p1x, p1y, p2x, p2y, p3x, p3y, p4x, p4y):
    """Whether 2-D segments p1-p2 and p3-p4 intersect."""
    det = (p4y - p3y) * (p2x - p1x) - (p4x - p3x) * (p2y - p1y)
    if abs(det) < MINVAL:
        return False
    u = ((p4x - p3x) * (p1y - p3y) - (p4y - p3y) * (p1x - p3x)) / det  # p1 + u (p2 - p1) = p3 + s (p4 - p3)
    v = ((p2x - p1x) * (p1y - p3y) - (p2y - p1y) * (p1x - p3x)) / det
    return 0.0 <= u <= 1.0 and 0.0 <= v <= 1.0


@kernel
def wrap_circle(ax, ay, bx, by, sx, sy, has_side, r):
    """The 2-D wrap of a string from ``a`` to ``b`` around the circle of radius ``r`` at the
    origin, as MuJoCo decides it: ``(ok, t0x, t0y, t1x, t1y, arc)``, ``t0``/``t1`` the tangent
    points, ``arc`` the arc length travelled from t0 to t1.

    No wrap when a point is inside the circle, or when the segment a-b misses the circle and
    (there is no side site ``s`` or the segment's point nearest the centre is on the side of
    ``s``).  Of the two ways around (counter-clockwise, clockwise; tangent points ``t = r^2/l^2 a
    +- r sqrt(l^2 - r^2)/l^2 perp(a)``) the one whose chord middle points toward ``s``, or without
    ``s`` the shorter chord, and never one whose two straight pieces cross (then no wrap)."""
    la2 = ax * ax + ay * ay
    lb2 = bx * bx + by * by
    r2 = r * r
    if la2 < r2 or lb2 < r2 or r < MINVAL:
        return False, 0.0, 0.0, 0.0, 0.0, 0.0
    dx = bx - ax
    dy = by - ay
    dd = dx * dx + dy * dy
    if dd < MINVAL:
        return False, 0.0, 0.0, 0.0, 0.0, 0.0
    tt = min(max(-(ax * dx + ay * dy) / dd, 0.0), 1.0)
    cx = ax + tt * dx  # the segment's point nearest the centre
    cy = ay + tt * dy
    if cx * cx + cy * cy > r2 and (not has_side or cx * sx + cy * sy >= 0.0):
        return False, 0.0, 0.0, 0.0, 0.0, 0.0
    ha = r * math.sqrt(la2 - r2) / la2
    hb = r * math.sqrt(lb2 - r2) / lb2
    best = -1e300
    bsgn = 0.0
    for sgn in (-1.0, 1.0):  # +1: counter-clockwise from t0 to t1, -1: clockwise
        # ccw: t0 = c a + h perp(a) (the string arrives along perp(t0)), t1 = c b - h perp(b)
        t0x = r2 / la2 * ax - sgn * ha * ay
        t0y = r2 / la2 * ay + sgn * ha * ax
        t1x = r2 / lb2 * bx + sgn * hb * by
        t1y = r2 / lb2 * by - sgn * hb * bx
        if has_side:  # the chord middle's direction toward s
            mx = t0x + t1x
            my = t0y + t1y
            nm = math.sqrt(mx * mx + my * my)
            good = (mx * sx + my * sy) / nm if nm > MINVAL else 0.0
        else:  # the shorter chord
            good = -((t0x - t1x) ** 2 + (t0y - t1y) ** 2)
        if segments_cross(ax, ay, t0x, t0y, bx, by, t1x, t1y):
            good = -1e4
        if good >= best:  # a tie goes to the counter-clockwise way, as MuJoCo's
            best = good
            bsgn = sgn
    sgn = bsgn
    t0x = r2 / la2 * ax - sgn * ha * ay
    t0y = r2 / la2 * ay + sgn * ha * ax
    t1x = r2 / lb2 * bx + sgn * hb * by
    t1y = r2 / lb2 * by - sgn * hb * bx
    if segments_cross(ax, ay, t0x, t0y, bx, by, t1x, t1y):
        return False, 0.0, 0.0, 0.0, 0.0, 0.0
    ang = math.atan2(sgn * (t0x * t1y - t0y * t1x), t0x * t1x + t0y * t1y)  # angle travelled
    if ang < 0.0:
        ang += 2.0 * math.pi
    return True, t0x, t0y, t1x, t1y, r * ang


@kernel
def wrap_geom(m, w, b, k, x0, y0, z0, x1, y1, z1):
    """Wrap of the piece from world ``x0`` to ``x1`` over geom element ``k`` (sphere/cylinder):
    ``(ok, world t0, world t1, arc length)``."""
    R0 = m.ten_rot[k]
    body = m.ten_wbody[k]
    # geom frame in world: Rg = R_body R0, cg = body_point(pos)
    cx, cy, cz = body_point(w, b, body, m.ten_pos[k])
    if body >= 0:
        Rb = w.Rw[b, body]
        g00 = Rb[0, 0] * R0[0, 0] + Rb[0, 1] * R0[1, 0] + Rb[0, 2] * R0[2, 0]
        g01 = Rb[0, 0] * R0[0, 1] + Rb[0, 1] * R0[1, 1] + Rb[0, 2] * R0[2, 1]
        g02 = Rb[0, 0] * R0[0, 2] + Rb[0, 1] * R0[1, 2] + Rb[0, 2] * R0[2, 2]
        g10 = Rb[1, 0] * R0[0, 0] + Rb[1, 1] * R0[1, 0] + Rb[1, 2] * R0[2, 0]
        g11 = Rb[1, 0] * R0[0, 1] + Rb[1, 1] * R0[1, 1] + Rb[1, 2] * R0[2, 1]
        g12 = Rb[1, 0] * R0[0, 2] + Rb[1, 1] * R0[1, 2] + Rb[1, 2] * R0[2, 2]
        g20 = Rb[2, 0] * R0[0, 0] + Rb[2, 1] * R0[1, 0] + Rb[2, 2] * R0[2, 0]
        g21 = Rb[2, 0] * R0[0, 1] + Rb[2, 1] * R0[1, 1] + Rb[2, 2] * R0[2, 1]
        g22 = Rb[2, 0] * R0[0, 2] + Rb[2, 1] * R0[1, 2] + Rb[2, 2] * R0[2, 2]
    else:  # geom frame in world: Rg = R_body R0
        g00, g01, g02 = R0[0, 0], R0[0, 1], R0[0, 2]
        g10, g11, g12 = R0[1, 0], R0[1, 1], R0[1, 2]
        g20, g21, g22 = R0[2, 0], R0[2, 1], R0[2, 2]
    # points in the geom frame: p = Rg^T (x - c)
    ex, ey, ez = x0 - cx, y0 - cy, z0 - cz
    p0x = g00 * ex + g10 * ey + g20 * ez
    p0y = g01 * ex + g11 * ey + g21 * ez
    p0z = g02 * ex + g12 * ey + g22 * ez
    ex, ey, ez = x1 - cx, y1 - cy, z1 - cz
    p1x = g00 * ex + g10 * ey + g20 * ez
    p1y = g01 * ex + g11 * ey + g21 * ez
    p1z = g02 * ex + g12 * ey + g22 * ez
    has_side = m.ten_sbody[k] != -2
    sx = sy = sz = 0.0
    if has_side:
        wx, wy, wz = body_point(w, b, m.ten_sbody[k], m.ten_side[k])
        ex, ey, ez = wx - cx, wy - cy, wz - cz
        sx = g00 * ex + g10 * ey + g20 * ez
        sy = g01 * ex + g11 * ey + g21 * ez
        sz = g02 * ex + g12 * ey + g22 * ez
    r = m.ten_prm[k]
    if m.ten_wtype[k] == SPHERE:
        l0 = math.sqrt(p0x * p0x + p0y * p0y + p0z * p0z)
        if l0 < MINVAL:
            return False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        a0x, a0y, a0z = p0x / l0, p0y / l0, p0z / l0  # plane axes: a0 along p0, a1 toward p1
        nx = p0y * p1z - p0z * p1y
        ny = p0z * p1x - p0x * p1z
        nz = p0x * p1y - p0y * p1x
        nn = math.sqrt(nx * nx + ny * ny + nz * nz)
        if nn < 1e-12 * l0 * l0:  # p0, p1 and the centre in a line: the plane through the side site
            nx = p0y * sz - p0z * sy
            ny = p0z * sx - p0x * sz
            nz = p0x * sy - p0y * sx
            nn = math.sqrt(nx * nx + ny * ny + nz * nz)
            if nn < MINVAL:  # any plane through the line
                if abs(a0x) < 0.9:
                    nx, ny, nz = 0.0, -a0z, a0y
                else:
                    nx, ny, nz = a0z, 0.0, -a0x
                nn = math.sqrt(nx * nx + ny * ny + nz * nz)
        nx, ny, nz = nx / nn, ny / nn, nz / nn
        a1x = ny * a0z - nz * a0y
        a1y = nz * a0x - nx * a0z
        a1z = nx * a0y - ny * a0x
        ok, t0x, t0y, t1x, t1y, arc = wrap_circle(
            l0, 0.0, p1x * a0x + p1y * a0y + p1z * a0z, p1x * a1x + p1y * a1y + p1z * a1z,
            sx * a0x + sy * a0y + sz * a0z, sx * a1x + sy * a1y + sz * a1z, has_side, r)
        if not ok:
            return False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        q0x, q0y, q0z = t0x * a0x + t0y * a1x, t0x * a0y + t0y * a1y, t0x * a0z + t0y * a1z
        q1x, q1y, q1z = t1x * a0x + t1y * a1x, t1x * a0y + t1y * a1y, t1x * a0z + t1y * a1z
    else:  # cylinder along the geom's z: the circle wrap in x-y, z along a helix
        ok, t0x, t0y, t1x, t1y, arc = wrap_circle(p0x, p0y, p1x, p1y, sx, sy, has_side, r)
        if not ok:
            return False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        L0 = math.sqrt((p0x - t0x) ** 2 + (p0y - t0y) ** 2)
        L1 = math.sqrt((p1x - t1x) ** 2 + (p1y - t1y) ** 2)
        tot = L0 + arc + L1
        za = p0z + (p1z - p0z) * L0 / tot  # z of the tangent points: proportional to planar length
        zb = p0z + (p1z - p0z) * (L0 + arc) / tot
        arc = math.sqrt(arc * arc + (zb - za) * (zb - za))
        q0x, q0y, q0z = t0x, t0y, za
        q1x, q1y, q1z = t1x, t1y, zb
    # back to world: x = c + Rg p
    return (True,
            cx + g00 * q0x + g01 * q0y + g02 * q0z, cy + g10 * q0x + g11 * q0y + g12 * q0z,
            cz + g20 * q0x + g21 * q0y + g22 * q0z,
            cx + g00 * q1x + g01 * q1y + g02 * q1z, cy + g10 * q1x + g11 * q1y + g12 * q1z,
            cz + g20 * q1x + g21 * q1y + g22 * q1z, arc)


@kernel
def straight_piece(m, w, b, A, x0, y0, z0, B, x1, y1, z1, div, v, out, scale):
    """A straight piece from ``x0`` (on body A) to ``x1`` (on B): returns ``(length / div,
    u^T (J_B v_B - J_A v_A) / div)`` and adds ``scale / div * u^T (J_B - J_A)`` to ``out``."""
    dx, dy, dz = x1 - x0, y1 - y0, z1 - z0
    ln = math.sqrt(dx * dx + dy * dy + dz * dz)
    if ln < MINVAL:
        return 0.0, 0.0
    ux, uy, uz = dx / ln / div, dy / ln / div, dz / ln / div
    vel = point_jt(m, w, b, B, x1, y1, z1, ux, uy, uz, v, out, scale)
    vel -= point_jt(m, w, b, A, x0, y0, z0, ux, uy, uz, v, out, -scale)
    return ln / div, vel


@kernel(inline=True)
def next_piece(m, j, a1, div):
    """Walk spatial tendon path elements from ``j`` past pulleys (taking their divisor): returns
    ``(j, div)``, ``j`` the start of the next piece (``j + 1`` its next site or wrapping geom), or
    ``j >= a1 - 1`` at the end of the path ``[.., a1)``."""
    while j < a1 - 1:
        if m.ten_wtype[j] == PULLEY:
            div = m.ten_prm[j]
            j += 1
        elif m.ten_wtype[j + 1] == PULLEY:
            j += 1
        else:
            break
    return j, div


@kernel
def spatial_lv(m, w, b, t, v, out, scale):
    """``(L, dL/dt)`` of spatial tendon ``t`` (world poses in ``w`` for state b) and ``scale J^T``
    (``J = dL/dv``, a row of nv) added to ``out``."""
    a0 = m.ten_adr[t]
    a1 = m.ten_adr[t + 1]
    L = 0.0
    Ld = 0.0
    div = 1.0
    j = a0
    while True:
        j, div = next_piece(m, j, a1, div)
        if j >= a1 - 1:
            break
        t1 = m.ten_wtype[j + 1]
        A = m.ten_wbody[j]
        x0, y0, z0 = body_point(w, b, A, m.ten_pos[j])
        if t1 == SITE:
            B = m.ten_wbody[j + 1]
            x1, y1, z1 = body_point(w, b, B, m.ten_pos[j + 1])
            dl, dv = straight_piece(m, w, b, A, x0, y0, z0, B, x1, y1, z1, div, v, out, scale)
            L += dl
            Ld += dv
            j += 1
            continue
        # a wrapping geom between sites j and j + 2
        G = m.ten_wbody[j + 1]
        B = m.ten_wbody[j + 2]
        x1, y1, z1 = body_point(w, b, B, m.ten_pos[j + 2])
        ok, ax, ay, az, bx, by, bz, arc = wrap_geom(m, w, b, j + 1, x0, y0, z0, x1, y1, z1)
        if ok:
            dl, dv = straight_piece(m, w, b, A, x0, y0, z0, G, ax, ay, az, div, v, out, scale)
            L += dl + arc / div
            Ld += dv
            dl, dv = straight_piece(m, w, b, G, bx, by, bz, B, x1, y1, z1, div, v, out, scale)
            L += dl
            Ld += dv
        else:
            dl, dv = straight_piece(m, w, b, A, x0, y0, z0, B, x1, y1, z1, div, v, out, scale)
            L += dl
            Ld += dv
        j += 2
    return L, Ld


@kernel
def tendon_lv(m, w, b, t, q, v, out, scale):
    """``(L, dL/dt)`` of tendon ``t`` and ``scale J^T`` added to ``out`` (spatial tendons need the
    world poses of state b in ``w``)."""
    if m.ten_kind[t] == 0:
        L, Ld = fixed_lv(m, t, q, v)
        if scale != 0.0:
            for k in range(m.ten_adr[t], m.ten_adr[t + 1]):
                out[m.ten_dof[k]] += scale * m.ten_prm[k]
        return L, Ld
    return spatial_lv(m, w, b, t, v, out, scale)


@kernel
def point_vel_acc(w, b, body, x, y, z):
    """World velocity and classical acceleration at ``qdd = 0`` of the world point (x, y, z) fixed
    on ``body`` (zeros for the world): :func:`pbsim.dynamics.kinematics.point_motion` in world axes."""
    if body < 0:
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    R = w.Rw[b, body]
    o = w.pw[b, body]
    rx, ry, rz = x - o[0], y - o[1], z - o[2]
    t0 = R[0, 0] * rx + R[1, 0] * ry + R[2, 0] * rz  # p in body axes
    t1 = R[0, 1] * rx + R[1, 1] * ry + R[2, 1] * rz
    t2 = R[0, 2] * rx + R[1, 2] * ry + R[2, 2] * rz
    vx, vy, vz, ax, ay, az = point_motion(w, b, body, t0, t1, t2)
    return (R[0, 0] * vx + R[0, 1] * vy + R[0, 2] * vz, R[1, 0] * vx + R[1, 1] * vy + R[1, 2] * vz,
            R[2, 0] * vx + R[2, 1] * vy + R[2, 2] * vz, R[0, 0] * ax + R[0, 1] * ay + R[0, 2] * az,
            R[1, 0] * ax + R[1, 1] * ay + R[1, 2] * az, R[2, 0] * ax + R[2, 1] * ay + R[2, 2] * az)


@kernel
def tendon_jdot_v(m, w, b, t):
    """``(dJ/dt) v`` of tendon ``t`` (MuJoCo's ``mj_tendonDot``): 0 for a fixed tendon; for a
    spatial one, per straight piece between sites on different bodies (``u`` its direction, ``l``
    its length, ``dv``/``da`` the ends' relative velocity and acceleration at ``qdd = 0``, through
    ``div``): ``((|dv|^2 - (u . dv)^2) / l + u . da) / div``.  Pieces around a wrapping geom add
    nothing (MuJoCo has no ``Jdot`` for them).  Expects world poses, ``w.vel`` and ``w.acc`` of
    :func:`point_vel_acc`."""
    if m.ten_kind[t] == 0:
        return 0.0
    res = 0.0
    div = 1.0
    j = m.ten_adr[t]
    a1 = m.ten_adr[t + 1]
    while True:
        j, div = next_piece(m, j, a1, div)
        if j >= a1 - 1:
            break
        if m.ten_wtype[j + 1] != SITE:  # site - geom - site
            j += 2
            continue
        A = m.ten_wbody[j]
        B = m.ten_wbody[j + 1]
        if A != B:
            x0, y0, z0 = body_point(w, b, A, m.ten_pos[j])
            x1, y1, z1 = body_point(w, b, B, m.ten_pos[j + 1])
            dx, dy, dz = x1 - x0, y1 - y0, z1 - z0
            ln = math.sqrt(dx * dx + dy * dy + dz * dz)
            if ln > MINVAL:
                v0x, v0y, v0z, a0x, a0y, a0z = point_vel_acc(w, b, A, x0, y0, z0)
                v1x, v1y, v1z, a1x, a1y, a1z = point_vel_acc(w, b, B, x1, y1, z1)
                dvx, dvy, dvz = v1x - v0x, v1y - v0y, v1z - v0z
                ud = (dx * dvx + dy * dvy + dz * dvz) / ln
                ua = (dx * (a1x - a0x) + dy * (a1y - a0y) + dz * (a1z - a0z)) / ln
                res += ((dvx * dvx + dvy * dvy + dvz * dvz - ud * ud) / ln + ua) / div
        j += 1
    return res


# ---------------------------------------------------------------------------------------------
# forces


@kernel(inline=True)
def deadband(L, lo, hi):
    """``L - L_s``, ``L_s`` the nearest point of [lo, hi] (0 inside the dead band)."""
    if L > hi:
        return L - hi
    if L < lo:
        return L - lo
    return 0.0


@kernel
def passive_force(m, t, L, Ld, dt, implicit, soft_limit):
    """Tendon t's passive force ``F`` at ``(L, dL/dt)`` and the implicit weight ``a`` of its
    friction and limit (the terms :func:`tendon_forces` puts on the diagonal); spring and damping
    are explicit, as in MuJoCo's Euler.  ``soft_limit``: the range is MuJoCo's limit constraint
    (:mod:`pbsim.dynamics.limits`), so no limit spring here."""
    F = -m.ten_b[t] * Ld  # F = -k (L - L_s) - b dL/dt
    a = 0.0
    k = m.ten_k[t]
    if k != 0.0:
        F += -k * deadband(L, m.ten_ls[t, 0], m.ten_ls[t, 1])
    f = m.ten_fl[t]
    if f > 0.0:
        th = math.tanh(Ld / FRICTION_VEL)
        F += -f * th  # smoothed dry friction, as the joints'
        a += dt * f / FRICTION_VEL * (1.0 - th * th)
    kp = m.ten_lkp[t]
    if kp > 0.0 and not soft_limit:  # limit: one-sided spring-damper when L + dt dL/dt passes the range
        pred = L + dt * Ld
        e = 0.0
        on = False
        if pred > m.ten_range[t, 1]:
            e = L - m.ten_range[t, 1]
            on = True
        elif pred < m.ten_range[t, 0]:
            e = L - m.ten_range[t, 0]
            on = True
        if on:
            kd = m.ten_lkd[t]
            F += -kp * (e + dt * Ld) - kd * Ld
            a += dt * kd + dt * dt * kp
    return F, a


@kernel
def actuator_force(c, b, t, L, Ld):
    """The force the control's tendon actuators put along tendon ``t`` (MuJoCo's
    ``f = gain u + b0 + b1 l + b2 dl/dt`` with actuator length ``l = gear L``, or a muscle's
    force, clamped to its forcerange, entering the tendon as ``gear f``) and its implicit weights
    ``(-dF/dL, -dF/dLd)`` (none for a muscle: explicit)."""
    F = 0.0
    wk = 0.0
    wd = 0.0
    bc = b if c.ta_c.shape[0] > 1 else 0
    for a in range(c.ta_ten.shape[0]):
        if c.ta_ten[a] != t:
            continue
        g = c.ta_gear[a]
        mus = c.ta_mus[a, 0] != 0.0  # a muscle: its force law at act = ta_c (pbsim.dynamics.muscle), explicit
        if mus:
            f = muscle_force(c.ta_mus[a], c.ta_c[bc, a], g * L, g * Ld)
        else:
            f = c.ta_c[bc, a] + c.ta_b[a, 0] * g * L + c.ta_b[a, 1] * g * Ld
        lo = c.ta_frc[a, 0]
        hi = c.ta_frc[a, 1]
        if f > hi:
            f = hi
        elif f < lo:
            f = lo
        elif not mus:
            wk -= c.ta_b[a, 0] * g * g
            wd -= c.ta_b[a, 1] * g * g
        F += g * f
    return F, wk, wd


@kernel
def joint_muscle_forces(m, c, b, q, v, tau):
    """Muscles on hinge/slide joints (``ta_ten = JOINT_ROW - i``, body ``i``'s joint) into ``tau``:
    the joint is their tendon, of length q (pbsim's q of a hinge/slide is MuJoCo's qpos, so the
    actuator length is MuJoCo's ``gear qpos``) and moment 1, through :func:`actuator_force`;
    explicit (a muscle has no implicit weights)."""
    joints = False
    for a in range(c.ta_ten.shape[0]):
        if c.ta_ten[a] <= JOINT_ROW:
            joints = True
    if not joints:  # tendon actuators only (or none): no walk over the bodies
        return
    for i in range(m.nb):
        if m.nvj[i] == 1:
            F, wk, wd = actuator_force(c, b, JOINT_ROW - i, q[m.iq[i]], v[m.iv[i]])
            tau[m.iv[i]] += F


@kernel
def tendon_forces(m, c, w, b, q, v, dt, implicit, soft_limits, tau, arm):
    """Every tendon's force (passive and actuated) at state row (q, v) into ``tau`` (nv) as
    ``J^T F``; fixed tendons with ``implicit`` put their implicit weight on ``arm`` as
    ``a |c_i| sum_j |c_j|`` (module docstring).  Spatial tendons: FK of (q) into ``w`` first.
    ``soft_limits``: the ranges under MuJoCo's limit law (``m.lim_tsoft``) get no limit spring."""
    joint_muscle_forces(m, c, b, q, v, tau)
    nt = m.ten_nt[0]
    if nt == 0:
        return
    if m.ten_nt[1] > 0:
        fk_state(m, w, b, q)
    for t in range(nt):
        L, Ld = tendon_lv(m, w, b, t, q, v, tau, 0.0)
        F, a = passive_force(m, t, L, Ld, dt, implicit, soft_limits and m.lim_tsoft[t] != 0.0)
        Fa, wk, wd = actuator_force(c, b, t, L, Ld)
        F += Fa
        if F == 0.0 and a == 0.0:
            continue
        tendon_lv(m, w, b, t, q, v, tau, F)
        if implicit and m.ten_kind[t] == 0 and a != 0.0:
            s = fixed_abs_sum(m, t)
            for k in range(m.ten_adr[t], m.ten_adr[t + 1]):
                arm[m.ten_dof[k]] += a * abs(m.ten_prm[k]) * s


@kernel
def tendon_energy(m, c, b, q, d, dt, h):
    """Fixed tendons' potentials in the position-based step (module docstring) at ``q`` for the
    step ``d = q (-) q_k``: adds dE/dd to ``h``, returns E."""
    e = 0.0
    bc = b if c.ta_c.shape[0] > 1 else 0
    for t in range(m.ten_nt[0]):
        if m.ten_kind[t] != 0:
            continue
        L, dL = fixed_lv(m, t, q, d)  # dL: the tendon's change over the step
        gsum = 0.0  # dE/dL
        k = m.ten_k[t]
        if k != 0.0:
            r = deadband(L, m.ten_ls[t, 0], m.ten_ls[t, 1])
            e += 0.5 * k * r * r
            gsum += k * r
        bd = m.ten_b[t]
        if bd != 0.0:
            e += 0.5 * bd / dt * dL * dL
            gsum += bd / dt * dL
        f = m.ten_fl[t]
        if f > 0.0:
            u = dL / (dt * FRICTION_VEL)
            au = abs(u)
            e += f * dt * FRICTION_VEL * (au + math.log1p(math.exp(-2.0 * au)) - math.log(2.0))
            gsum += f * math.tanh(u)
        kp = m.ten_lkp[t]
        if kp > 0.0:
            r = deadband(L, m.ten_range[t, 0], m.ten_range[t, 1])
            e += 0.5 * kp * r * r
            gsum += kp * r
            if r != 0.0:  # its damper kd / (2 dt) (r - r_k)^2 on the excess (pbsim.integrators.pbad.joints)
                rk = deadband(L - dL, m.ten_range[t, 0], m.ten_range[t, 1])
                cd = m.ten_lkd[t] / dt
                e += 0.5 * cd * (r - rk) * (r - rk) - 0.5 * cd * rk * rk
                gsum += cd * (r - rk)
        for a in range(c.ta_ten.shape[0]):  # actuators: the potential of g (C + b1 g L + b2 g dL/dt)
            if c.ta_ten[a] != t:
                continue
            g = c.ta_gear[a]
            C = c.ta_c[bc, a]
            b1 = c.ta_b[a, 0]
            b2 = c.ta_b[a, 1]
            e += -g * C * L - 0.5 * b1 * g * g * L * L - 0.5 * b2 * g * g / dt * dL * dL
            gsum += -g * (C + b1 * g * L + b2 * g * dL / dt)
        if gsum != 0.0:
            for kk in range(m.ten_adr[t], m.ten_adr[t + 1]):
                h[m.ten_dof[kk]] += gsum * m.ten_prm[kk]
    return e


@kernel
def tendon_weight(m, c, t, L, dL, dt, wvel):
    """d^2E/dL^2 of fixed tendon t's potentials at L with step change dL, ``wvel``: the
    factor of the velocity terms (1/dt in the step objective)."""
    wgt = 0.0
    if m.ten_k[t] != 0.0 and deadband(L, m.ten_ls[t, 0], m.ten_ls[t, 1]) != 0.0:
        wgt += m.ten_k[t]
    wgt += m.ten_b[t] * wvel
    f = m.ten_fl[t]
    if f > 0.0:
        th = math.tanh(dL / (dt * FRICTION_VEL))
        wgt += f / (dt * FRICTION_VEL) * (1.0 - th * th) * dt * wvel
    if m.ten_lkp[t] > 0.0 and deadband(L, m.ten_range[t, 0], m.ten_range[t, 1]) != 0.0:
        wgt += m.ten_lkp[t]
    for a in range(c.ta_ten.shape[0]):
        if c.ta_ten[a] == t:
            g = c.ta_gear[a]
            wgt += -c.ta_b[a, 0] * g * g - c.ta_b[a, 1] * g * g * wvel
    return wgt


@kernel
def tendon_hessian(m, c, b, q, d, dt, H):
    """The Hessian of :func:`tendon_energy` added to ``H``: ``w c c^T`` per fixed tendon."""
    for t in range(m.ten_nt[0]):
        if m.ten_kind[t] != 0:
            continue
        L, dL = fixed_lv(m, t, q, d)
        wgt = tendon_weight(m, c, t, L, dL, dt, 1.0 / dt)
        if m.ten_lkp[t] > 0.0 and deadband(L, m.ten_range[t, 0], m.ten_range[t, 1]) != 0.0:
            wgt += m.ten_lkd[t] / dt  # the limit's damper (tendon_energy)
        if wgt != 0.0:
            for k1 in range(m.ten_adr[t], m.ten_adr[t + 1]):
                for k2 in range(m.ten_adr[t], m.ten_adr[t + 1]):
                    H[m.ten_dof[k1], m.ten_dof[k2]] += wgt * m.ten_prm[k1] * m.ten_prm[k2]


@kernel
def tendon_residual(m, c, b, q, vel, ru):
    """Collocation (pbad3/4, Eq. 6): minus the fixed tendons' joint forces at a node (``q``, joint
    velocity ``vel``) added to ``ru``."""
    for t in range(m.ten_nt[0]):
        if m.ten_kind[t] != 0:
            continue
        L, Ld = fixed_lv(m, t, q, vel)
        F, _a = passive_force(m, t, L, Ld, 0.0, False, False)
        Fa, _wk, _wd = actuator_force(c, b, t, L, Ld)
        F += Fa
        for k in range(m.ten_adr[t], m.ten_adr[t + 1]):
            ru[m.ten_dof[k]] -= F * m.ten_prm[k]


@kernel
def tendon_residual_jacobian(m, c, b, q, vel, dvel, same, J, r0, c0):
    """d :func:`tendon_residual` at node u / d(node v) into block (r0, c0): ``dvel`` = d vel /
    d q_v, ``same``: v == u (the position terms act there)."""
    for t in range(m.ten_nt[0]):
        if m.ten_kind[t] != 0:
            continue
        L, Ld = fixed_lv(m, t, q, vel)
        wpos = tendon_weight(m, c, t, L, 0.0, 1.0, 0.0)  # -dF/dL
        wv = tendon_weight(m, c, t, L, Ld, 1.0, 1.0) - wpos  # -dF/dLd (dt = 1: dL = Ld)
        wgt = wv * dvel + (wpos if same else 0.0)
        if m.ten_lkp[t] > 0.0 and deadband(L, m.ten_range[t, 0], m.ten_range[t, 1]) != 0.0:
            wgt += m.ten_lkd[t] * dvel  # the limit's damper (passive_force with dt = 0)
        if wgt != 0.0:
            for k1 in range(m.ten_adr[t], m.ten_adr[t + 1]):
                for k2 in range(m.ten_adr[t], m.ten_adr[t + 1]):
                    J[r0 + m.ten_dof[k1], c0 + m.ten_dof[k2]] += wgt * m.ten_prm[k1] * m.ten_prm[k2]


# ---------------------------------------------------------------------------------------------
# batch drivers and the Python API


@kernel(parallel=True)
def tendon_state_batch(m, w, q, v, L, Ld, J):
    """Per state b: ``L[b]`` (nt), ``Ld[b]`` and the moments ``J[b]`` (nt, nv)."""
    for i in prange(q.shape[0]):
        b = np.int64(i)
        if m.ten_nt[1] > 0:
            fk_state(m, w, b, q[b])
        for t in range(m.ten_nt[0]):
            for j in range(m.nv):
                J[b, t, j] = 0.0
            a, c = tendon_lv(m, w, b, t, q[b], v[b], J[b, t], 1.0)
            L[b, t] = a
            Ld[b, t] = c


def tendon_state(model, q, v=None):
    """``(L, dL/dt, J)`` of the model's tendons at ``q`` (nq,) or (B, nq) (and ``v``; zeros
    if None): lengths (nt,), velocities (nt,), moment arms ``J = dL/dv`` (nt, nv), batched as q."""
    from pbsim.dynamics.api import as_batch, as_q
    from pbsim.dynamics.workspace import work_for

    Q, single = as_q(model, q, "q")
    V, _ = as_batch(np.zeros(model.nv) if v is None else v, model.nv, "v", Q.shape[0])
    Q = np.ascontiguousarray(Q, dtype=np.float64)
    V = np.ascontiguousarray(V, dtype=np.float64)
    B, nt = Q.shape[0], model.ntendon
    L, Ld, J = np.zeros((B, nt)), np.zeros((B, nt)), np.zeros((B, nt, model.nv))
    if nt:
        tendon_state_batch(model.k, work_for(model, B), Q, V, L, Ld, J)
    return (L[0], Ld[0], J[0]) if single else (L, Ld, J)


def tendon_length(model, q):
    """The model's tendon lengths at ``q``: (nt,) or (B, nt)."""
    return tendon_state(model, q)[0]


def tendon_moment(model, q):
    """The tendons' moment arms ``dL/dv`` at ``q``: (nt, nv) or (B, nt, nv)."""
    return tendon_state(model, q)[2]


def spatial_force_tendons(model) -> list:
    """Names of the spatial tendons that put a force on the model (stiffness, damping, friction,
    a range, or an actuator through them), and of the site-transmission actuators: what the
    position-based methods refuse."""
    t = getattr(model, "tendons", None)
    acts = getattr(model, "actuators", None)
    driven = set() if acts is None else {int(x) for x in getattr(acts, "tendon", []) if x >= 0}
    out = []
    if acts is not None:  # site transmissions: the same (a force through a point of a body)
        out += [f"{n} (actuator with a site transmission)" for n, s in zip(acts.names, getattr(acts, "site", [])) if s >= 0]
    for i in range(0 if t is None else t.nt):
        if t.kind[i] != 1:
            continue
        if (t.stiffness[i] != 0 or t.damping[i] != 0 or t.frictionloss[i] != 0 or t.limit_kp[i] > 0
                or i in driven):
            out.append(t.names[i])
    return out


def explicit_servo_limits(model, q) -> list:
    """The tendon actuators whose state terms (``b1 l + b2 dl/dt``: a servo's stiffness and
    damping along the tendon) the explicit and velocity-level steps apply explicitly, with the
    largest dt at which that is stable at ``q``: ``[(actuator, tendon, dt_max)]``.

    Along the tendon the servo is ``x'' = -(k x + d x') / m_t`` with ``k = -b1 g^2``,
    ``d = -b2 g^2`` and the tendon's effective mass ``m_t = 1 / (J M^-1 J^T)``; semi-implicit
    Euler on it is stable while ``h d / m_t < 2`` and ``h^2 k / m_t < 4 - 2 h d / m_t`` (the
    step matrix's trace and determinant), solved here for h."""
    acts = getattr(model, "actuators", None)
    if acts is None or model.ntendon == 0:
        return []
    from pbsim.dynamics.api import crba

    J = tendon_moment(model, q)
    Minv = np.linalg.inv(crba(model, q))
    out = []
    for a in range(acts.nu):
        t = int(acts.tendon[a])
        if t < 0:
            continue
        g = float(acts.gear[a])
        k, d = -float(acts.bias[a, 1]) * g * g, -float(acts.bias[a, 2]) * g * g
        if k <= 0.0 and d <= 0.0:
            continue
        w = float(J[t] @ Minv @ J[t])  # 1 / m_t
        k, d = max(k, 0.0) * w, max(d, 0.0) * w
        # h^2 k + 2 h d < 4 (this bound also gives h d < 2)
        h = (-d + math.sqrt(d * d + 4.0 * k)) / k if k > 0.0 else 2.0 / d
        out.append((acts.names[a], model.tendons.names[t], h))
    return out
