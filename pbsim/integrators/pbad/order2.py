"""PBAD order 2 (paper 000 Eq. 5): the step objective, its LM and LBFGS solvers, the integrator.

Order 2 minimises E(q_{k+1}) = inertial term (Eq. 5, through Eq. 8's M~) + gravity potential
- work of joint torques + implicit damping / SPD / drag / penalty contact (Sec. 6.2, Eq. 9), by
Levenberg-Marquardt (exact Hessian, Algorithms 1-3) or LBFGS with Armijo backtracking, over a
tangent increment around the current iterate (re-centred every iteration).  With
``q_{k-1} = q_k (+) (-dt v_k)`` and ``v_{k+1} = (q_{k+1} (-) q_k) / dt`` it is backward Euler on
(q, v) written in positions, hence stateless and first-order accurate (the paper: order K has
the accuracy of Runge-Kutta K - 1).  Orders 3 and 4 are in :mod:`.colloc`.
"""
from __future__ import annotations

import math

from collections import namedtuple

import numpy as np
from numba import prange

from pbsim.jit import Variants, kernel, specialize, unused, unused_float
from pbsim.dynamics.energy import energy_state
from pbsim.dynamics.equality import PENALTY_FEATURE, equality_penalty, equality_project_mass
from pbsim.dynamics.joints import FREE, difference_config, integrate_config
from pbsim.dynamics.kinematics import fk_state
from pbsim.dynamics.minv import minv_factor, minv_solve
from pbsim.integrators.pbad.joints import joint_energy, joint_gradient, joint_hessian
from pbsim.integrators.pbad.pairs import pair_step_limit, pair_terms
from pbsim.integrators.pbad.energy import (adjoint_gradient, composite_moments, contact_hessian, contact_step_limit,
                                           contact_terms, gn_block, hessian_second_order, inertial_gravity_terms,
                                           point_hessian, point_terms, poses_from_work, world_twists)
from pbsim.optim.lbfgs import lbfgs_loop
from pbsim.optim.linalg import inf_norm
from pbsim.optim.lm import lm_launch_begin, lm_launch_iterate, lm_loop

# pF pK pW pG pr: the body-body terms' scratch (pbsim.integrators.pbad.pairs.pair_terms)
PbadWork = namedtuple("PbadWork", "T A G W C xi qn qt r rt J H L M2 g gt dx d v1 v2 v3 vel Wb F K S Y rho alpha P "
                      "pF pK pK2 pW pG pr")


def make_pbad_work(model, pm, B, K, lbfgs_m=8):
    nb, nq, nv = max(model.nb, 1), model.nq, model.nv
    nu = K - 1
    n = nu * nv
    z = np.zeros
    npts = max(pm.npts + len(pm.D1), 1)  # drag points, then the scene's contact points
    return PbadWork(T=z((B, K + 1, nb, 3, 4)), A=z((B, nb, 3, 4)), G=z((B, nb, 3, 4)), W=z((B, nb, 3, 4)),
                    C=z((B, nb, 4, 4)), xi=z((B, nu + 1, nv, 6)), qn=z((B, K + 1, nq)), qt=z((B, K + 1, nq)),
                    r=z((B, n)), rt=z((B, n)), J=z((B, n, n)), H=z((B, n, n)), L=z((B, n, n)), M2=z((B, n, n)), g=z((B, n)),
                    gt=z((B, n)), dx=z((B, n)), d=z((B, nv)), v1=z((B, nv)), v2=z((B, nv)), v3=z((B, nv)),
                    vel=z((B, nv, 3)), Wb=z((B, nb, 6, 6)), F=z((B, npts, 3)), K=z((B, npts, 3, 3)),
                    S=z((B, lbfgs_m, n)), Y=z((B, lbfgs_m, n)), rho=z((B, lbfgs_m)), alpha=z((B, lbfgs_m)),
                    P=z((B, n)), pF=z((B, 3)), pK=z((B, 3, 3)), pK2=z((B, 3, 3)), pW=z((B, 6, 6)), pG=z((B, 3, 4)),
                    pr=z((B, 6)))


# ---------------------------------------------------------------------------------------------
# order 2: energy, gradient, Hessian (Eq. 5)

@kernel
def pbad2_eval(m, s, pm, c, w, pw, b, q, qk, vk, dt, want_g, want_h, exact_h, g, H):
    """E(q) of Eq. 5 for the step from (q_{k-1}, q_k) (poses in pw.T[b, 0], pw.T[b, 1]) to ``q``
    (``s``: the scene arrays, whose contact points get Eq. 9's energy).

    With ``want_g`` fills the tangent gradient ``g`` (nv), with ``want_h`` the Hessian ``H``
    (exact second derivatives of the poses when ``exact_h``, else Gauss-Newton).  Joint-space
    terms (torques, damping, armature, SPD) are exact for 1-DOF joints; for ball/free joints their
    gradient is exact (through dexp^-1) and their Hessian keeps the leading diagonal term
    (:mod:`.joints`: control, damping, armature, springs, dry friction, joint limits)."""
    T = pw.T[b, 2]
    Tk = pw.T[b, 1]
    Tp = pw.T[b, 0]
    A = pw.A[b]
    G = pw.G[b]
    fk_state(m, w, b, q)
    poses_from_work(m, w, b, T)
    inv2 = 1.0 / (dt * dt)
    for i in range(m.nb):
        for r in range(3):
            for cc in range(4):
                A[i, r, cc] = T[i, r, cc] - 2.0 * Tk[i, r, cc] + Tp[i, r, cc]
    e = inertial_gravity_terms(m, pm, T, A, inv2, True, G)
    if pm.npts > 0:
        e += point_terms(m, pm, T, Tk, dt, G, pw.F[b], pw.K[b])
    if s.npts > 0:
        e += contact_terms(m, pm, s, T, Tk, dt, G, pw.F[b], pw.K[b])
    # joint-space terms (control, damping, armature, springs, friction, limits): h = dE/dd, d = q (-) q_k
    d = pw.d[b]
    h = pw.v1[b]
    e += joint_energy(m, c, b, q, qk, vk, dt, d, h, pw.v2[b], w.Rj[b])
    if want_g:
        xi = pw.xi[b, 0]
        world_twists(m, T, xi)
        adjoint_gradient(m, T, G, xi, pw.W[b], g)
        joint_gradient(m, c, b, q, d, h, pw.v2[b], pw.v3[b], w.Rj[b], g)
        if want_h:
            if exact_h:
                hessian_second_order(m, xi, pw.W[b], H, False)
            composite_moments(m, pm, T, T, inv2, pw.C[b])
            gn_block(m, xi, xi, pw.C[b], H, 0, 0, exact_h)
            if pm.npts > 0:
                point_hessian(m, pm, T, xi, pw.K[b], H, 0, pw.Wb[b])
            if s.npts > 0:
                contact_hessian(m, pm, s, T, xi, pw.K[b], H, 0, pw.Wb[b])
            joint_hessian(m, c, b, q, d, dt, H)
    if s.nitem > 0:  # contact between bodies: through the relative Jacobian, after G's terms
        e += pair_terms(m, pm, s, T, Tk, pw.xi[b, 0], dt, want_g, want_h, exact_h, g, H, pw.pF[b], pw.pK[b],
                        pw.pW[b], pw.pG[b], pw.pr[b])
    if m.eq_type.shape[0] > 0:  # equality constraints: a stiff penalty (pbsim.dynamics.equality)
        e += equality_penalty(m, w, b, q, vk, dt, want_g, want_h, g, H)
    return e


@kernel
def pbad2_prepare(m, s, w, pw, b, q, v, dt):
    """Poses of q_{k-1} = q_k (+) (-dt v_k) and q_k into pw.T[b, 0:2]; initial guess q_k (+) dt v_k,
    shortened where it would carry a point through another body (:func:`pair_guess_limit`)."""
    d = pw.d[b]
    for j in range(m.nv):
        d[j] = -dt * v[b, j]
    integrate_config(m, q[b], d, pw.qn[b, 0], w.Rj[b])
    fk_state(m, w, b, pw.qn[b, 0])
    poses_from_work(m, w, b, pw.T[b, 0])
    fk_state(m, w, b, q[b])
    poses_from_work(m, w, b, pw.T[b, 1])
    for j in range(m.nv):
        d[j] = dt * v[b, j]
    if s.nitem > 0:
        pair_guess_limit(m, s, pw, b, d)
    integrate_config(m, q[b], d, pw.qn[b, 2], w.Rj[b])


@kernel
def pair_guess_limit(m, s, pw, b, d):
    """The initial guess' step ``d = dt v_k`` from q_k (poses in pw.T[b, 1]) shortened so that no
    point meeting another body's shape passes through it (the swept step limit of the body-body
    items, :func:`pbsim.integrators.pbad.pairs.pair_step_limit`): at 50 ms a box falling at 3 m/s
    moves 15 cm, more than a thin box is thick, and a guess past its far side is a local minimum
    of the step's objective on the wrong side."""
    xi = pw.xi[b, 0]
    world_twists(m, pw.T[b, 1], xi)
    alpha = pair_step_limit(m, s, pw.T[b, 1], xi, d, 1e-6)
    if alpha < 1.0:
        for j in range(m.nv):
            d[j] *= alpha


# order 2: Levenberg-Marquardt, the generic loop of pbsim.optim.lm on the problem
# P = (m, s, pm, c, w, pw, q, v, dt, exact_h), iterate pw.qn[b, 2], trial pw.qt[b, 2]

@kernel
def pbad2_lm_eval(P, b):
    """LM hook: E, g, H of Eq. 5 at the iterate and |g|_inf."""
    m, s, pm, c, w, pw, q, v, dt, exact_h = P
    E = pbad2_eval(m, s, pm, c, w, pw, b, pw.qn[b, 2], q[b], v[b], dt, True, True, exact_h, pw.g[b], pw.H[b])
    return E, inf_norm(pw.g[b], m.nv)


@kernel
def pbad2_trial(P, b, tries):
    """LM hook: the trial iterate qi (+) dx and its E; contact points entering the environment
    land just inside (dx shortened in place by the contact step limit)."""
    m, s, pm, c, w, pw, q, v, dt, exact_h = P
    n = m.nv
    qi = pw.qn[b, 2]
    qt = pw.qt[b, 2]
    dx = pw.dx[b]
    if s.npts > 0 or s.nitem > 0:  # land points entering the environment / another body just inside
        if tries > 0:  # a rejected trial left its poses in pw.T[b, 2]; xi is still qi's
            fk_state(m, w, b, qi)
            poses_from_work(m, w, b, pw.T[b, 2])
        alpha = 1.0
        if s.npts > 0:
            alpha = contact_step_limit(m, s, pw.T[b, 2], pw.xi[b, 0], dx, 1e-6)
        if s.nitem > 0:
            alpha = min(alpha, pair_step_limit(m, s, pw.T[b, 2], pw.xi[b, 0], dx, 1e-6))
        if alpha < 1.0:
            for k in range(n):
                dx[k] *= alpha
    integrate_config(m, qi, dx, qt, w.Rj[b])
    return pbad2_eval(m, s, pm, c, w, pw, b, qt, q[b], v[b], dt, False, False, exact_h, pw.g[b], pw.H[b])


@kernel
def pbad2_take(P, b):
    """LM hook: the trial iterate becomes the iterate."""
    m = P[0]
    pw = P[5]
    for k in range(m.nq):
        pw.qn[b, 2, k] = pw.qt[b, 2, k]


LM_RTOL = 1e-15  # a trial is accepted when E does not grow by more than this, relatively
PBAD2_LM = dict(lm_eval=pbad2_lm_eval, lm_try=pbad2_trial, lm_take=pbad2_take)
pbad2_lm_loop = specialize(lm_loop, "pbad2", **PBAD2_LM)
pbad2_lm_launch_begin = specialize(lm_launch_begin, "pbad2", **PBAD2_LM)  # the GPU's per-launch schedule (.step)
pbad2_lm_launch_iterate = specialize(lm_launch_iterate, "pbad2", **PBAD2_LM)


@kernel
def pbad2_lm(m, s, pm, c, w, pw, b, q, v, dt, maxit, gtol, xtol, exact_h, info):
    """Levenberg-Marquardt on Eq. 5 for trajectory b.  info = [iterations, |g|_inf, converged, E]."""
    pbad2_lm_loop((m, s, pm, c, w, pw, q, v, dt, exact_h), (pw.g[b], pw.H[b], pw.M2[b], pw.L[b], pw.dx[b]), b, m.nv,
                  maxit, gtol, xtol, LM_RTOL, 0, info)


@kernel
def lbfgs_h0_apply(m, wf, b, h0, dt, d, tmp):
    """d <- h0 dt^2 M(q_k)^-1 d: PBAD's LBFGS initial inverse Hessian (Eq. 5's Hessian is
    M / dt^2 + O(1)), O(n) through the articulated factor in ``wf``."""
    minv_solve(m, wf, b, d, tmp)
    s = h0 * dt * dt
    for j in range(m.nv):
        d[j] = s * tmp[j]


# order 2: LBFGS, the generic loop of pbsim.optim.lbfgs on the problem
# P = (m, s, pm, c, w, wf, pw, q, v, dt), iterate pw.qn[b, 2] (gradient pw.g), trial pw.qt[b, 2] (pw.gt)

@kernel
def pbad2_lbfgs_eval(P, b):
    """LBFGS hook: E and g of Eq. 5 at the iterate, |g|_inf."""
    m, s, pm, c, w, wf, pw, q, v, dt = P
    E = pbad2_eval(m, s, pm, c, w, pw, b, pw.qn[b, 2], q[b], v[b], dt, True, False, False, pw.g[b], pw.H[b])
    return E, inf_norm(pw.g[b], m.nv)


@kernel
def pbad2_lbfgs_h0(P, b, h0, d):
    """LBFGS hook: d <- h0 dt^2 M(q_k)^-1 d (:func:`lbfgs_h0_apply`)."""
    m, s, pm, c, w, wf, pw, q, v, dt = P
    lbfgs_h0_apply(m, wf, b, h0, dt, d, pw.P[b])


@kernel
def pbad2_lbfgs_try(P, b):
    """LBFGS hook: the trial iterate qi (+) s, its E and gradient (pw.gt)."""
    m, s, pm, c, w, wf, pw, q, v, dt = P
    qt = pw.qt[b, 2]
    integrate_config(m, pw.qn[b, 2], pw.r[b], qt, w.Rj[b])
    return pbad2_eval(m, s, pm, c, w, pw, b, qt, q[b], v[b], dt, True, False, False, pw.gt[b], pw.H[b])


@kernel
def pbad2_lbfgs_take(P, b):
    """LBFGS hook: the trial iterate becomes the iterate; |g|_inf there."""
    m = P[0]
    pw = P[6]
    for k in range(m.nq):
        pw.qn[b, 2, k] = pw.qt[b, 2, k]
    return inf_norm(pw.gt[b], m.nv)


PBAD2_LBFGS = dict(lbfgs_eval=pbad2_lbfgs_eval, lbfgs_h0=pbad2_lbfgs_h0, lbfgs_try=pbad2_lbfgs_try,
                   lbfgs_take=pbad2_lbfgs_take)
pbad2_lbfgs_loop = specialize(lbfgs_loop, "pbad2_lbfgs", **PBAD2_LBFGS)


@kernel
def pbad2_lbfgs(m, s, pm, c, w, wf, pw, b, q, v, dt, maxit, gtol, xtol, info):
    """LBFGS with Armijo backtracking on Eq. 5 (:func:`pbsim.optim.lbfgs.lbfgs_loop`), preconditioned
    by the inertial part of the Hessian: H0 = h0 dt^2 M(q_k)^-1 applied in O(n) (articulated factor
    of M at q_k in ``wf``, a second dynamics workspace: ``w`` is overwritten by every energy
    evaluation); h0 = s.y / y.H0 y from the newest stored pair."""
    P = pw.P[b]
    for j in range(m.nv):
        P[j] = 0.0
    minv_factor(m, wf, b, q[b], P, P)  # zero velocity, no extra diagonal
    pbad2_lbfgs_loop((m, s, pm, c, w, wf, pw, q, v, dt),
                     (pw.g[b], pw.gt[b], pw.dx[b], pw.r[b], pw.rt[b], pw.S[b], pw.Y[b], pw.rho[b], pw.alpha[b]), b,
                     m.nv, maxit, gtol, xtol, LM_RTOL, info)


@kernel
def pbad2_finish(m, w, pw, b, q, dt, qn, vn):
    """(q_{k+1}, v_{k+1} = (q_{k+1} (-) q_k) / dt) from the iterate (Eq. 5's velocity update).

    ``q_{k+1} (-) q_k`` is a tangent vector at q_k; a free joint's linear velocity is stored in
    its body frame, so it is re-expressed in the body frame at q_{k+1} (rotated by exp(-theta),
    theta the step's rotation): without it a body translating while it spins kept a constant
    body-frame velocity and moved on a circle (a box at 1 m/s spinning at 2 rad/s ended 0.23 m
    off its straight line after 0.5 s).  Equality constraints: the iterate is first projected onto
    them (two Newton steps in the mass metric, :func:`pbsim.dynamics.equality.equality_project_mass`)."""
    if m.eq_type.shape[0] > 0:
        equality_project_mass(m, w, b, pw.qn[b, 2], 2)
    for k in range(m.nq):
        qn[b, k] = pw.qn[b, 2, k]
    difference_config(m, q[b], qn[b], vn[b], w.Rj[b])
    for i in range(m.nb):
        if m.jtype[i] == FREE:
            a = m.iv[i]
            rotate_by_exp_transpose(vn[b, a + 3], vn[b, a + 4], vn[b, a + 5], vn[b], a)
    for j in range(m.nv):
        vn[b, j] /= dt


@kernel
def rotate_by_exp_transpose(tx, ty, tz, v, a):
    """``v[a:a+3] <- exp(theta)^T v[a:a+3]`` (Rodrigues, theta = (tx, ty, tz))."""
    th = math.sqrt(tx * tx + ty * ty + tz * tz)
    if th < 1e-12:
        return
    ux, uy, uz = tx / th, ty / th, tz / th
    c, sn = math.cos(th), -math.sin(th)  # rotation by -theta
    x, y, z = v[a], v[a + 1], v[a + 2]
    d = (ux * x + uy * y + uz * z) * (1.0 - c)
    v[a] = x * c + (uy * z - uz * y) * sn + ux * d
    v[a + 1] = y * c + (uz * x - ux * z) * sn + uy * d
    v[a + 2] = z * c + (ux * y - uy * x) * sn + uz * d


@kernel
def pbad2_state(m, s, pm, c, w, wf, pw, b, q, v, dt, maxit, gtol, xtol, method, exact_h, qn, vn, e, info):
    """One PBAD2 step for trajectory b: ``method`` 0 = Levenberg-Marquardt, 1 = LBFGS (``wf``: a
    second dynamics workspace for LBFGS's M^-1 factor)."""
    pbad2_prepare(m, s, w, pw, b, q, v, dt)
    if method == 0:
        pbad2_lm(m, s, pm, c, w, pw, b, q, v, dt, maxit, gtol, xtol, exact_h, info[b])
    else:
        pbad2_lbfgs(m, s, pm, c, w, wf, pw, b, q, v, dt, maxit, gtol, xtol, info[b])
    pbad2_finish(m, w, pw, b, q, dt, qn, vn)
    energy_state(m, w, b, qn[b], vn[b], e[b])


@kernel(parallel=True)
def pbad2_batch(m, s, pm, c, w, wf, pw, q, v, dt, maxit, gtol, xtol, method, exact_h, qn, vn, e, info):
    """One PBAD2 step per trajectory."""
    for i in prange(q.shape[0]):
        b = np.int64(i)
        pbad2_state(m, s, pm, c, w, wf, pw, b, q, v, dt, maxit, gtol, xtol, method, exact_h, qn, vn, e, info)


@kernel(parallel=True)
def pbad2_eval_batch(m, s, pm, c, w, pw, q, v, qeval, dt, want_h, exact_h, E, g, H):
    """Energy, gradient and Hessian of Eq. 5 at ``qeval`` for the step from (q, v) (tests, tools)."""
    for i in prange(q.shape[0]):
        b = np.int64(i)
        pbad2_eval_state(m, s, pm, c, w, pw, b, q, v, qeval, dt, want_h, exact_h, E, g, H)


@kernel
def pbad2_eval_state(m, s, pm, c, w, pw, b, q, v, qeval, dt, want_h, exact_h, E, g, H):
    pbad2_prepare(m, s, w, pw, b, q, v, dt)
    E[b] = pbad2_eval(m, s, pm, c, w, pw, b, qeval[b], q[b], v[b], dt, True, want_h, exact_h, g[b], H[b])


# Drag sample points (Sec. 6.2) and the scene's contact points (Eq. 9, pbsim.contact.energy) are
# compiled only into runs that have some (pbsim.jit.Variants): a chain without contact
# skips their energy, Hessian and step limit.  Likewise each optimizer: a runtime switch alone would compile LBFGS and its M^-1 factor into
# every LM run (+40 % first-run compile).
BODY_CONTACT = {"pair_terms": unused_float, "pair_step_limit": unused_float, "pair_guess_limit": unused}
PBAD2 = Variants(pbad2_batch, {
    "points": {"point_terms": unused_float, "point_hessian": unused},
    "contact": {"contact_terms": unused_float, "contact_hessian": unused, "contact_step_limit": unused_float},
    "body_contact": BODY_CONTACT,
    "equality": PENALTY_FEATURE,
    "lm": ("pbad2_lm",),
    "lbfgs": ("pbad2_lbfgs",),
})
