"""Algorithm 1 of paper 002: the projected gradient method of one sub-step (warm start, QP, projection, gamma).

**Algorithm 1** (the note's cleaned-up form, B5 item 2): ``theta^0 = theta_- (+) h thetadot_-``
(B5 item 10: the explicit prediction as the start), ``w^0 = 0`` (``init="zero"``, the paper's) or
(``init="qp"``, the default, **[ours]**) the QP of the linearisation at that unprojected point (A,
B, g there, ``G != 0`` taken into the linear model, a weak proximal term ``gamma = 1e3``: NE-MDP's
problem, the linearised maximal dissipation), then projected.  Why: from ``w = 0`` a loaded robot's
projection is the step *without* ground forces -- a standing spider's stable-PD torques, no longer
balanced by the feet, fold its light legs by a radian in 50 ms and lift its feet 0.6 m out of the
ground, where every capacity is zeta and the PGM cannot bring the contact back (a feasible local
minimum, accepted; measured with nmdp: the spider collapsed at dt = 50 ms in its 5th step).  Then
per iteration the QP at the accepted ``(theta, w)``, the projection of the trial from theta; ``K``
increased or the projection failed: reject, ``gamma <- gamma / eta``; else accept, ``gamma <-
gamma eta`` (from ``gamma0``: option, **[ours]** 1e4 for the first order, the paper's 1 for the
zeroth), and stop when ``|theta^k (-) theta^(k-1)|_inf < xtol``.  A rejected trial whose
projection succeeded within ``xtol`` of theta also stops (stationary to within xtol).
``max_iterations`` outer iterations without stopping: status 1 (Algorithm 2 halves the sub-step;
at the cap it keeps the last accepted, feasible iterate, flagged).
"""

from __future__ import annotations

import numpy as np

from pbsim.jit import kernel
from pbsim.dynamics.joints import difference_config, integrate_config
from pbsim.integrators.pgm.problem import S_EVAL, S_GACC, S_K0, S_K1, S_KRISE, S_REJ, pgm_eval, pgm_prepare
from pbsim.integrators.pgm.project import newton_step_limit, pgm_project
from pbsim.integrators.pgm.qp import pgm_qp, pgm_qp_dual_range
from pbsim.optim.linalg import inf_norm

GAMMA_INIT = 1e3  # the warm start's QP: a weak proximal term (it only keeps the QP strictly convex)
# gamma0's defaults: a weak proximal term at the first iteration of the first-order PGM (the
# Robosimian jump: 3.4 / 10.4 outer iterations per step at dt 10 / 50 ms against 10.5 / 27 with the
# paper's gamma = 1, the states the same to 1e-5 m; docs/benchmarks/nmdp.md), 1 for the zeroth order
# (its inexact A: 1e4 raised nmdp_zo's iterations at 50 ms from 57 to 77)
GAMMA0_FO = 1e4
GAMMA0_ZO = 1.0
# **[ours]** gamma grows no further than this in the zeroth order, and in the first order where the
# QP has more than DUAL_MIN_RATIO nv weights (c = 2 / (gamma + 2) >= 2e-5: the QP's proximal weight
# stays where its dual form applies, pgm.qp.DUAL_MIN_C).  Unbounded, the quad18's late QPs fell back
# to the formed matrix (384 weights), and pybullet_data's a1 lying on its floor (464 weights) to the
# active set whose free set outgrew its factor, then FISTA at c ~ 1e-8: 2,600 QP iterations a QP, 11
# s a step (issue 30).  The first order with fewer weights is left unbounded (bounded alike,
# humanoid_rand nmdp at 50 ms took 90 outer iterations a step instead of 35; docs/benchmarks/nmdp.md
# "Step cost at large dt")
GAMMA_MAX = 1e5


@kernel
def pgm_solve(m, s, c, w, sw, x, b, q0, v0, h, dt, st):
    """Algorithm 1 for the sub-step of h from (q0, v0); the result in ``x.th``.  Returns
    ``(status, outer iterations, |G|_inf)``: status 0 stopped by xtol, 1 iteration cap (the last
    accepted iterate, feasible), 2 failed (initial projection or singular A: subdivide)."""
    nv = m.nv
    first = x.zo == 0
    nc = pgm_prepare(m, s, c, w, sw, x, b, q0, v0, h, dt)
    V = x.vx
    wts = x.wts[b]
    wn = x.wn[b]
    for rr in range(wts.shape[0]):
        wts[rr] = 0.0
    th = x.th[b]
    thn = x.thn[b]
    dq = x.dq[b]
    for j in range(nv):
        dq[j] = h * v0[j]
    integrate_config(m, q0, dq, th, w.Rj[b])
    lim = newton_step_limit(m, c, x, b, th)
    if x.init == 1 and nc > 0:  # warm start: the QP of the linearisation at the prediction
        pgm_eval(m, s, c, w, x, b, q0, v0, th, h, wts, nc, True, first)
        st[S_EVAL] += 1.0
        if pgm_qp(m, x, b, nc, h, GAMMA_INIT, st, True):
            for rr in range(V * nc):
                wts[rr] = wn[rr]
    ok, K, res = pgm_project(m, s, c, w, x, b, q0, v0, th, h, wts, nc, first, st, lim, False)
    if not ok:
        return 2, 0, res
    st[S_K0] = K
    st[S_K1] = K
    if res > st[S_GACC]:
        st[S_GACC] = res
    if nc == 0:
        return 0, 0, res
    gamma = x.gamma0
    gmax = GAMMA_MAX if (not first or pgm_qp_dual_range(V * nc, nv)) else np.inf
    fresh = True  # th's last evaluation was the projection's (x.Ad valid: pgm_project's w0)
    for it in range(x.maxit):
        if not pgm_qp(m, x, b, nc, h, gamma, st, False):
            return 2, it, res
        for j in range(m.nq):
            thn[j] = th[j]
        okn, Kn, resn = pgm_project(m, s, c, w, x, b, q0, v0, thn, h, wn, nc, first, st, lim, fresh)
        dth = np.inf
        if okn:
            difference_config(m, th, thn, dq, w.Rj[b])
            dth = inf_norm(dq, nv)
        if okn and not (Kn > K):  # accept
            gamma = min(gamma * x.eta, gmax)
            if Kn > K:  # (cannot happen: the acceptance test) counted for the B-T2 check
                st[S_KRISE] += 1.0
            if resn > st[S_GACC]:
                st[S_GACC] = resn
            st[S_K1] = Kn
            for j in range(m.nq):
                th[j] = thn[j]
            for rr in range(V * nc):
                wts[rr] = wn[rr]
            K = Kn
            res = resn
            fresh = True
            if dth < x.xtol:
                return 0, it + 1, res
        else:  # reject: a stronger proximal term, the accepted iterate's derivatives again
            st[S_REJ] += 1.0
            gamma /= x.eta
            st[S_EVAL] += 1.0
            if dth < x.xtol:
                pgm_eval(m, s, c, w, x, b, q0, v0, th, h, wts, nc, False, first)
                return 0, it + 1, res
            pgm_eval(m, s, c, w, x, b, q0, v0, th, h, wts, nc, True, first)
            fresh = False  # (the zeroth order's A~ evaluated directly: x.Ad is not this point's)
    return 1, x.maxit, res
