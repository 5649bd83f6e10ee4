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

from pbsim.backends.kernel import kernel, specialize
from pbsim.dynamics.joints import integrate_config
from pbsim.dynamics.kinematics import fk_state
from pbsim.dynamics.minv import minv_factor, minv_solve
from pbsim.integrators.pbad.energy import contact_step_limit, poses_from_work, world_twists
from pbsim.integrators.pbfd.residual import ge_gradient, half_sq, pbfd_residual, qr_damped_solve, qr_factor
from pbsim.optim.lbfgs import lbfgs_first_loop, lbfgs_push, lbfgs_second_loop
from pbsim.optim.linalg import dot, inf_norm
from pbsim.optim.lm import lm_begin, lm_iterate, lm_loop, lm_stalled_small

WINDOW = 10  # LM stops (unconverged) when GE has not halved over this many iterations
STALL_FACTOR = 1e3  # a solve stopped on a tiny step counts as converged when |r|_inf <= this * gtol
MAX_STEP = 0.2  # LBFGS: largest step of one iteration (rad or m, max-norm)
STEP_FRAC = 0.5  # a contact point entering the environment lands at this fraction of its predicted depth


@kernel
def pbfd_trial_point(P, b, tries):
    """The trial iterate ``qi (+) dx`` (dx shortened in place so that contact points entering the
    environment land at :data:`STEP_FRAC` of the depth the linearised step predicts: the normal
    stiffness ``alpha C_perp d^(alpha-1)`` vanishes at d = 0, so an unlimited Newton step from
    outside lands deep in)."""
    m, s, pm, c, w, pw, q, v, dt, V = P
    qi = pw.qn[b, 2]
    dx = pw.dx[b]
    if s.npts > 0:
        if tries > 0:  # a rejected trial left its poses and twists in pw.T[b, 2], pw.xi[b, 0]
            fk_state(m, w, b, qi)
            poses_from_work(m, w, b, pw.T[b, 2])
            world_twists(m, pw.T[b, 2], pw.xi[b, 0])
        a = contact_step_limit(m, s, pw.T[b, 2], pw.xi[b, 0], dx, STEP_FRAC)
        if a < 1.0:
            for k in range(m.nv):
                dx[k] *= a
    integrate_config(m, qi, dx, pw.qt[b, 2], w.Rj[b])


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
    return half_sq(r, n), inf_norm(r, n)


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
pbfd_lm_begin = specialize(lm_begin, "pbfd_lm", **PBFD_LM)  # the GPU's per-launch schedule (.step)
pbfd_lm_iterate = specialize(lm_iterate, "pbfd_lm", **PBFD_LM)


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


@kernel
def pbfd_lbfgs(m, s, pm, c, w, wf, pw, V, b, q, v, dt, maxit, gtol, xtol, info):
    """LBFGS with Armijo backtracking on GE (gradient J_r^T r) for trajectory b; stops when
    ``|r|_inf <= gtol`` (or on a step below xtol / a failed line search).  ``wf``: a second
    dynamics workspace holding M(q_k)'s factor.  info as :func:`pbfd_lm`."""
    n = m.nv
    qi = pw.qn[b, 2]
    qt = pw.qt[b, 2]
    r = pw.g[b]
    J = pw.H[b]
    g = V[b, 0]  # grad GE at the iterate
    gt = V[b, 1]  # grad GE at the accepted trial
    y_new = V[b, 2]
    s_new = pw.r[b]
    dx = pw.dx[b]
    P = pw.P[b]
    for j in range(n):
        P[j] = 0.0
    minv_factor(m, wf, b, q[b], P, P)  # zero velocity, no extra diagonal
    pbfd_residual(m, s, pm, c, w, pw, b, qi, q[b], v[b], dt, True, r, J)
    ge_gradient(J, r, g, n)
    E = half_sq(r, n)
    gn = inf_norm(r, n)
    head = 0
    count = 0
    h0 = 1.0
    it = 0
    small = False
    mm = pw.S.shape[1]
    while it < maxit and gn > gtol:
        it += 1
        lbfgs_first_loop(g, pw.S[b], pw.Y[b], pw.rho[b], pw.alpha[b], count, head, dx, n)
        h0_apply(m, wf, b, h0, dt, dx, P)
        lbfgs_second_loop(pw.S[b], pw.Y[b], pw.rho[b], pw.alpha[b], count, head, dx, n)
        slope = dot(g, dx, n)
        if not (slope < 0.0):  # not a descent direction: preconditioned steepest descent
            for j in range(n):
                dx[j] = -g[j]
            h0_apply(m, wf, b, h0, dt, dx, P)
            slope = dot(g, dx, n)
        if s.npts > 0:  # as LM's trials: points entering the environment land inside, not through it
            a = contact_step_limit(m, s, pw.T[b, 2], pw.xi[b, 0], dx, STEP_FRAC)  # poses, twists of the iterate
            if a < 1.0:
                for j in range(n):
                    dx[j] *= a
                slope *= a
        big = inf_norm(dx, n)
        if big > MAX_STEP:  # a trust cap: GE has other roots far away (a cube turned by pi is one)
            for j in range(n):
                dx[j] *= MAX_STEP / big
            slope *= MAX_STEP / big
        step = 1.0
        ok = False
        Et = E
        for _ls in range(40):
            for j in range(n):
                s_new[j] = step * dx[j]
            integrate_config(m, qi, s_new, qt, w.Rj[b])
            pbfd_residual(m, s, pm, c, w, pw, b, qt, q[b], v[b], dt, False, pw.rt[b], J)
            Et = half_sq(pw.rt[b], n)
            if Et <= E + 1e-4 * step * slope:
                ok = True
                break
            step *= 0.5
        if not ok:
            small = inf_norm(s_new, n) < xtol
            break
        pbfd_residual(m, s, pm, c, w, pw, b, qt, q[b], v[b], dt, True, r, J)
        ge_gradient(J, r, gt, n)
        for j in range(n):
            y_new[j] = gt[j] - g[j]
        head2 = lbfgs_push(pw.S[b], pw.Y[b], pw.rho[b], s_new, y_new, head, n)
        if head2 != head:
            head = head2
            if count < mm:
                count += 1
            for j in range(n):
                dx[j] = y_new[j]
            h0_apply(m, wf, b, 1.0, dt, dx, P)
            h0 = dot(s_new, y_new, n) / dot(y_new, dx, n)
        for k in range(m.nq):
            qi[k] = qt[k]
        for j in range(n):
            g[j] = gt[j]
        E = Et
        gn = inf_norm(r, n)
        if inf_norm(s_new, n) < xtol:
            small = True
            break
    info[0] = it
    info[1] = gn
    info[2] = 1.0 if pbfd_converged(gn, small, gtol) else 0.0
    info[3] = E
