"""PBFD's solvers (paper 003 Sec. V) on ``GE = |r|^2 / 2``, per trajectory, allocation-free.

- JTJ-LM (default, the paper's choice for every result): ``dx = -(J_r^T J_r + lam D^2)^-1 J_r^T r``
  by the generic Levenberg-Marquardt loop of :mod:`pbsim.optim.lm` with PBFD's hooks (residual
  and Jacobian at the iterate, trial, take) and its damped solve replaced by the QR / Givens form
  of :func:`.residual.qr_damped_solve` (never forming ``J^T J``: the note's pitfall 3).  A trial
  is accepted when GE does not grow; the loop stops when ``|r|_inf <= gtol``, or unconverged at a
  stall: no decrease found, or GE not halved over :data:`WINDOW` iterations (a stationary point
  of GE that is no root of r: ``J_r^T r = 0`` with ``r != 0``, the note's pitfall 2).
- LBFGS on GE with gradient ``J_r^T r``, Armijo backtracking, initial inverse Hessian
  ``h0 dt^4 M(q_k)^-2`` (``J_r ~ M / dt^2``), applied in O(n) through the articulated factor;
  each search direction is shortened like LM's trials for points entering the environment and
  capped at :data:`MAX_STEP` (GE has far roots: a cube turned by pi in one step is one, and
  LBFGS reached it from a box landing at dt = 0.05 before the cap).

Both start from ``q_k (+) dt v_k`` and judge convergence on ``|r|_inf``, not on ``|grad GE|``:
a step is converged when ``|r|_inf <= gtol``, or when the solver stopped on a step below ``xtol``
with ``|r|_inf <= STALL_FACTOR gtol`` (the floating-point floor of r).
"""
from __future__ import annotations

import math

from pbsim.jit import kernel, specialize
from pbsim.dynamics.equality import equality_penalty_stiffness, equality_second_order_correction
from pbsim.dynamics.joints import integrate_config
from pbsim.dynamics.kinematics import fk_state
from pbsim.dynamics.minv import minv_factor, minv_solve
from pbsim.integrators.pbad.energy import contact_step_limit, poses_from_work, world_twists
from pbsim.integrators.pbad.pairs import pair_step_limit
from pbsim.integrators.pbfd.residual import ge_gradient, half_sq, pbfd_residual, qr_damped_solve, qr_factor
from pbsim.optim.lbfgs import lbfgs_loop
from pbsim.optim.linalg import inf_norm
from pbsim.optim.lm import lm_launch_begin, lm_launch_iterate, lm_loop, lm_stalled_small

WINDOW = 10  # LM stops (unconverged) when GE has not halved over this many iterations
STALL_FACTOR = 1e3  # a solve stopped on a tiny step counts as converged when |r|_inf <= this * gtol
MAX_STEP = 0.2  # LBFGS: largest step of one iteration (rad or m, max-norm)
STEP_FRAC = 0.5  # a contact point entering the environment lands at this fraction of its predicted depth


@kernel
def pbfd_trial_point(P, b, tries):
    """The trial iterate ``qi (+) dx`` (dx shortened in place so that contact points entering the
    environment land at :data:`STEP_FRAC` of the depth the linearised step predicts: the normal
    stiffness ``alpha C_perp d^(alpha-1)`` vanishes at d = 0, so an unlimited Newton step from
    outside lands deep in).  With equality constraints (a penalty in E) the trial is moved back to
    the constraint value the linearised step predicts
    (:func:`pbsim.dynamics.equality.equality_second_order_correction`)."""
    m, s, pm, c, w, pw, q, v, dt, V = P
    qi = pw.qn[b, 2]
    dx = pw.dx[b]
    if s.npts > 0 or s.nitem > 0:
        if tries > 0:  # a rejected trial left its poses and twists in pw.T[b, 2], pw.xi[b, 0]
            fk_state(m, w, b, qi)
            poses_from_work(m, w, b, pw.T[b, 2])
            world_twists(m, pw.T[b, 2], pw.xi[b, 0])
        a = 1.0
        if s.npts > 0:
            a = contact_step_limit(m, s, pw.T[b, 2], pw.xi[b, 0], dx, STEP_FRAC)
        if s.nitem > 0:  # points meeting another body's shape, on the swept relative motion
            a = min(a, pair_step_limit(m, s, pw.T[b, 2], pw.xi[b, 0], dx, STEP_FRAC))
        if a < 1.0:
            for k in range(m.nv):
                dx[k] *= a
    integrate_config(m, qi, dx, pw.qt[b, 2], w.Rj[b])
    if m.eq_type.shape[0] > 0:
        equality_second_order_correction(m, w, b, qi, dx, pw.qt[b, 2])


# JTJ-LM: the generic loop on the problem P = (m, s, pm, c, w, pw, q, v, dt, V), iterate
# pw.qn[b, 2], trial pw.qt[b, 2]; lw = (V[b], R, S, unused, dx) for qr_damped_solve

@kernel
def pbfd_lm_eval(P, b):
    """LM hook: r and J_r at the iterate (pw.g, pw.H), J_r's QR (pw.M2, V[b, 0:2]); (GE, |r|_inf)."""
    m, s, pm, c, w, pw, q, v, dt, V = P
    n = m.nv
    r = pw.g[b]
    pbfd_residual(m, s, pm, c, w, pw, b, pw.qn[b, 2], q[b], v[b], dt, True, r, pw.H[b])
    qr_factor(pw.H[b], pw.M2[b], V[b, 0], r, V[b, 1], n)
    if m.eq_type.shape[0] > 0:
        scale_without_penalty(m, w, b, pw.H[b], V[b, 1], dt, n)
    return half_sq(r, n), inf_norm(r, n)


@kernel
def scale_without_penalty(m, w, b, J, D, dt, n):
    """Marquardt's scaling ``D_j = |J e_j|`` taken from ``J_r`` less the equality penalty's
    ``kc J_e^T J_e`` (its rows at the iterate, which the residual left in ``w.eJ``).  The penalty
    makes every column of ``J_r`` ~``kc`` long while the motions along the constraints are ~``M /
    dt^2`` stiff: damping ``lam D^2`` scaled by the full columns stalls those motions (JTJ-LM
    squares the ratio: a free box welded to an arm at 20 ms needed lam < 5e-15 and stopped
    unconverged after thousands of iterations).  Along the constraints' normals the step is left
    to the penalty's Newton step, made second-order accurate by the trials' correction
    (:func:`pbfd_trial_point`)."""
    Je = w.eJ[b]
    K = Je.shape[0]
    kc = equality_penalty_stiffness(m, dt)
    for j in range(n):
        t = 0.0
        for i in range(n):
            p = 0.0
            for r in range(K):
                p += Je[r, i] * Je[r, j]
            a = J[i, j] - kc * p
            t += a * a
        D[j] = math.sqrt(t + 1e-9)


@kernel
def pbfd_lm_trial(P, b, tries):
    """LM hook: the trial iterate and GE there (its r in pw.rt)."""
    m, s, pm, c, w, pw, q, v, dt, V = P
    pbfd_trial_point(P, b, tries)
    rt = pw.rt[b]
    pbfd_residual(m, s, pm, c, w, pw, b, pw.qt[b, 2], q[b], v[b], dt, False, rt, pw.H[b])
    return half_sq(rt, m.nv)


@kernel
def pbfd_take(P, b):
    """LM hook: the trial iterate becomes the iterate."""
    m = P[0]
    pw = P[5]
    for k in range(m.nq):
        pw.qn[b, 2, k] = pw.qt[b, 2, k]


PBFD_LM = dict(lm_eval=pbfd_lm_eval, lm_try=pbfd_lm_trial, lm_take=pbfd_take, lm_solve=qr_damped_solve,
               lm_stalled=lm_stalled_small)
pbfd_lm_loop = specialize(lm_loop, "pbfd_lm", **PBFD_LM)
pbfd_lm_launch_begin = specialize(lm_launch_begin, "pbfd_lm", **PBFD_LM)  # the GPU's per-launch schedule (.step)
pbfd_lm_launch_iterate = specialize(lm_launch_iterate, "pbfd_lm", **PBFD_LM)


@kernel
def pbfd_converged(gn, solver_conv, gtol):
    """Converged on the residual: ``|r|_inf <= gtol``, or the solver stopped on a tiny step at the
    floating-point floor of r (``|r|_inf <= STALL_FACTOR gtol``)."""
    return gn <= gtol or (solver_conv and gn <= STALL_FACTOR * gtol)


@kernel
def pbfd_lm(m, s, pm, c, w, pw, V, b, q, v, dt, maxit, gtol, xtol, info):
    """JTJ-LM on GE for trajectory b.  info = [iterations, |r|_inf, converged, GE]."""
    pbfd_lm_loop((m, s, pm, c, w, pw, q, v, dt, V), (V[b], pw.M2[b], pw.L[b], pw.J[b], pw.dx[b]), b, m.nv,
                 maxit, gtol, xtol, 0.0, WINDOW, info)
    info[2] = 1.0 if pbfd_converged(info[1], info[2] > 0.5, gtol) else 0.0


@kernel
def h0_apply(m, wf, b, h0, dt, d, tmp):
    """d <- h0 dt^4 M(q_k)^-2 d (LBFGS's initial inverse Hessian of GE: J_r ~ M / dt^2)."""
    minv_solve(m, wf, b, d, tmp)
    minv_solve(m, wf, b, tmp, d)
    sc = h0 * dt * dt * dt * dt
    for j in range(m.nv):
        d[j] *= sc


# LBFGS: the generic loop of pbsim.optim.lbfgs on the problem P = (m, s, pm, c, w, wf, pw, q, v,
# dt, V), iterate pw.qn[b, 2] (r, J_r in pw.g, pw.H; grad GE in V[b, 0]), trial pw.qt[b, 2] (r in
# pw.rt; grad GE at the accepted trial in V[b, 1])

@kernel
def pbfd_lbfgs_eval(P, b):
    """LBFGS hook: r, J_r and grad GE = J_r^T r at the iterate; (GE, |r|_inf)."""
    m, s, pm, c, w, wf, pw, q, v, dt, V = P
    n = m.nv
    r = pw.g[b]
    pbfd_residual(m, s, pm, c, w, pw, b, pw.qn[b, 2], q[b], v[b], dt, True, r, pw.H[b])
    ge_gradient(pw.H[b], r, V[b, 0], n)
    return half_sq(r, n), inf_norm(r, n)


@kernel
def pbfd_lbfgs_h0(P, b, h0, d):
    """LBFGS hook: d <- h0 dt^4 M(q_k)^-2 d (:func:`h0_apply`)."""
    m, s, pm, c, w, wf, pw, q, v, dt, V = P
    h0_apply(m, wf, b, h0, dt, d, pw.P[b])


@kernel
def pbfd_lbfgs_limit(P, b, slope):
    """LBFGS hook: :func:`lbfgs_trust`."""
    m, s, pm, c, w, wf, pw, q, v, dt, V = P
    return lbfgs_trust(m, s, pw, b, slope)


@kernel
def lbfgs_trust(m, s, pw, b, slope):
    """The LBFGS direction ``pw.dx[b]`` limited as LM's trials: points entering the environment
    land inside, not through it (poses and twists of the iterate in pw.T[b, 2], pw.xi[b, 0]);
    then the :data:`MAX_STEP` cap.  Returns the slope scaled likewise (pbfd, pbd_friction)."""
    n = m.nv
    dx = pw.dx[b]
    if s.npts > 0 or s.nitem > 0:
        a = 1.0
        if s.npts > 0:
            a = contact_step_limit(m, s, pw.T[b, 2], pw.xi[b, 0], dx, STEP_FRAC)
        if s.nitem > 0:
            a = min(a, pair_step_limit(m, s, pw.T[b, 2], pw.xi[b, 0], dx, STEP_FRAC))
        if a < 1.0:
            for j in range(n):
                dx[j] *= a
            slope *= a
    big = inf_norm(dx, n)
    if big > MAX_STEP:  # a trust cap: GE has other roots far away (a cube turned by pi is one)
        for j in range(n):
            dx[j] *= MAX_STEP / big
        slope *= MAX_STEP / big
    return slope


@kernel
def pbfd_lbfgs_try(P, b):
    """LBFGS hook: the trial iterate qi (+) s and GE there (its r in pw.rt)."""
    m, s, pm, c, w, wf, pw, q, v, dt, V = P
    qt = pw.qt[b, 2]
    integrate_config(m, pw.qn[b, 2], pw.r[b], qt, w.Rj[b])
    pbfd_residual(m, s, pm, c, w, pw, b, qt, q[b], v[b], dt, False, pw.rt[b], pw.H[b])
    return half_sq(pw.rt[b], m.nv)


@kernel
def pbfd_lbfgs_take(P, b):
    """LBFGS hook: r, J_r and grad GE (V[b, 1]) at the accepted trial, which becomes the iterate;
    |r|_inf there."""
    m, s, pm, c, w, wf, pw, q, v, dt, V = P
    n = m.nv
    r = pw.g[b]
    pbfd_residual(m, s, pm, c, w, pw, b, pw.qt[b, 2], q[b], v[b], dt, True, r, pw.H[b])
    ge_gradient(pw.H[b], r, V[b, 1], n)
    for k in range(m.nq):
        pw.qn[b, 2, k] = pw.qt[b, 2, k]
    return inf_norm(r, n)


@kernel
def pbfd_lbfgs_gconv(gn, gtol):
    """LBFGS hook: the loop stops converged unless |r|_inf > gtol."""
    return not (gn > gtol)


@kernel
def pbfd_lbfgs_converged(gn, small, gtol):
    """LBFGS hook: :func:`pbfd_converged`."""
    return pbfd_converged(gn, small, gtol)


PBFD_LBFGS = dict(lbfgs_eval=pbfd_lbfgs_eval, lbfgs_h0=pbfd_lbfgs_h0, lbfgs_limit=pbfd_lbfgs_limit,
                  lbfgs_try=pbfd_lbfgs_try, lbfgs_take=pbfd_lbfgs_take, lbfgs_gconv=pbfd_lbfgs_gconv,
                  lbfgs_converged=pbfd_lbfgs_converged)
pbfd_lbfgs_loop = specialize(lbfgs_loop, "pbfd_lbfgs", **PBFD_LBFGS)


@kernel
def pbfd_lbfgs(m, s, pm, c, w, wf, pw, V, b, q, v, dt, maxit, gtol, xtol, info):
    """LBFGS with Armijo backtracking on GE (gradient J_r^T r) for trajectory b
    (:func:`pbsim.optim.lbfgs.lbfgs_loop`); stops when ``|r|_inf <= gtol`` (or on a step below
    xtol / a failed line search).  ``wf``: a second dynamics workspace holding M(q_k)'s factor.
    info as :func:`pbfd_lm`."""
    P = pw.P[b]
    for j in range(m.nv):
        P[j] = 0.0
    minv_factor(m, wf, b, q[b], P, P)  # zero velocity, no extra diagonal
    pbfd_lbfgs_loop((m, s, pm, c, w, wf, pw, q, v, dt, V),
                    (V[b, 0], V[b, 1], pw.dx[b], pw.r[b], V[b, 2], pw.S[b], pw.Y[b], pw.rho[b], pw.alpha[b]), b,
                    m.nv, maxit, gtol, xtol, 0.0, info)
