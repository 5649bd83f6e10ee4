"""MuJoCo's limit constraint (:class:`pbsim.model.limits.SoftLimits`: joint ranges, ball-joint
cones, tendon ranges) and tendon armature in the explicit methods: a soft unilateral row per
limit reached (a bilateral one per tendon with armature), solved with the step's acceleration as
MuJoCo's constraint solver does, through ABA's factor.

A hinge/slide DOF ``j`` with range ``[lo, hi]`` and margin ``mg`` has a row on each side whose
distance is below the margin (MuJoCo's ``mj_instantiateLimit``)::

    lower: r = q_j - lo, J = +e_j;   upper: r = hi - q_j, J = -e_j;   active while r < mg

a tendon the same with its length ``L`` and moment ``dL/dv`` (``J = +-dL/dv``), and a ball joint one
row on its cone: rotation angle ``theta`` about the unit axis ``u`` of its quaternion,
``r = theta_max - theta``, ``J = -u`` on its three DOFs.  Each row asks for the reference acceleration (MuJoCo's ``mj_referenceConstraint``)::

    (1)  aref = -b (J v) - k d(r) (r - mg)

with, from ``solref = (tc, zeta)``, ``tc`` raised to ``2 dt`` (MuJoCo's ``refsafe``) and
``dmax = solimp[1]``: ``b = 2 / (dmax tc)``, ``k = 1 / (dmax^2 tc^2 zeta^2)`` (the direct form
``solref = (-k', -b')``: ``k = k' / dmax^2``, ``b = b' / dmax``), and the impedance ``d(r)`` of
``solimp`` (MuJoCo's ``getimpedance``, :func:`impedance`).  Each row's regularizer is

    (2)  R = max(1e-15, (1 - d) / d * invweight0)

(MuJoCo's ``mj_makeImpedance`` with ``diagApprox = dof_invweight0``).  A tendon's armature ``a``
(MuJoCo's ``M += a J^T J`` with the bias ``a J^T (dJ/dt) v``) is a bilateral row of the same
problem: ``R = 1 / a``, ``aref = -(dJ/dt) v``, ``f`` of either sign (:func:`armature_rows`).  With ``a0`` the step's
acceleration without the rows (``A a0 = f``, ``A = M + diag(arm)`` by ABA), the rows' forces
``f >= 0`` solve the soft complementarity problem MuJoCo's solvers solve (its dual)::

    (3)  (J A^-1 J^T + R) f - (aref - J a0) >= 0,   f >= 0,   complementary

and ``a = a0 + A^-1 J^T f``.  One row alone moves as ``J a = (1 - d) J a0 + d aref`` (a spring-damper
of ``w = d / (dmax tc)`` while unloaded, and sagging ``(1 - d) a0 / (d^2 k)`` under a load: the two
stiffnesses docs/robots.md measures).  (3) is solved exactly by Murty's least-index principal
pivoting (finite for a positive definite matrix), each pivot a Cholesky factor of the active block.

Where the model has equality constraints (held exactly, :mod:`pbsim.dynamics.equality`), the rows'
responses are those of the constrained system, ``Y' = Y - Y_e (J_e A^-1 J_e^T)^-1 J_e Y``, so the
limit forces keep the equalities' accelerations.

Differences from MuJoCo: ``A`` is the step's operator (the joint damping and stable-PD servo terms
the step takes implicitly are in it; MuJoCo's constraint solve sees M and adds its Euler's implicit
damping after), equal where the limited DOFs carry neither.  pbsim's contacts are forces in ``f``
(penalty), not rows of (3).
"""

import math

from pbsim.jit import kernel
from pbsim.dynamics.delassus import delassus, responses, world_force_axes, world_motion_axes
from pbsim.dynamics.equality import eq_bias_pass, eq_factor, eq_solve
from pbsim.dynamics.kinematics import fk_state, velocity_pass, world_pass
from pbsim.dynamics.tendon import tendon_jdot_v, tendon_lv

BALL_CONE, TENDON = 1, 2  # pbsim.model.limits: HINGE_SLIDE 0

MINVAL = 1e-15  # MuJoCo's mjMINVAL: the floor of R


@kernel
def impedance(prm, pos, margin):
    """MuJoCo's ``getimpedance``: the impedance d(r) of ``solimp`` = ``prm[2:7]`` (d0, dmax, width,
    midpoint, power; clamped at import) at distance ``pos`` with ``margin``."""
    d0 = prm[2]
    dmax = prm[3]
    width = prm[4]
    mid = prm[5]
    power = prm[6]
    if d0 == dmax or width <= MINVAL:
        return 0.5 * (d0 + dmax)
    x = abs((pos - margin) / width)
    if x >= 1.0:
        return dmax
    if x <= 0.0:
        return d0
    if power == 1.0:
        y = x
    elif x <= mid:
        y = x ** power / mid ** (power - 1.0)  # a x^p, a = 1 / mid^(p-1)
    else:
        y = 1.0 - (1.0 - x) ** power / (1.0 - mid) ** (power - 1.0)  # 1 - b (1-x)^p
    return d0 + y * (dmax - d0)


@kernel
def limit_row(m, w, b, n, r, dist, vel, dt):
    """Row ``n`` of limit ``r`` at distance ``dist`` moving at ``vel = J v``: ``aref`` (Eq. 1) into
    ``w.lc`` and ``R`` (Eq. 2) into ``w.lR`` (its Jacobian is the caller's)."""
    prm = m.lim_prm[r]
    mg = prm[7]
    d = impedance(prm, dist, mg)
    dmax = prm[3]
    tc = prm[0]
    if prm[9] != 0.0 and tc > 0.0 and tc < 2.0 * dt:
        tc = 2.0 * dt  # refsafe
    if prm[0] > 0.0:  # standard: (timeconst, dampratio)
        kk = 1.0 / max(MINVAL, dmax * dmax * tc * tc * prm[1] * prm[1])
        bb = 2.0 / max(MINVAL, dmax * tc)
    else:  # direct: (-stiffness, -damping)
        kk = -prm[0] / max(MINVAL, dmax * dmax)
        bb = -prm[1] / max(MINVAL, dmax)
    w.lc[b, n] = -bb * vel - kk * d * (dist - mg)  # aref (Eq. 1)
    w.lR[b, n] = max(MINVAL, (1.0 - d) * prm[8] / d)  # R (Eq. 2)


@kernel
def limit_rows(m, w, b, q, v, dt):
    """The active rows at (q, v) (module doc; a ball's cone and a tendon's range as MuJoCo's
    ``mj_instantiateLimit``): their Jacobian into ``w.lJ`` (dense), ``aref`` (Eq. 1) into ``w.lc``
    and ``R`` (Eq. 2) into ``w.lR``.  Returns their number.  Spatial tendons: FK of q into ``w``."""
    J = w.lJ[b]
    n = 0
    fk = False
    for r in range(m.lim_kind.shape[0]):
        kind = m.lim_kind[r]
        i = m.lim_idx[r]
        mg = m.lim_prm[r, 7]
        if kind == BALL_CONE:  # angle-axis of the ball's quaternion (MuJoCo's mju_quat2Vel)
            a = m.lim_qadr[r]
            qn = math.sqrt(q[a] * q[a] + q[a + 1] * q[a + 1] + q[a + 2] * q[a + 2] + q[a + 3] * q[a + 3])
            x = q[a + 1] / qn
            y = q[a + 2] / qn
            z = q[a + 3] / qn
            s = math.sqrt(x * x + y * y + z * z)
            ang = 2.0 * math.atan2(s, q[a] / qn)
            if ang > math.pi:
                ang -= 2.0 * math.pi
            if s < MINVAL:
                x, y, z, s = 1.0, 0.0, 0.0, 1.0
            x, y, z = x / s, y / s, z / s
            if ang < 0.0:
                x, y, z, ang = -x, -y, -z, -ang
            dist = m.lim_prm[r, 11] - ang
            if not (dist < mg):
                continue
            for k in range(m.nv):
                J[n, k] = 0.0
            J[n, i] = -x
            J[n, i + 1] = -y
            J[n, i + 2] = -z
            limit_row(m, w, b, n, r, dist, -(x * v[i] + y * v[i + 1] + z * v[i + 2]), dt)
            n += 1
            continue
        if kind == TENDON:
            if m.ten_kind[i] != 0 and not fk:
                fk_state(m, w, b, q)
                fk = True
            x, xd = tendon_lv(m, w, b, i, q, v, J[n], 0.0)
        else:
            x = q[m.lim_qadr[r]]
            xd = v[i]
        for side in range(2):
            if side == 0:
                dist = x - m.lim_prm[r, 10]
                sg = 1.0
            else:
                dist = m.lim_prm[r, 11] - x
                sg = -1.0
            if not (dist < mg):
                continue
            for k in range(m.nv):
                J[n, k] = 0.0
            if kind == TENDON:
                tendon_lv(m, w, b, i, q, v, J[n], sg)
            else:
                J[n, i] = sg
            limit_row(m, w, b, n, r, dist, sg * xd, dt)
            w.lb[b, n] = 0.0
            n += 1
    return armature_rows(m, w, b, q, v, n, fk)


@kernel
def armature_rows(m, w, b, q, v, n, fk):
    """The tendons' armature (MuJoCo's ``M += a J^T J`` and bias ``a J^T (dJ/dt v)``) as bilateral
    rows after the ``n`` limit rows: ``J`` the tendon's moment, ``R = 1 / a``, ``aref = -(dJ/dt) v``
    (Eq. 3 then solves ``(A + J^T a J) qdd = f - J^T a (dJ/dt) v`` exactly: Woodbury).  Returns the
    number of rows.  ``fk``: the poses of q are in ``w`` already."""
    nt = m.ten_nt[0]
    for t in range(nt):
        if m.lim_arm[t] > 0.0 and m.ten_kind[t] != 0:  # a spatial one: poses, velocities and bias
            if not fk:  # accelerations of (q, v) for its J and dJ/dt v
                fk_state(m, w, b, q)
            velocity_pass(m, w, b, q, v)
            world_pass(m, w, b)
            eq_bias_pass(m, w, b)
            break
    J = w.lJ[b]
    for t in range(nt):
        a = m.lim_arm[t]
        if a <= 0.0:
            continue
        for k in range(m.nv):
            J[n, k] = 0.0
        tendon_lv(m, w, b, t, q, v, J[n], 1.0)
        w.lc[b, n] = -tendon_jdot_v(m, w, b, t)  # aref: the tendon's acceleration without qdd, negated
        w.lR[b, n] = 1.0 / a
        w.lb[b, n] = 1.0
        n += 1
    return n


@kernel
def soft_lcp(H, c, f, act, bil, L, drop, n):
    """Solve Eq. 3, ``f >= 0, H f - c >= 0`` complementary (``H`` n x n positive definite), by
    Murty's least-index principal pivoting from the set ``{c > 0}``: solve the active block, then
    flip the first row that breaks a sign (an active force < 0, an inactive row with
    ``H f - c < 0``).  Rows with ``bil[i] != 0`` are bilateral (``H f = c`` with ``f`` of either
    sign): always in the set (principal pivoting on the Schur complement).  ``L``/``drop``: scratch.
    Returns the pivots taken (-1: not settled in ``4 n + 16``; the negative forces of unilateral
    rows are then cut to 0)."""
    for i in range(n):
        act[i] = 1.0 if c[i] > 0.0 or bil[i] != 0.0 else 0.0
    for it in range(4 * n + 16):
        for i in range(n):
            for k in range(n):
                if act[i] != 0.0 and act[k] != 0.0:
                    L[i, k] = H[i, k]
                else:
                    L[i, k] = 1.0 if i == k else 0.0
            f[i] = c[i] if act[i] != 0.0 else 0.0
        eq_factor(L, drop, n)
        eq_solve(L, drop, f, n)
        flip = -1
        for i in range(n):
            if bil[i] != 0.0:
                continue
            if act[i] != 0.0:
                if f[i] < 0.0:
                    flip = i
                    break
            else:
                y = -c[i]
                scale = abs(c[i])
                for k in range(n):
                    y += H[i, k] * f[k]
                    scale += abs(H[i, k] * f[k])
                if y < -1e-13 * scale:
                    flip = i
                    break
        if flip < 0:
            return it
        act[flip] = 1.0 - act[flip]
    for i in range(n):
        if f[i] < 0.0 and bil[i] == 0.0:
            f[i] = 0.0
    return -1


@kernel
def limit_accel(m, w, b, q, v, dt, qdd):
    """Add MuJoCo's limit forces to the step's acceleration ``qdd`` at (q, v) (module doc): the
    active rows (:func:`limit_rows`), then :func:`limit_apply`.  Expects ABA's factor of A in ``w``
    (:func:`pbsim.control.solve.limit_solve` makes it first where a dense solver ran) and, with
    equality constraints, their rows and factor for this q.  Returns the number of rows."""
    n = limit_rows(m, w, b, q, v, dt)
    if n > 0:
        limit_apply(m, w, b, n, qdd)
    return n


@kernel
def limit_apply(m, w, b, n, qdd):
    """The ``n`` rows :func:`limit_rows` left: their responses through ABA's factor (projected onto
    the equality constraints where the model has them), Eq. 3, ``qdd += A^-1 J^T f``.  The forces
    stay in ``w.lf`` (the rows in ``w.lJ``)."""
    J = w.lJ[b]
    Y = w.lY[b]
    H = w.lH[b]
    world_pass(m, w, b)
    world_motion_axes(m, w, b)
    world_force_axes(m, w, b)
    responses(m, w, b, J, Y, n)
    ke = w.eJ.shape[1]
    if ke > 0:  # the constrained responses: Y -= Y_e (J_e A^-1 J_e^T)^-1 J_e Y
        Je = w.eJ[b]
        Ye = w.eY[b]
        t = w.el[b]
        for r in range(n):
            for a in range(ke):
                s = 0.0
                for k in range(m.nv):
                    s += Je[a, k] * Y[k, r]
                t[a] = s
            eq_solve(w.eK[b], w.ed[b], t, ke)
            for k in range(m.nv):
                s = 0.0
                for a in range(ke):
                    s += Ye[k, a] * t[a]
                Y[k, r] -= s
    delassus(m, w, b, J, Y, H, n)
    cc = w.lc[b]
    for r in range(n):
        H[r, r] += w.lR[b, r]
        s = 0.0
        for k in range(m.nv):
            s += J[r, k] * qdd[k]
        cc[r] -= s  # aref - J a0
    f = w.lf[b]
    soft_lcp(H, cc, f, w.la[b], w.lb[b], w.lL[b], w.ld[b], n)
    for k in range(m.nv):
        s = 0.0
        for r in range(n):
            s += Y[k, r] * f[r]
        qdd[k] += s

