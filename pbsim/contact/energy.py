"""Penalty contact as an energy, for the position-based integrators (PBAD, paper 000 Eq. 9): the
small sibling of :mod:`.penalty` (the explicit integrators' forces), on the same detection.

Per contact point with signed depth ``sd = r - phi(x)`` and normal ``n`` from the one detection
(:func:`pbsim.contact.query.contact_detect`, every environment shape), depth ``d = max(0, sd)``,
at world position ``x`` reached in a step of ``dt`` from ``x_k`` (the start of the step):

    E = D1 d^2 + D2 d^2 |u|^2,      u = P (x - x_k) / dt,      P = I - n_k n_k^T

a spring ``D1 d^2`` (``D1 = k / 2``: the penalty spring ``k d^2 / 2`` of :mod:`.penalty`) and a
tangential damping ``D2 d^2 |u|^2`` (friction growing with the depth).  ``P`` projects on the
tangent plane at the start of the step (``n_k``: the detection's normal at ``x_k``, frozen over
the step like the drag axis of Sec. 6.2), so ``E`` is a function of ``x`` alone and

    dE/dx = -2 d (D1 + D2 |u|^2) n + 2 D2 d^2 u / dt

is its exact gradient wherever ``n = grad phi`` (planes, spheres, boxes, capsules, planar
heightfield patches, and the flat parts of a mesh terrain's grid).  On a plane ``n_k = n`` and
this is Eq. 9 verbatim.  The 3x3 Hessian is the exact one with the normal taken locally constant
(the curvature terms ``-2 d (D1 + D2 |u|^2) dn/dx`` and ``kt (n n^T - n_k n_k^T)`` are dropped:
exact on flat surfaces), projected onto the PSD cone: in the plane of ``n`` and the tangential
velocity the 2x2 block is indefinite when sliding, its negative eigenvalue is clamped to 0.

:func:`contact_step_fraction` is the step filter of the Newton steps on this energy: the energy is
C1 but its curvature jumps from 0 to ``2 (D1 + D2 |u|^2)`` when a point enters the environment,
so a step from outside is limited (on the linearised depth ``sd(x + dx) ~ sd - n.dx``) to land
the point just inside.

The collocation forms (PBAD orders 3-4) have no step displacement but a velocity at each node:
:func:`contact_force_velocity` is the same force with ``x - x_k`` replaced by ``v dt`` (and an
optional normal damper, which order 2 does without: its step dissipates the contact's bounce).

**Lagged Coulomb friction** (``ev > 0``, the ``friction="coulomb"`` option of the PBAD integrators).
Eq. 9's tangential force ``2 D2 d^2 u / dt`` is a damping whose strength falls as ``1 / dt``
(docs/robustness.md: a box sliding at 1 m/s with mu 0.8 travels 6.9 cm at dt 1 ms, 97 cm at 50 ms;
Coulomb says 6.4 cm).  Scaling ``D2`` with dt does not cure it, because the term's depth gradient
``2 d D2 |u|^2`` lifts a sliding point out of the floor.  The alternative keeps the spring ``D1 d^2``
and replaces ``D2 d^2 |u|^2`` by the lagged friction potential of incremental potential contact
(Li et al. 2020): with the normal force frozen at the start of the step, ``lam = 2 D1 max(0, sd_k)``,

    E_f = mu lam dt f0(|u|),   f0(y) = y^2 / ev - y^3 / (3 ev^2)  (y < ev),   y - ev / 3  (y >= ev)

whose gradient ``mu lam f1(|u|) u / |u|`` (``f1 = f0'``, ``2 y / ev - y^2 / ev^2`` below ``ev``, 1
above; ``f0(0) = 0``: no energy at rest) is Coulomb's force at every dt, smoothed to a viscous
law below the speed ``ev``, and whose Hessian ``(mu lam / dt) [f1' uh uh^T + (f1 / y) (P - uh
uh^T)]`` is PSD.  ``lam`` does not depend on ``x``, so nothing lifts a sliding point; ``mu = D2 v_ref / D1`` (the Coulomb coefficient Eq. 9's
``D2`` is matched to, :func:`energy_parameters`).  A point entering contact during the step has
``lam = 0`` (no friction in that one step), as in IPC with one lagging pass.

Parameters from a :class:`pbsim.Scene`: :func:`energy_parameters`.
"""
import math

import numpy as np

from pbsim.jit import kernel
from pbsim.contact.query import contact_detect

V_REF = 0.1  # m/s: D2 = mu k / (2 V_REF), Coulomb friction matched at this sliding speed


def energy_parameters(ks, v_ref: float = V_REF):
    """Per-point ``(D1, D2)`` of Eq. 9 from the scene arrays ``ks`` (:class:`pbsim.contact.KScene`):
    ``D1 = k / 2`` with the scene's per-point stiffness ``k`` (the spring energy of the penalty
    model) and ``D2 = mu k / (2 v_ref)``, ``v_ref = 0.1`` m/s (the tangential damping matched to
    Coulomb friction at that sliding speed, as :func:`pbsim.integrators.pbad.scene_points` states)."""
    k = np.asarray(ks.pt_k, np.float64)
    return np.ascontiguousarray(0.5 * k), np.ascontiguousarray(ks.mu * k / (2.0 * v_ref))


@kernel
def contact_energy(s, k, D1, D2, ev, R, p, Rk, pk, dt, F, K):
    """Eq. 9 for contact point ``k`` on its body at pose ``(R, p)``, which was at ``(Rk, pk)`` at
    the start of the step (poses as :func:`contact_detect` takes them); ``ev > 0``: with the lagged
    Coulomb friction instead of the ``D2`` term (module docstring).  Writes ``F`` (3,) = dE/dx
    and ``K`` (3, 3) = the PSD-projected Hessian d2E/dx2 (zero out of contact); returns E."""
    x0, x1, x2, dep, n0, n1, n2 = contact_detect(s, k, R, p)
    if dep <= 0.0 and ev <= 0.0:
        return eq9_law(dep, n0, n1, n2, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, D1, D2, dt, 0.0, ev, F, K)
    # x_k, its depth and the frozen normal n_k; the lagged friction acts wherever the start touched
    y0, y1, y2, sk, m0, m1, m2 = contact_detect(s, k, Rk, pk)
    return eq9_law(dep, n0, n1, n2, x0 - y0, x1 - y1, x2 - y2, m0, m1, m2, D1, D2, dt, sk, ev, F, K)


@kernel
def eq9_law(dep, n0, n1, n2, d0, d1, d2, m0, m1, m2, D1, D2, dt, sk, ev, F, K):
    """Eq. 9 at depth ``dep`` with normal ``n``, displacement over the step ``d = x - x_k`` (between
    bodies: relative to the shape's body, :func:`pbsim.contact.query.pair_detect_step`) and frozen
    start-of-step normal ``n_k = m``: writes ``F`` = dE/dx, ``K`` = the PSD-projected Hessian
    (zero out of contact), returns E (module docstring).  ``ev > 0``: the spring ``D1 d^2`` and the
    lagged Coulomb friction (:func:`coulomb_lagged`, normal force frozen at the start-of-step signed
    depth ``sk``) instead of the ``D2`` term."""
    for r in range(3):
        F[r] = 0.0
        for c in range(3):
            K[r, c] = 0.0
    if ev > 0.0:
        # the spring where the iterate is inside; the friction wherever the start was (lam frozen there:
        # gated by the iterate's depth, E would jump where a sliding point leaves the surface)
        e = 0.0
        if dep > 0.0:
            e = D1 * dep * dep
            for r in range(3):
                nr = n0 if r == 0 else (n1 if r == 1 else n2)
                F[r] = -2.0 * D1 * dep * nr  # the spring: dE/dx = -2 D1 d n, Hessian 2 D1 n n^T
                for c in range(3):
                    nc = n0 if c == 0 else (n1 if c == 1 else n2)
                    K[r, c] = 2.0 * D1 * nr * nc
        lam = 2.0 * D1 * sk if sk > 0.0 else 0.0
        mu = D2 * V_REF / D1 if D1 > 0.0 else 0.0
        return e + coulomb_lagged(mu * lam, ev, d0, d1, d2, m0, m1, m2, dt, F, K)
    if dep <= 0.0:
        return 0.0
    dn = m0 * d0 + m1 * d1 + m2 * d2
    t0 = (d0 - dn * m0) / dt  # tangential velocity u = P dx / dt
    t1 = (d1 - dn * m1) / dt
    t2 = (d2 - dn * m2) / dt
    tt = t0 * t0 + t1 * t1 + t2 * t2
    e = D1 * dep * dep + D2 * dep * dep * tt
    # dE/dx = -2 dep (D1 + D2 tt) n + 2 D2 dep^2 u / dt
    fn = -2.0 * dep * (D1 + D2 * tt)
    ft = 2.0 * D2 * dep * dep / dt
    F[0] = fn * n0 + ft * t0
    F[1] = fn * n1 + ft * t1
    F[2] = fn * n2 + ft * t2
    # Hessian (normal locally constant): kn n n^T + kt (I - n n^T) - c (n u^T + u n^T), c = 4 D2 dep / dt;
    # with u = (u.n) n + |u_perp| h: kn' = kn - 2 c (u.n) along n, -c |u_perp| between n and h
    cc = 4.0 * D2 * dep / dt
    un = n0 * t0 + n1 * t1 + n2 * t2  # 0 on a plane (n = n_k)
    kt = 2.0 * D2 * dep * dep / (dt * dt)
    kn = 2.0 * (D1 + D2 * tt) - 2.0 * cc * un
    for r in range(3):
        nr = n0 if r == 0 else (n1 if r == 1 else n2)
        for c in range(3):
            nc = n0 if c == 0 else (n1 if c == 1 else n2)
            K[r, c] = kn * nr * nc + kt * ((1.0 if r == c else 0.0) - nr * nc)
    h0 = t0 - un * n0
    h1 = t1 - un * n1
    h2 = t2 - un * n2
    su = math.sqrt(h0 * h0 + h1 * h1 + h2 * h2)
    if su > 0.0:
        # in the (n, h) plane the 2x2 block [[kn, -x], [-x, kt]] (x = c |u_perp|) is indefinite when
        # sliding: add the cross term and clamp the block's negative eigenvalue to 0 (projected
        # Newton: exact where convex, PSD everywhere)
        xc = cc * su
        h0 /= su
        h1 /= su
        h2 /= su
        mid = 0.5 * (kn + kt)
        rad = math.sqrt(0.25 * (kn - kt) * (kn - kt) + xc * xc)
        lmin = mid - rad
        # eigenvector of the small eigenvalue in (n, h) coordinates: (xc, kn - lmin) normalized
        ea = -xc
        eb = lmin - kn
        en = math.sqrt(ea * ea + eb * eb)
        if en > 0.0:
            ea /= en
            eb /= en
        # block' = block - min(lmin, 0) e e^T  (removes the negative part only)
        cut = lmin if lmin < 0.0 else 0.0
        for r in range(3):
            nr = n0 if r == 0 else (n1 if r == 1 else n2)
            hr = h0 if r == 0 else (h1 if r == 1 else h2)
            er = ea * nr + eb * hr
            for c in range(3):
                nc = n0 if c == 0 else (n1 if c == 1 else n2)
                hc = h0 if c == 0 else (h1 if c == 1 else h2)
                ec = ea * nc + eb * hc
                K[r, c] += -xc * (nr * hc + hr * nc) - cut * er * ec
    elif kn < 0.0:
        for r in range(3):
            nr = n0 if r == 0 else (n1 if r == 1 else n2)
            for c in range(3):
                nc = n0 if c == 0 else (n1 if c == 1 else n2)
                K[r, c] -= kn * nr * nc
    return e


@kernel
def smoothed_coulomb(y, ev):
    """``(f0(y), f1(y) / y, f1'(y))`` of the smoothed sliding-speed norm (module docstring): ``f1 = f0'``
    rises as ``2 y / ev - y^2 / ev^2`` to 1 at the speed ``ev``; ``f0(0) = 0``."""
    if y < ev:
        return y * y / ev - y * y * y / (3.0 * ev * ev), 2.0 / ev - y / (ev * ev), 2.0 / ev - 2.0 * y / (ev * ev)
    return y - ev / 3.0, 1.0 / y, 0.0


@kernel
def coulomb_lagged(fc, ev, d0, d1, d2, m0, m1, m2, dt, F, K):
    """The lagged friction potential ``E_f = fc dt f0(|u|)`` (module docstring; ``fc = mu lam``, the
    Coulomb force of the step), ``u = P (x - x_k) / dt``, ``P = I - m m^T``: adds dE_f/dx to ``F``
    and its (PSD) Hessian to ``K``, returns ``E_f``."""
    if fc <= 0.0:
        return 0.0
    dn = m0 * d0 + m1 * d1 + m2 * d2
    u0 = (d0 - dn * m0) / dt
    u1 = (d1 - dn * m1) / dt
    u2 = (d2 - dn * m2) / dt
    y = math.sqrt(u0 * u0 + u1 * u1 + u2 * u2)
    f0, f1y, df1 = smoothed_coulomb(y, ev)
    for r in range(3):
        ur = u0 if r == 0 else (u1 if r == 1 else u2)
        mr = m0 if r == 0 else (m1 if r == 1 else m2)
        F[r] += fc * f1y * ur  # dE_f/dx = fc f1(y) u / y
        for c in range(3):
            uc = u0 if c == 0 else (u1 if c == 1 else u2)
            mc = m0 if c == 0 else (m1 if c == 1 else m2)
            pp = (1.0 if r == c else 0.0) - mr * mc
            # (fc / dt) [f1' uh uh^T + (f1 / y) (P - uh uh^T)]
            uu = ur * uc / (y * y) if y > 0.0 else 0.0
            K[r, c] += fc / dt * ((df1 - f1y) * uu + f1y * pp)
    return fc * dt * f0


@kernel
def contact_force_velocity(s, k, D1, D2, c, ev, R, p, v0, v1, v2, dt, wx, wv, F, K):
    """Eq. 9's force where the point's velocity is given rather than a step's displacement (the
    collocation forms, PBAD orders 3-4: ``v`` is the derivative of the position polynomial at a
    node), with an optional normal damper ``c``.  For contact point ``k`` on its body at pose
    ``(R, p)`` moving with world velocity ``v = (v0, v1, v2)``: with depth ``d``, normal ``n`` at
    ``x`` (the one detection), ``u = P v``, ``P = I - n n^T`` (the tangent plane at ``x`` itself)
    and ``v_n = n . v``,

        F = -f_n n + 2 D2 d^2 u / dt,      f_n = max(0, 2 d (D1 + D2 |u|^2) - c v_n)

    (with ``c = 0``: ``dE/dx`` of Eq. 9 at ``x - x_k = v dt``, the normal spring ``2 D1 d`` and
    the tangential damping ``2 D2 d^2 / dt`` of :func:`contact_energy`; ``c > 0`` adds the
    penalty model's normal damper of :mod:`.penalty`, clamped like it so that the normal force
    never pulls), written to ``F`` (3,) (``F`` is minus the force on the point), and ``K`` (3, 3)
    = ``wx dF/dx + wv dF/dv`` with the normal locally constant (exact on flat faces; no PSD
    projection: a collocation residual is no gradient).  Unclamped::

        dF/dx = 2 (D1 + D2 |u|^2) n n^T - (4 D2 d / dt) u n^T
        dF/dv = -4 D2 d n u^T + c n n^T + (2 D2 d^2 / dt) P

    (clamped: without the ``n n^T`` and ``n u^T`` terms).  With ``v = (x - x_k) / dt``, ``c = 0``,
    ``wx = 1``, ``wv = 1 / dt`` and ``n = n_k`` (a plane) this is :func:`contact_energy`'s force
    and its Hessian before the projection.  ``ev > 0``: Coulomb friction instead of the ``D2`` term
    (:func:`eq9_velocity_law`).  Returns the depth ``d`` (0 out of contact, where ``F`` and ``K``
    are zero)."""
    _x0, _x1, _x2, dep, n0, n1, n2 = contact_detect(s, k, R, p)
    return eq9_velocity_law(dep, n0, n1, n2, v0, v1, v2, D1, D2, c, ev, dt, wx, wv, F, K)


@kernel
def eq9_velocity_law(dep, n0, n1, n2, v0, v1, v2, D1, D2, c, ev, dt, wx, wv, F, K):
    """:func:`contact_force_velocity`'s law at depth ``dep`` with normal ``n`` and point velocity
    ``v`` (between bodies: relative to the shape's body): writes ``F``, ``K``, returns ``dep``
    (0 out of contact).  ``ev > 0``: :func:`coulomb_velocity_law` instead."""
    for r in range(3):
        F[r] = 0.0
        for cc in range(3):
            K[r, cc] = 0.0
    if dep <= 0.0:
        return 0.0
    if ev > 0.0:
        return coulomb_velocity_law(dep, n0, n1, n2, v0, v1, v2, D1, D2, c, ev, wx, wv, F, K)
    vn = n0 * v0 + n1 * v1 + n2 * v2
    t0 = v0 - vn * n0  # u = P v
    t1 = v1 - vn * n1
    t2 = v2 - vn * n2
    tt = t0 * t0 + t1 * t1 + t2 * t2
    fn = 2.0 * dep * (D1 + D2 * tt) - c * vn
    on = 1.0
    if fn < 0.0:  # the damper would pull: no normal force (as the penalty model)
        fn = 0.0
        on = 0.0
    ft = 2.0 * D2 * dep * dep / dt
    F[0] = -fn * n0 + ft * t0
    F[1] = -fn * n1 + ft * t1
    F[2] = -fn * n2 + ft * t2
    knn = on * (wx * 2.0 * (D1 + D2 * tt) + wv * c)  # n n^T
    ktn = wx * 4.0 * D2 * dep / dt  # u n^T
    knt = on * wv * 4.0 * D2 * dep  # n u^T
    kp = wv * ft  # P
    normal_tangent_block(n0, n1, n2, t0, t1, t2, knn, ktn, knt, kp, 0.0, K)
    return dep


@kernel
def normal_tangent_block(n0, n1, n2, t0, t1, t2, knn, ktn, knt, kp, ktt, K):
    """``K = knn n n^T - ktn t n^T - knt n t^T + kp (I - n n^T) + ktt t t^T`` (3x3): the velocity
    laws' Jacobians in the normal ``n`` and the tangential velocity ``t``."""
    for r in range(3):
        nr = n0 if r == 0 else (n1 if r == 1 else n2)
        tr = t0 if r == 0 else (t1 if r == 1 else t2)
        for cc in range(3):
            nc = n0 if cc == 0 else (n1 if cc == 1 else n2)
            tc = t0 if cc == 0 else (t1 if cc == 1 else t2)
            K[r, cc] = (knn * nr * nc - ktn * tr * nc - knt * nr * tc + kp * ((1.0 if r == cc else 0.0) - nr * nc)
                        + ktt * tr * tc)


@kernel
def coulomb_velocity_law(dep, n0, n1, n2, v0, v1, v2, D1, D2, c, ev, wx, wv, F, K):
    """The collocation forms' contact with Coulomb friction (option ``friction="coulomb"``): the
    normal force ``f_n = max(0, 2 D1 d - c v_n)`` of :func:`eq9_velocity_law` without the ``D2``
    term, and the friction ``mu f_n f1(|u|) u / |u|`` (``u = P v``, ``f1`` smoothed below the speed
    ``ev`` as :func:`coulomb_lagged`'s; ``mu = D2 v_ref / D1``).  No potential is needed here (a
    collocation residual is no gradient), so ``f_n`` is the node's own.  Writes ``F`` (minus the
    force on the point) and ``K = wx dF/dx + wv dF/dv`` (normal locally constant), returns ``dep``;
    ``F``, ``K`` are zeroed by the caller."""
    vn = n0 * v0 + n1 * v1 + n2 * v2
    t0 = v0 - vn * n0  # u = P v
    t1 = v1 - vn * n1
    t2 = v2 - vn * n2
    y = math.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    fn = 2.0 * D1 * dep - c * vn
    if fn <= 0.0:  # the damper would pull: no contact force at all
        return dep
    mu = D2 * V_REF / D1 if D1 > 0.0 else 0.0
    _f0, f1y, df1 = smoothed_coulomb(y, ev)
    g = mu * fn * f1y
    F[0] = -fn * n0 + g * t0
    F[1] = -fn * n1 + g * t1
    F[2] = -fn * n2 + g * t2
    # dfn/dx = -2 D1 n^T, dfn/dv = -c n^T; d(f1(y) u / y)/dv = [f1' uh uh^T + (f1 / y)(P - uh uh^T)]
    a = wx * 2.0 * D1 + wv * c  # -(wx dfn/dx + wv dfn/dv) = a n^T
    ktt = wv * mu * fn * (df1 - f1y) / (y * y) if y > 0.0 else 0.0
    normal_tangent_block(n0, n1, n2, t0, t1, t2, a, a * mu * f1y, 0.0, wv * mu * fn * f1y, ktt, K)
    return dep


@kernel
def contact_step_fraction(sd0, dn, frac):
    """The largest ``alpha`` in (0, 1] such that a contact point outside the environment (signed
    depth ``sd0 <= 0``), moved along ``alpha dx`` with ``dn = n . dx`` (``n``: its normal), sinks no
    deeper than ``frac`` times the depth the full step predicts for it, on the linearised depth
    ``sd(x + alpha dx) ~ sd0 - alpha dn``; 1 when the full step keeps it outside."""
    sd1 = sd0 - dn
    if sd1 > 0.0:
        return (frac * sd1 - sd0) / (sd1 - sd0)
    return 1.0
