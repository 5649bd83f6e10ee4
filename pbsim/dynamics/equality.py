"""Equality constraints held exactly (:mod:`pbsim.model.equality`): constrained acceleration by
Gauss's principle through ABA's factor, and the post-step projection.

The K rows ``phi(q) = 0`` (3 connect, 6 weld, 1 joint/tendon) have the Jacobian ``J`` (K, nv) and
the bias ``J' v`` (the rows' acceleration at ``qdd = 0``).  Given ``qdd0`` with ``A qdd0 = f``
(A = M + diag(arm), solved by ABA/MABA), the constrained acceleration is (as
:mod:`pbsim.dynamics.mimic`)::

    qdd = qdd0 + A^-1 J^T lambda,   (J A^-1 J^T) lambda = -J' v - J qdd0

with ``A^-1 J^T`` from one transform-free O(n) sweep over the tree for all rows at once, in world
coordinates with ABA's factor (:mod:`pbsim.dynamics.delassus`), and a K x K Cholesky factor in
which a row whose pivot vanishes (a row dependent on earlier ones: the out-of-plane row of a
planar loop) is dropped with multiplier 0.  Violations are removed
after every step by projection (post-stabilisation, Ascher et al. 1994) in the metric ``A`` with
the step's factor: ``q <- q (+) A^-1 J^T lambda_q``, ``(J A^-1 J^T) lambda_q = -phi(q)``, then
``v <- v + A^-1 J^T lambda_v``, ``(J A^-1 J^T) lambda_v = -J(q) v`` (Runge-Kutta).  Semi-implicit
Euler instead aims its acceleration at the new position's constraint
(:func:`equality_step_target`) and projects q alone, with ``phi`` only (no Jacobian at the new q);
where every row is linear in q (:func:`eq_rows_linear`) that aim is exact, and the start's own
violation is removed inside the position update (:func:`equality_correction`), with no projection.

Rows (world axes; body b's pose ``(R_b, x_b)``, its world angular velocity ``w_b``):

- connect/weld position: ``phi = x_1 + R_1 p_1 - x_2 - R_2 p_2``; ``J`` the difference of the
  points' linear Jacobians; bias: the difference of the points' classical accelerations at
  ``qdd = 0`` (``a + wd x p + w x (v + w x p)`` in body coordinates);
- weld rotation: ``e = conj(Q_2) Q_1`` (``Q_1``: body1's target frame, ``Q_2``: body2's frame,
  scalar part ``s >= 0``), ``phi = vec(e)``; ``d vec(e)/dt = G (w_1 - w_2)``,
  ``G = 1/2 (s I - [vec(e)]x) R_Q2^T``; bias ``G (wd_1 - wd_2) + Gd (w_1 - w_2)`` with
  ``Gd dw = 1/2 (sd u - vec(e)d x u) + 1/2 (s I - [vec(e)]x) R_Q2^T (dw x w_2)``, ``u = R_Q2^T dw``;
- joint/tendon: ``phi = (y_1 - r_1) - P(y_2 - r_2)`` with ``y`` a joint coordinate or fixed-tendon
  length ``c . q``; ``J = c_1 - P'(x) c_2``, bias ``-P''(x) (c_2 . v)^2``.
"""

import math

import numpy as np
from numba import prange

from pbsim.jit import kernel, unused, unused_float
from pbsim.dynamics.joints import integrate_config
from pbsim.dynamics.kinematics import fk_state, point_motion, velocity_pass, world_pass
from pbsim.dynamics.delassus import delassus, responses, world_force_axes, world_motion_axes
from pbsim.dynamics.minv import minv_factor
from pbsim.dynamics.spatial import motion_to_child
from pbsim.dynamics.workspace import make_work

CONNECT, WELD, JOINT, TENDON = 0, 1, 2, 3
# The kernels a position-based step (pbad, pbfd, pbd_friction, nmdp, pbd_nmdp) reaches only for
# equality constraints, with their stand-ins: a build for a model without any replaces them
# (pbsim.jit.Variants), since carried unused they slowed the free step (pbsim.jit.HEAVY_FEATURES).
PENALTY_FEATURE = {"equality_penalty": unused_float, "equality_project_mass": unused,
                   "equality_second_order_correction": unused}
DROP_TOL = 1e-11  # a pivot below DROP_TOL * max diag(J A^-1 J^T) drops its row


@kernel
def eq_has_bodies(m):
    """Whether a connect or weld row exists (the rows that need poses; joint/tendon rows do not)."""
    for e in range(m.eq_type.shape[0]):
        if m.eq_type[e] == CONNECT or m.eq_type[e] == WELD:
            return True
    return False


@kernel
def eq_bias_pass(m, w, b):
    """Body spatial accelerations at ``qdd = 0`` (body coordinates) into ``w.acc``:
    ``a_i = X_i a_parent + c_i`` (no gravity).  Expects ``velocity_pass``."""
    acc = w.acc[b]
    c = w.c[b]
    for i in range(m.nb):
        par = m.parent[i]
        if par >= 0:
            motion_to_child(w.R[b, i], w.p[b, i], acc[par], acc[i])
            for r in range(6):
                acc[i, r] += c[i, r]
        else:
            for r in range(6):
                acc[i, r] = c[i, r]


@kernel
def eq_point_rows(m, w, b, body, pt, sign, J, r0, phi, bias, with_bias, with_j):
    """Add ``sign`` times body ``body``'s point ``pt`` (body frame) to rows r0..r0+2: its world
    position to ``phi``, (``with_j``) its linear Jacobian to ``J`` and (``with_bias``) its classical
    acceleration at ``qdd = 0`` to ``bias`` (needs ``w.vel`` and :func:`eq_bias_pass`).  Indexed
    in place (no views in the loops: their set-up costs more than the few flops per DOF)."""
    t0, t1, t2 = pt[0], pt[1], pt[2]
    if body < 0:  # the world: a fixed point
        phi[r0] += sign * t0
        phi[r0 + 1] += sign * t1
        phi[r0 + 2] += sign * t2
        return
    Rw = w.Rw[b]
    pw = w.pw[b]
    px = pw[body, 0] + Rw[body, 0, 0] * t0 + Rw[body, 0, 1] * t1 + Rw[body, 0, 2] * t2
    py = pw[body, 1] + Rw[body, 1, 0] * t0 + Rw[body, 1, 1] * t1 + Rw[body, 1, 2] * t2
    pz = pw[body, 2] + Rw[body, 2, 0] * t0 + Rw[body, 2, 1] * t1 + Rw[body, 2, 2] * t2
    phi[r0] += sign * px
    phi[r0 + 1] += sign * py
    phi[r0 + 2] += sign * pz
    if with_bias:  # a + wd x p + w x (v + w x p), body coordinates, then to world
        _vx, _vy, _vz, ax, ay, az = point_motion(w, b, body, t0, t1, t2)
        for k in range(3):
            bias[r0 + k] += sign * (Rw[body, k, 0] * ax + Rw[body, k, 1] * ay + Rw[body, k, 2] * az)
    if not with_j:
        return
    Sw = w.eS[b]
    j = body
    while j >= 0:  # the point's velocity per DOF: v0 + w0 x p with the world axes (delassus Eq. 1)
        j0 = m.iv[j]
        for k in range(m.nvj[j]):
            jk = j0 + k
            s0, s1, s2 = Sw[jk, 0], Sw[jk, 1], Sw[jk, 2]
            J[r0, jk] += sign * (Sw[jk, 3] + s1 * pz - s2 * py)
            J[r0 + 1, jk] += sign * (Sw[jk, 4] + s2 * px - s0 * pz)
            J[r0 + 2, jk] += sign * (Sw[jk, 5] + s0 * py - s1 * px)
        j = m.parent[j]


@kernel
def eq_frame_rot(w, b, body, qf, out):
    """World rotation of the frame ``qf`` (quaternion in body ``body``'s frame) into ``out`` (3, 3)."""
    qw, qx, qy, qz = qf[0], qf[1], qf[2], qf[3]
    f00 = 1.0 - 2.0 * (qy * qy + qz * qz)
    f01 = 2.0 * (qx * qy - qw * qz)
    f02 = 2.0 * (qx * qz + qw * qy)
    f10 = 2.0 * (qx * qy + qw * qz)
    f11 = 1.0 - 2.0 * (qx * qx + qz * qz)
    f12 = 2.0 * (qy * qz - qw * qx)
    f20 = 2.0 * (qx * qz - qw * qy)
    f21 = 2.0 * (qy * qz + qw * qx)
    f22 = 1.0 - 2.0 * (qx * qx + qy * qy)
    if body < 0:
        out[0, 0], out[0, 1], out[0, 2] = f00, f01, f02
        out[1, 0], out[1, 1], out[1, 2] = f10, f11, f12
        out[2, 0], out[2, 1], out[2, 2] = f20, f21, f22
        return
    R = w.Rw[b, body]
    for r in range(3):
        out[r, 0] = R[r, 0] * f00 + R[r, 1] * f10 + R[r, 2] * f20
        out[r, 1] = R[r, 0] * f01 + R[r, 1] * f11 + R[r, 2] * f21
        out[r, 2] = R[r, 0] * f02 + R[r, 1] * f12 + R[r, 2] * f22


@kernel
def eq_angular(m, w, b, body, sign, Rt, J, r0, wout, wdout, with_bias):
    """Add ``sign`` times body ``body``'s world angular Jacobian, premultiplied by ``Rt`` (3, 3), to
    rows r0..r0+2 of ``J``; its world angular velocity and (``with_bias``) angular acceleration at
    ``qdd = 0`` to ``wout``/``wdout``."""
    if body < 0:
        return
    Rw = w.Rw[b]
    for k in range(3):
        wv = 0.0
        wd = 0.0
        for c in range(3):
            wv += Rw[body, k, c] * w.vel[b, body, c]
            if with_bias:
                wd += Rw[body, k, c] * w.acc[b, body, c]
        wout[k] += sign * wv
        wdout[k] += sign * wd
    Sw = w.eS[b]
    j = body
    while j >= 0:
        j0 = m.iv[j]
        for k in range(m.nvj[j]):
            jk = j0 + k
            s0, s1, s2 = Sw[jk, 0], Sw[jk, 1], Sw[jk, 2]  # the world angular axis (delassus Eq. 1)
            for r in range(3):
                J[r0 + r, jk] += sign * (Rt[r, 0] * s0 + Rt[r, 1] * s1 + Rt[r, 2] * s2)
        j = m.parent[j]


@kernel
def eq_weld_rot(m, w, b, e, J, r0, phi, bias, with_bias, with_j):
    """The weld's rotation rows r0..r0+2 (module doc): ``phi = vec(conj(Q_2) Q_1)``, ``J = G (J_w1 -
    J_w2)`` and the bias.  Uses ``w.tmp[b]`` as scratch."""
    b1 = m.eq_body[e, 0]
    b2 = m.eq_body[e, 1]
    R1 = w.tmp[b, 0, 0:3, 0:3]
    R2 = w.tmp[b, 0, 3:6, 0:3]
    Gm = w.tmp[b, 0, 0:3, 3:6]
    dw = w.tmp[b, 1, 0]
    wd = w.tmp[b, 1, 1]
    w2 = w.tmp[b, 1, 2]
    eq_frame_rot(w, b, b1, m.eq_quat[e, 0], R1)
    eq_frame_rot(w, b, b2, m.eq_quat[e, 1], R2)
    # E = R2^T R1: the relative rotation; s = sqrt(1 + tr E) / 2, vec = vee(E - E^T) / (4 s)
    tr = 0.0
    for k in range(3):
        for c in range(3):
            Gm[k, c] = R2[0, k] * R1[0, c] + R2[1, k] * R1[1, c] + R2[2, k] * R1[2, c]  # E
        tr += Gm[k, k]
    s = 0.5 * math.sqrt(max(1.0 + tr, 1e-12))
    ex = (Gm[2, 1] - Gm[1, 2]) / (4.0 * s)
    ey = (Gm[0, 2] - Gm[2, 0]) / (4.0 * s)
    ez = (Gm[1, 0] - Gm[0, 1]) / (4.0 * s)
    phi[r0] += ex
    phi[r0 + 1] += ey
    phi[r0 + 2] += ez
    if not with_j:
        return
    # G = 1/2 (s I - [e]x) R2^T
    for c in range(3):
        t0 = R2[c, 0]
        t1 = R2[c, 1]
        t2 = R2[c, 2]  # column c of R2^T: G[:, c] = 1/2 (s t - e x t)
        Gm[0, c] = 0.5 * (s * t0 + ez * t1 - ey * t2)
        Gm[1, c] = 0.5 * (s * t1 + ex * t2 - ez * t0)
        Gm[2, c] = 0.5 * (s * t2 + ey * t0 - ex * t1)
    for k in range(3):
        dw[k] = 0.0
        wd[k] = 0.0
        w2[k] = 0.0
    eq_angular(m, w, b, b1, 1.0, Gm, J, r0, dw, wd, with_bias)
    eq_angular(m, w, b, b2, -1.0, Gm, J, r0, dw, wd, with_bias)
    if not with_bias:
        return
    if b2 >= 0:  # w_2, world
        for k in range(3):
            t = 0.0
            for c in range(3):
                t += w.Rw[b, b2, k, c] * w.vel[b, b2, c]
            w2[k] = t
    # u = R2^T dw; sd = -1/2 u.e; ed = 1/2 (s u + u x e)
    ux = R2[0, 0] * dw[0] + R2[1, 0] * dw[1] + R2[2, 0] * dw[2]
    uy = R2[0, 1] * dw[0] + R2[1, 1] * dw[1] + R2[2, 1] * dw[2]
    uz = R2[0, 2] * dw[0] + R2[1, 2] * dw[1] + R2[2, 2] * dw[2]
    sd = -0.5 * (ux * ex + uy * ey + uz * ez)
    edx = 0.5 * (s * ux + uy * ez - uz * ey)
    edy = 0.5 * (s * uy + uz * ex - ux * ez)
    edz = 0.5 * (s * uz + ux * ey - uy * ex)
    # c = dw x w_2 (world), g = R2^T c
    cx = dw[1] * w2[2] - dw[2] * w2[1]
    cy = dw[2] * w2[0] - dw[0] * w2[2]
    cz = dw[0] * w2[1] - dw[1] * w2[0]
    gx = R2[0, 0] * cx + R2[1, 0] * cy + R2[2, 0] * cz
    gy = R2[0, 1] * cx + R2[1, 1] * cy + R2[2, 1] * cz
    gz = R2[0, 2] * cx + R2[1, 2] * cy + R2[2, 2] * cz
    # Gd dw = 1/2 (sd u - ed x u) + 1/2 (s g - e x g); + G (wd_1 - wd_2)
    bx = 0.5 * (sd * ux - (edy * uz - edz * uy)) + 0.5 * (s * gx - (ey * gz - ez * gy))
    by = 0.5 * (sd * uy - (edz * ux - edx * uz)) + 0.5 * (s * gy - (ez * gx - ex * gz))
    bz = 0.5 * (sd * uz - (edx * uy - edy * ux)) + 0.5 * (s * gz - (ex * gy - ey * gx))
    bias[r0] += bx + Gm[0, 0] * wd[0] + Gm[0, 1] * wd[1] + Gm[0, 2] * wd[2]
    bias[r0 + 1] += by + Gm[1, 0] * wd[0] + Gm[1, 1] * wd[1] + Gm[1, 2] * wd[2]
    bias[r0 + 2] += bz + Gm[2, 0] * wd[0] + Gm[2, 1] * wd[1] + Gm[2, 2] * wd[2]


@kernel
def eq_scalar(m, e, side, q, v):
    """``(y, ydot)`` of side 0/1 of a joint or tendon constraint: the joint coordinate or the
    fixed tendon's length ``c . q``, and its rate."""
    if m.eq_type[e] == JOINT:
        return q[m.eq_jq[e, side]], v[m.eq_jv[e, side]]
    y = 0.0
    yd = 0.0
    for k in range(m.nq):
        y += m.eq_ten_q[e, side, k] * q[k]
    for k in range(m.nv):
        yd += m.eq_ten_v[e, side, k] * v[k]
    return y, yd


@kernel
def eq_scalar_row(m, e, q, v, J, r, phi, bias, with_bias, with_j):
    """Row r of a joint/tendon constraint: ``phi = (y_1 - r_1) - P(x)``, ``x = y_2 - r_2``,
    ``J = c_1 - P'(x) c_2``, bias ``-P''(x) ydot_2^2``."""
    a = m.eq_poly[e]
    y1, yd1 = eq_scalar(m, e, 0, q, v)
    x = 0.0
    yd2 = 0.0
    two = m.eq_jq[e, 1] >= 0
    if two:
        y2, yd2 = eq_scalar(m, e, 1, q, v)
        x = y2 - m.eq_ref[e, 1]
    p = a[0] + x * (a[1] + x * (a[2] + x * (a[3] + x * a[4])))  # P(x)
    dp = a[1] + x * (2.0 * a[2] + x * (3.0 * a[3] + x * 4.0 * a[4]))  # P'(x)
    ddp = 2.0 * a[2] + x * (6.0 * a[3] + x * 12.0 * a[4])  # P''(x)
    if not two:
        p = a[0]
        dp = 0.0
        ddp = 0.0
    phi[r] = y1 - m.eq_ref[e, 0] - p
    if with_bias:
        bias[r] = -ddp * yd2 * yd2
    if not with_j:
        return
    if m.eq_type[e] == JOINT:
        J[r, m.eq_jv[e, 0]] += 1.0
        if two:
            J[r, m.eq_jv[e, 1]] -= dp
    else:
        for k in range(m.nv):
            J[r, k] += m.eq_ten_v[e, 0, k]
            if two:
                J[r, k] -= dp * m.eq_ten_v[e, 1, k]


@kernel
def equality_rows(m, w, b, q, v, with_bias, with_j):
    """Rows of the active constraints at state b into ``w.er`` (phi), with ``with_j`` ``w.eJ`` and
    with ``with_bias`` ``w.ea`` (the bias ``J' v``).  Expects world poses (and for the bias the
    velocity pass and :func:`eq_bias_pass`).  With ``with_j``, leaves the world axes in ``w.eS``."""
    K = w.eJ.shape[1]
    J = w.eJ[b]
    phi = w.er[b]
    bias = w.ea[b]
    if with_j and eq_has_bodies(m):
        world_motion_axes(m, w, b)
    for r in range(K):
        phi[r] = 0.0
        bias[r] = 0.0
        if with_j:
            for j in range(m.nv):
                J[r, j] = 0.0
    for e in range(m.eq_type.shape[0]):
        r0 = m.eq_row[e]
        t = m.eq_type[e]
        if t == CONNECT or t == WELD:
            eq_point_rows(m, w, b, m.eq_body[e, 0], m.eq_point[e, 0], 1.0, J, r0, phi, bias, with_bias, with_j)
            eq_point_rows(m, w, b, m.eq_body[e, 1], m.eq_point[e, 1], -1.0, J, r0, phi, bias, with_bias, with_j)
            if t == WELD and m.eq_nrow[e] == 6:
                eq_weld_rot(m, w, b, e, J, r0 + 3, phi, bias, with_bias, with_j)
        else:
            eq_scalar_row(m, e, q, v, J, r0, phi, bias, with_bias, with_j)


@kernel
def eq_rows_linear(m):
    """Whether every active row is linear in q (joint/tendon rows whose polynomial has degree <= 1,
    on hinge/slide coordinates): then a step's position update keeps them exactly, with no
    projection at the new q."""
    for e in range(m.eq_type.shape[0]):
        t = m.eq_type[e]
        if t == CONNECT or t == WELD:
            return False
        a = m.eq_poly[e]
        if m.eq_jq[e, 1] >= 0 and (a[2] != 0.0 or a[3] != 0.0 or a[4] != 0.0):
            return False
    return True


@kernel
def eq_factor(Km, drop, n):
    """In-place lower Cholesky factor of the n x n ``Km``; a row whose pivot falls below
    ``DROP_TOL`` times the largest diagonal is dropped (``drop[r] = 1``, multiplier 0)."""
    dmax = 0.0
    for j in range(n):
        if Km[j, j] > dmax:
            dmax = Km[j, j]
    tol = DROP_TOL * dmax
    for j in range(n):
        s = Km[j, j]
        for k in range(j):
            s -= Km[j, k] * Km[j, k]
        if not (s > tol):
            drop[j] = 1.0
            Km[j, j] = 1.0
            for k in range(j):
                Km[j, k] = 0.0
            for i in range(j + 1, n):
                Km[i, j] = 0.0
            continue
        drop[j] = 0.0
        d = math.sqrt(s)
        Km[j, j] = d
        for i in range(j + 1, n):
            s = Km[i, j]
            for k in range(j):
                s -= Km[i, k] * Km[j, k]
            Km[i, j] = s / d


@kernel
def eq_solve(L, drop, x, n):
    """Solve ``L L^T x = x`` in place with the dropped rows' unknowns 0."""
    for i in range(n):
        if drop[i] != 0.0:
            x[i] = 0.0
            continue
        s = x[i]
        for k in range(i):
            s -= L[i, k] * x[k]
        x[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        if drop[i] != 0.0:
            x[i] = 0.0
            continue
        s = x[i]
        for k in range(i + 1, n):
            s -= L[k, i] * x[k]
        x[i] = s / L[i, i]


@kernel
def equality_accel(m, w, b, q, v, qdd):
    """Project ``qdd`` (``A qdd = f`` solved by ABA/MABA; its factor ``w.U``, ``w.Dinv`` in place,
    the velocity pass done for (q, v)) onto the constrained accelerations (module doc).  Leaves
    ``w.eY`` = A^-1 J^T (nv, K) and the factor of J A^-1 J^T in ``w.eK``/``w.ed`` for
    :func:`equality_project`.  Overwrites ``w.Rw``, ``w.pw``, ``w.acc``, ``w.pA``, ``w.vec``, ``w.eS``,
    ``w.eU``, ``w.ez``, ``w.eP``."""
    K = w.eJ.shape[1]
    if K == 0:
        return
    world_pass(m, w, b)
    if eq_has_bodies(m):
        eq_bias_pass(m, w, b)
    equality_rows(m, w, b, q, v, True, True)
    J = w.eJ[b]
    Y = w.eY[b]
    Km = w.eK[b]
    lam = w.el[b]
    if not eq_has_bodies(m):
        world_motion_axes(m, w, b)
    world_force_axes(m, w, b)
    responses(m, w, b, J, Y, K)
    delassus(m, w, b, J, Y, Km, K)  # K = J A^-1 J^T
    for a in range(K):  # rhs = -J' v - J qdd0
        s = w.ea[b, a]
        for j in range(m.nv):
            s += J[a, j] * qdd[j]
        lam[a] = -s
    eq_factor(Km, w.ed[b], K)
    eq_solve(Km, w.ed[b], lam, K)
    for r in range(K):
        lr = lam[r]
        for j in range(m.nv):
            qdd[j] += Y[j, r] * lr


@kernel
def equality_project(m, w, b, q, v, with_velocity):
    """Post-stabilisation of the state rows (q, v) after a step (module doc), with the factor
    :func:`equality_accel` left in ``w.eY``/``w.eK``: one Newton step of ``phi(q) = 0`` and (with
    ``with_velocity``) the velocity projection onto ``J(q) v = 0``, both in the metric A."""
    K = w.eJ.shape[1]
    if K == 0:
        return
    if eq_has_bodies(m):
        fk_state(m, w, b, q)
    equality_rows(m, w, b, q, v, False, with_velocity)  # J(q) only for the velocity projection
    dq = w.edq[b]
    for j in range(m.nv):
        dq[j] = 0.0
    equality_correction(m, w, b, dq)
    if with_velocity:
        equality_project_velocity(m, w, b, v)
    integrate_config(m, q, dq, q, w.Rj[b])


@kernel
def eq_respond(m, w, b, K, out):
    """``out += A^-1 J^T lambda`` with ``(J A^-1 J^T) lambda = w.el`` (solved in place) by the
    responses and factor :func:`equality_accel` left."""
    Y = w.eY[b]
    lam = w.el[b]
    eq_solve(w.eK[b], w.ed[b], lam, K)
    for j in range(m.nv):
        s = 0.0
        for r in range(K):
            s += Y[j, r] * lam[r]
        out[j] += s


@kernel
def equality_correction(m, w, b, dq):
    """``dq += A^-1 J^T lambda_q``, ``(J A^-1 J^T) lambda_q = -phi`` with the rows, responses and
    factor :func:`equality_accel` left at the step's start q: the projection's Newton step taken
    inside the step's own position update (``q+ = q (+) (dt v+ + dq_c)``) of semi-implicit Euler
    whose rows are all linear in q (:func:`eq_rows_linear`): then ``phi(q+) = 0`` to round-off and
    no projection at q+ is needed; v is not changed (no velocity kick)."""
    K = w.eJ.shape[1]
    if K == 0:
        return
    lam = w.el[b]
    for r in range(K):
        lam[r] = -w.er[b, r]
    eq_respond(m, w, b, K, dq)


@kernel
def equality_project_velocity(m, w, b, v):
    """``v += A^-1 J^T lambda``, ``(J A^-1 J^T) lambda = -J v`` with the rows in ``w.eJ``."""
    K = w.eJ.shape[1]
    J = w.eJ[b]
    lam = w.el[b]
    for r in range(K):
        s = 0.0
        for j in range(m.nv):
            s += J[r, j] * v[j]
        lam[r] = -s
    eq_respond(m, w, b, K, v)


@kernel(parallel=True)
def equality_rows_batch(m, w, q, v):
    """Rows of every state of the batch (``w.eJ``, ``w.er``, ``w.ea``), bias included."""
    for i in prange(q.shape[0]):
        b = np.int64(i)
        velocity_pass(m, w, b, q[b], v[b])
        world_pass(m, w, b)
        eq_bias_pass(m, w, b)
        equality_rows(m, w, b, q[b], v[b], True, True)


def equality_residual(model, q, v=None):
    """``(phi, J, bias)`` of the model's active equality constraints at one state: the residual
    (K,), the Jacobian (K, nv) and ``J' v`` (K,) (the rows' acceleration at ``qdd = 0``)."""
    q = np.ascontiguousarray(q, np.float64).reshape(1, model.nq)
    v = np.zeros((1, model.nv)) if v is None else np.ascontiguousarray(v, np.float64).reshape(1, model.nv)
    w = make_work(model, 1)
    equality_rows_batch(model.k, w, q, v)
    return w.er[0].copy(), w.eJ[0].copy(), w.ea[0].copy()


@kernel
def equality_step_target(m, w, b, v, dt, qdd):
    """Semi-implicit Euler's constrained acceleration (``v+ = v + dt qdd``, ``q+ = q (+) dt v+``):
    re-target the rows from ``J qdd = -J' v`` (what :func:`equality_accel` left, with its rows and
    factor) so that the step keeps the constraint to second order, ``dt J v+ + dt^2/2 J' v = 0``
    (``phi(q+) - phi(q)``), i.e. ``J qdd = -J v/dt - J' v/2``: ``qdd += A^-1 J^T lambda``,
    ``(J A^-1 J^T) lambda = -J v/dt + J' v/2``.  The O(dt^3) a step this leaves, and any violation
    of the state it starts from, the end-of-step projection removes (no velocity kick from an
    inconsistent initial configuration; an inconsistent velocity is projected, as an impact)."""
    K = w.eJ.shape[1]
    if K == 0:
        return
    J = w.eJ[b]
    Y = w.eY[b]
    lam = w.el[b]
    for r in range(K):
        s = 0.0
        for j in range(m.nv):
            s += J[r, j] * v[j]
        lam[r] = -s / dt + 0.5 * w.ea[b, r]  # -J v/dt + J' v/2
    eq_solve(w.eK[b], w.ed[b], lam, K)
    for r in range(K):
        lr = lam[r]
        for j in range(m.nv):
            qdd[j] += Y[j, r] * lr


# The position-based steps' constraint term: a stiff penalty kc/2 |phi|^2 with
# kc = EQ_PENALTY * (total mass) / dt^2 per row, i.e. EQ_PENALTY times the inertial term's own
# stiffness M/dt^2: the violation is about (constraint force) / kc (docs/robots.md).
EQ_PENALTY = 1e4


@kernel
def equality_penalty_stiffness(m, dt):
    """The penalty's ``kc = EQ_PENALTY * (total mass) / dt^2`` per row."""
    mt = 0.0
    for i in range(m.nb):
        mt += m.mass[i]
    return EQ_PENALTY * mt / (dt * dt)


@kernel
def equality_penalty(m, w, b, q, v, dt, want_g, want_h, g, H):
    """``E_c = kc/2 |phi(q)|^2`` of the active equality constraints at configuration ``q``, added
    to a step objective: returns E_c, adds ``kc J^T phi`` to the tangent gradient ``g`` and the
    Gauss-Newton ``kc J^T J`` to ``H`` (``kc``: :data:`EQ_PENALTY`).  Overwrites the poses in w."""
    K = w.eJ.shape[1]
    if K == 0:
        return 0.0
    fk_state(m, w, b, q)
    equality_rows(m, w, b, q, v, False, want_g or want_h)
    kc = equality_penalty_stiffness(m, dt)
    J = w.eJ[b]
    phi = w.er[b]
    e = 0.0
    for r in range(K):
        e += 0.5 * kc * phi[r] * phi[r]  # kc/2 |phi|^2
    if want_g:
        for j in range(m.nv):
            s = 0.0
            for r in range(K):
                s += J[r, j] * phi[r]
            g[j] += kc * s  # kc J^T phi
    if want_h:
        for a in range(m.nv):
            for c in range(a + 1):
                s = 0.0
                for r in range(K):
                    s += J[r, a] * J[r, c]
                H[a, c] += kc * s  # kc J^T J
                if c != a:
                    H[c, a] += kc * s
    return e


@kernel
def equality_project_mass(m, w, b, q, iters):
    """Newton steps of ``phi(q) = 0`` in the mass metric, in place: ``q <- q (+) M^-1 J^T lambda``,
    ``(J M^-1 J^T) lambda = -phi(q)`` with M's own factor at q (:func:`minv_factor`), ``iters``
    times (the position-based steps' end-of-step projection; their penalty keeps it small)."""
    equality_project_mass_to(m, w, b, q, iters, w.el[b], False)


@kernel
def eq_mass_factor(m, w, b, q):
    """The rows at ``q`` (``w.er``, ``w.eJ``), their responses ``w.eY = M^-1 J^T`` with M's own
    factor at q (:func:`minv_factor`) and the factor of ``J M^-1 J^T`` in ``w.eK``/``w.ed``.
    Scratch: ``w.edq`` (zeros)."""
    zero = w.edq[b]
    for j in range(m.nv):
        zero[j] = 0.0
    minv_factor(m, w, b, q, zero, zero)
    eq_factor_rows(m, w, b, q, zero)


@kernel
def eq_factor_rows(m, w, b, q, v):
    """The rows at ``q`` (``w.er``, ``w.eJ``), their responses ``w.eY = A^-1 J^T`` with the
    articulated factor ``w`` holds at q (``A``: M plus the factor's extra diagonal) and the factor
    of ``J A^-1 J^T`` in ``w.eK``/``w.ed`` (needs the parent-relative poses at q in ``w``)."""
    K = w.eJ.shape[1]
    world_pass(m, w, b)
    equality_rows(m, w, b, q, v, False, True)
    if not eq_has_bodies(m):
        world_motion_axes(m, w, b)
    world_force_axes(m, w, b)
    responses(m, w, b, w.eJ[b], w.eY[b], K)
    delassus(m, w, b, w.eJ[b], w.eY[b], w.eK[b], K)
    eq_factor(w.eK[b], w.ed[b], K)


@kernel
def equality_project_velocity_mass(m, w, b, q, v):
    """``v`` onto ``J(q) v = 0`` in place, in the mass metric at ``q`` (removes only the kinetic
    energy of the motion the constraints forbid)."""
    if w.eJ.shape[1] == 0:
        return
    eq_mass_factor(m, w, b, q)
    equality_project_velocity(m, w, b, v)


@kernel
def equality_project_mass_to(m, w, b, q, iters, target, use_target):
    """:func:`equality_project_mass` onto ``phi(q) = target`` (``use_target``; else 0; ``target``
    is not overwritten).  Scratch: ``w.edq`` (zeros), ``w.mt`` (the step; free: mimic joints
    exclude equalities)."""
    K = w.eJ.shape[1]
    if K == 0:
        return
    dq = w.mt[b]
    Y = w.eY[b]
    Km = w.eK[b]
    lam = w.el[b]
    for _it in range(iters):
        eq_mass_factor(m, w, b, q)
        for a in range(K):
            lam[a] = (target[a] if use_target else 0.0) - w.er[b, a]
        eq_solve(Km, w.ed[b], lam, K)
        for j in range(m.nv):
            s = 0.0
            for r in range(K):
                s += Y[j, r] * lam[r]
            dq[j] = s
        integrate_config(m, q, dq, q, w.Rj[b])


@kernel
def equality_second_order_correction(m, w, b, q0, dx, q1):
    """A solver's trial ``q1 = q0 (+) dx`` corrected in place so that ``phi(q1) = phi(q0) + J(q0) dx``,
    the constraint value its linearised step predicts (one Newton step in the mass metric; Fletcher's
    second-order correction).  For a step objective that holds the constraints as a penalty
    ``kc/2 |phi|^2`` whose solver works on the residual (pbfd's ``|r|^2``): a step along a curved
    constraint manifold leaves it by ``O(|dx|^2)``, which ``kc`` turns into a residual the linear
    model does not predict, and the solver's trust region shrinks to steps of ``sqrt(|r| / kc)``
    (a free box welded to an arm at 20 ms: thousands of LM iterations; docs/robots.md).  The
    target: ``w.et``."""
    K = w.eJ.shape[1]
    if K == 0:
        return
    fk_state(m, w, b, q0)
    equality_rows(m, w, b, q0, dx, False, True)
    target = w.et[b]
    for a in range(K):
        s = w.er[b, a]
        for j in range(m.nv):
            s += w.eJ[b, a, j] * dx[j]
        target[a] = s  # phi(q0) + J(q0) dx
    equality_project_mass_to(m, w, b, q1, 1, target, True)
