"""The PGM's manifold projection (Eq. 9 / 11): damped Newton (or chord) steps onto G(., w) = 0.

**Manifold projection** (Eq. 9/11): Newton ``theta <- theta (+) (-A^-1 G)`` until
``|G|_inf <= tol``, **[ours]** damped: a step after which ``|G|_2`` does not decrease (by the
factor ``1 - 1e-4 s``) is halved, ``s = 1, 1/2, ...``, up to ``LS_MAX`` times, from the last
accepted iterate (the paper fails at the first non-decrease: measured, the Robosimian standing at
dt = 50 ms, first step: the full Newton step pushes the feet deep into the cubic capacity, ``|G|``
972 -> 1.7e5, where the damped step (0.64 then 1) converges in 7 Newton steps; undamped the step
was halved to 12.5 ms).  It *fails* (the step is to be subdivided) when the LU finds A singular
(pivot below 1e-14 of its largest entry), when ``LS_MAX`` halvings do not decrease ``|G|_2``,
after ``PROJ_MAX`` steps (``PROJ_MAX_ZO`` with the zeroth-order A), or **[ours]** when a Newton step moves a coordinate by more than
``max_step`` (rad or m; 0.5 by default): G has several roots at a large h (the NE form's RNEA is
quadratic in ``(theta (-) theta_-) / h``, the capacity cubic in the depth) and such a jump lands
on another one (measured with nmdp: a standing spider at dt = 50 ms, its legs folded by a radian
and its feet lifted 0.6 m, a root with every capacity at zeta from which the PGM cannot bring the
contact back).  The bound grows by how far the control's joint targets lie from the prediction
(``newton_step_limit``): during the Robosimian jump's push at 50 ms the SPD reference moves the
legs by more than 0.5 rad in one step, and the fixed bound sub-stepped exactly those steps (5 %
of the steps at 50 ms, 1.2 % at 25 ms; none with the bound).  **[ours]** The merit is ``|G|_2`` (the paper's "|G| decreases" names no norm):
with the zeroth-order A (no ``dv/dtheta``: a chord method) a step that lowers the residual as a
whole often raises its largest entry, and ``|G|_inf`` failed those projections; the chord
iteration converges linearly, hence ``PROJ_MAX_ZO`` = 500 steps instead of Newton's 50.  Measured
with nmdp_zo (2026-11-25): a box resting flat at 12.5 ms sub-stepped in 98 % of its steps (the
projection stopped by the 50-step cap), none with 500; on the 20 deg incline at 50 ms every step
(|G|_inf rule), from the 3rd step none (|G|_2); the Robosimian jump at 50 ms (2 s) sub-stepped
57 % -> 20 %, min alpha dt 1.56 -> 6.25 ms, outer iterations 58 -> 31 a step.  **[ours]** With the
zeroth-order A the merit is the *natural* one (Deuflhard's monotonicity test; our reading of the
paper's ``|G~|`` for ZOPGM, which it does not define): a trial is accepted when ``|A^-1 G|_2`` at
the trial, A factored at the accepted iterate, is below the accepted ``|A^-1 G|_2``.  A chord
direction ``-A^-1 G`` need not descend ``|G|_2`` at all when the missing contact stiffness is
not symmetric (friction vertices ``mu t`` grow with depth), and then no halving helps: counted on
the Robosimian jump at 50 ms (2.5 s), 271 of nmdp_zo's 294 projection failures were ``LS_MAX``
halvings without a decrease of ``|G|_2`` (the rest the step cap); 143 failures with this merit.  And
with the zeroth-order A, ``max_step`` cuts the step to the bound (a trust region) instead of
failing: the chord overshoots along the contact stiffness by design, which is no root jump.
Measured (the same 10 s runs): min alpha dt nmdp_zo 3.12 -> 12.5 ms, pbd_nmdp_zo 3.12 -> 12.5 ms;
the first order is untouched (``|G|_2``, ``max_step`` a failure).  That chord iteration (option
``projection="chord"`` of the zeroth-order forms) is still what made them slow at large dt on a
body lying on the floor: counted on the gymnasium humanoid dropped from qpos0 and a small 18-DOF
quadruped (issue 30, ``scripts/bench/bench_large_dt.py``), 2,750-3,900 chord steps and 12,000-18,600
evaluations per 50 ms step, 60-154 s of wall per simulated second.  **[ours]** The default
``projection="newton"`` projects with the exact A of Eq. 9 (the contact stiffness ``J^T (dv/dtheta)
w`` included, the same Newton iteration as the first order: its root of ``G(., w) = 0`` is the one
the chord converges to when it converges) and keeps Eq. 10's zeroth-order A only where the paper's
zeroth order differs in what it computes, the QP's ``D = A~^-1 B``: ~2 Newton steps a projection,
200-420 evaluations a step, 1.3-2.2 s per simulated second on those drops.  That A~ at the
projected point is the exact A less its first-order-only part, which the last evaluation keeps in
``x.Ad`` (:func:`.contact.pgm_contact`; until 2026-11-28 the point was evaluated once more for it,
a quarter of the zeroth-order forms' evaluations).
"""

from __future__ import annotations

import math

import numpy as np

from pbsim.jit import kernel
from pbsim.dynamics.equality import equality_second_order_correction
from pbsim.dynamics.joints import integrate_config
from pbsim.integrators.pgm.problem import S_EVAL, S_LU, S_NEWTON, S_PFAIL, pgm_eval
from pbsim.optim.linalg import dot, inf_norm, lu_factor, lu_solve

PROJ_MAX = 50  # Newton steps of one manifold projection
PROJ_MAX_ZO = 500  # chord steps (the zeroth-order A): they converge linearly
LS_MAX = 10  # halvings of one Newton step (its line search on |G|_2)


@kernel
def newton_step_limit(m, c, x, b, th):
    """``max_step`` plus how far the control's joint targets lie from the prediction ``th`` (the
    largest |q_ref - th| over the 1-DOF joints that a PD/SPD gain drives): a projection step
    toward a commanded target is not a jump to another root."""
    lim = x.maxstep
    if c.mode != 0:
        bq = b if c.q_ref.shape[0] > 1 else 0
        bk = b if c.kp.shape[0] > 1 else 0
        for i in range(m.nb):
            if m.nvj[i] == 1 and m.nqj[i] == 1 and c.kp[bk, m.iv[i]] > 0.0:
                gap = abs(c.q_ref[bq, m.iq[i]] - th[m.iq[i]])
                if gap + x.maxstep > lim:
                    lim = gap + x.maxstep
    return lim


@kernel
def pgm_project(m, s, c, w, x, b, q0, v0, th, h, wts, nc, first, st, lim, w0):
    """Manifold projection (Eq. 9 / 11) of ``th`` (in place) onto G(., wts) = 0 by Newton steps
    with A (first or zeroth order), damped (module docstring): a step that does not decrease
    the merit (``|G|_2``; zeroth order ``|A^-1 G|_2``) is halved (up to ``LS_MAX`` times) before
    the projection fails.  Returns ``(ok, K, |G|_inf)``; on failure
    ``th`` holds the iterate with the smallest residual.  A, B rows, H, g are left at the returned
    th when ok.

    **[ours]** With ``w0`` True, ``th`` is the accepted iterate, evaluated last at the weights
    ``x.wts`` (``x.G``, the rows ``x.Bm``, the exact A: ``x.A``, plus ``x.Ad`` after the zeroth
    order's subtraction): G is linear in the weights (Eq. 6 / 12), so its value at ``wts`` is
    ``x.G + Bm^T (wts - x.wts)`` without evaluating, and the first Newton step takes A at the old
    weights.  One evaluation fewer per projection.  Used by the zeroth-order forms' exact-A
    projections only: in the first order the changed Newton path moved the humanoid's 50 ms rests
    across equilibrium branches (pbd_nmdp -1.2 -> +14.2 mm, humanoid_rand -11.4 -> +0.6 mm against
    the 1 ms runs; docs/benchmarks/nmdp.md "Step cost at large dt"), and it is well below real time."""
    nv = m.nv
    racc = np.inf
    r2acc = np.inf
    # the projection's A: the QP's (``first``), or with the zeroth-order QP and ``projection="newton"``
    # (x.zo == 2, ours) the exact A of Eq. 9 (Eq. 10's D stays zeroth order); pf False: Eq. 11's chord
    pf = first or x.zo == 2
    pmax = PROJ_MAX if pf else PROJ_MAX_ZO
    K = 0.0
    G = x.G[b]
    dq = x.dq[b]
    dn = x.dn[b]
    thb = x.thb[b]
    ok = False
    sc = 0.0
    newton = 0
    halved = 0
    lin = w0 and pf and not first  # the zeroth order's exact-A projection (docstring)
    if lin:  # G at the new weights from the old ones' evaluation: x.G + Bm^T dw
        Bm = x.Bm[b]
        wo = x.wts[b]
        for rr in range(nc * x.vx):
            dw = wts[rr] - wo[rr]
            if dw != 0.0:
                Br = Bm[rr]
                for j in range(nv):
                    G[j] += Br[j] * dw
        if inf_norm(G, nv) <= x.tol:  # no step to take: the derivatives at the new weights are needed
            lin = False
        else:  # the exact A at the old weights (the QP's was Eq. 10's A = A - Ad)
            A = x.A[b]
            Ad = x.Ad[b]
            for i in range(nv):
                for j in range(nv):
                    A[i, j] += Ad[i, j]
    for _ in range(pmax * (LS_MAX + 1) + 1):
        if lin:
            lin = False
        else:
            K = pgm_eval(m, s, c, w, x, b, q0, v0, th, h, wts, nc, True, pf)
            st[S_EVAL] += 1.0
        r = inf_norm(G, nv)
        if r <= x.tol:
            ok = True
            racc = r
            break
        if pf or newton == 0:
            r2 = math.sqrt(dot(G, G, nv))
        else:  # zeroth order: natural monotonicity, |A_acc^-1 G| at the trial against the accepted |A_acc^-1 G|
            for j in range(nv):
                dq[j] = G[j]
            lu_solve(x.LU[b], x.piv[b], dq, nv)
            r2 = math.sqrt(dot(dq, dq, nv))
        if r2 < (1.0 - 1e-4 * sc) * r2acc:  # the merit decreased (the first iterate: inf) accepts
            racc = r
            r2acc = r2
            for j in range(m.nq):
                thb[j] = th[j]
            if newton == pmax:
                break
            st[S_LU] += 1.0
            if not lu_factor(x.A[b], x.LU[b], x.piv[b], nv):
                break
            for j in range(nv):
                dn[j] = -G[j]
            lu_solve(x.LU[b], x.piv[b], dn, nv)
            dni = inf_norm(dn, nv)
            sc = 1.0
            if not pf:
                r2acc = math.sqrt(dot(dn, dn, nv))
            if not (dni <= lim):  # first order: a jump toward another root (NaN included): fail
                if pf or not (dni < np.inf):
                    break
                sc = lim / dni  # zeroth order: the chord's overshoot, cut to the bound (a trust region)
            newton += 1
            halved = 0
            st[S_NEWTON] += 1.0
        else:  # |G| did not decrease (NaN included): halve the step from the accepted iterate
            halved += 1
            if halved > LS_MAX or newton == 0:
                break
            sc *= 0.5
        for j in range(nv):
            dq[j] = sc * dn[j]
        integrate_config(m, thb, dq, th, w.Rj[b])
        if m.eq_type.shape[0] > 0:  # equality penalty: the trial back at the constraint value the step predicts
            equality_second_order_correction(m, w, b, thb, dq, th)
    if not ok:
        st[S_PFAIL] += 1.0
        for j in range(m.nq):
            th[j] = thb[j]
        return False, K, racc
    if pf != first:  # the QP's zeroth-order A (Eq. 10) at the projected point: the exact one less its
        A = x.A[b]  # first-order-only part, kept by the last evaluation (pgm.contact.pgm_contact)
        Ad = x.Ad[b]
        for i in range(nv):
            for j in range(nv):
                A[i, j] -= Ad[i, j]
    return True, K, racc
