"""MuJoCo's joint-limit constraint (:class:`pbsim.model.limits.SoftLimits`): a soft unilateral
row per limit a DOF has reached, solved with the step's acceleration as MuJoCo's constraint solver
does, through ABA's factor.

A hinge/slide DOF ``j`` with range ``[lo, hi]`` and margin ``mg`` has a row on each side whose
distance is below the margin (MuJoCo's ``mj_instantiateLimit``)::

    lower: r = q_j - lo, J = +e_j;   upper: r = hi - q_j, J = -e_j;   active while r < mg

and each row asks for the reference acceleration (MuJoCo's ``mj_referenceConstraint``)::

    (1)  aref = -b (J v) - k d(r) (r - mg)

with, from ``solref = (tc, zeta)``, ``tc`` raised to ``2 dt`` (MuJoCo's ``refsafe``) and
``dmax = solimp[1]``: ``b = 2 / (dmax tc)``, ``k = 1 / (dmax^2 tc^2 zeta^2)`` (the direct form
``solref = (-k', -b')``: ``k = k' / dmax^2``, ``b = b' / dmax``), and the impedance ``d(r)`` of
``solimp`` (MuJoCo's ``getimpedance``, :func:`impedance`).  Each row's regularizer is

    (2)  R = max(1e-15, (1 - d) / d * invweight0)

(MuJoCo's ``mj_makeImpedance`` with ``diagApprox = dof_invweight0``).  With ``a0`` the step's
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

from pbsim.jit import kernel
from pbsim.dynamics.delassus import delassus, responses, world_force_axes, world_motion_axes
from pbsim.dynamics.equality import eq_factor, eq_solve
from pbsim.dynamics.kinematics import world_pass

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
def limit_rows(m, w, b, q, v, dt):
    """The active rows at (q, v): their Jacobian into ``w.lJ`` (dense, one +-1 each), ``aref``
    (Eq. 1) into ``w.lc`` and ``R`` (Eq. 2) into ``w.lR``.  Returns their number."""
    J = w.lJ[b]
    n = 0
    for r in range(m.lim_dof.shape[0]):
        j = m.lim_dof[r]
        prm = m.lim_prm[r]
        mg = prm[7]
        x = q[m.lim_qadr[r]]
        for side in range(2):
            if side == 0:
                dist = x - m.lower[j]
                sg = 1.0
            else:
                dist = m.upper[j] - x
                sg = -1.0
            if not (dist < mg):
                continue
            for k in range(m.nv):
                J[n, k] = 0.0
            J[n, j] = sg
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
            w.lc[b, n] = -bb * sg * v[j] - kk * d * (dist - mg)  # aref (Eq. 1)
            w.lR[b, n] = max(MINVAL, (1.0 - d) * prm[8] / d)  # R (Eq. 2)
            n += 1
    return n


@kernel
def soft_lcp(H, c, f, act, L, drop, n):
    """Solve Eq. 3, ``f >= 0, H f - c >= 0`` complementary (``H`` n x n positive definite), by
    Murty's least-index principal pivoting from the set ``{c > 0}``: solve the active block, then
    flip the first row that breaks a sign (an active force < 0, an inactive row with
    ``H f - c < 0``).  ``L``/``drop``: scratch.  Returns the pivots taken (-1: not settled in
    ``4 n + 16``; the negative forces are then cut to 0)."""
    for i in range(n):
        act[i] = 1.0 if c[i] > 0.0 else 0.0
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
        if f[i] < 0.0:
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
    soft_lcp(H, cc, f, w.la[b], w.lL[b], w.ld[b], n)
    for k in range(m.nv):
        s = 0.0
        for r in range(n):
            s += Y[k, r] * f[r]
        qdd[k] += s

