"""Kernels of the variational integrator (paper 004): the DEL step by DRNEA, solved by RIQN,
Newton or Broyden; the method is described in :mod:`pbsim.integrators.variational`."""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import prange

from pbsim.jit import Variants, kernel, unused, unused_float
from pbsim.control.control import SPD
from pbsim.control.pd import control_torques
from pbsim.dynamics.aba import aba_state
from pbsim.dynamics.drnea import drnea_eval, drnea_jacobian, drnea_momentum, drnea_setup_poses
from pbsim.dynamics.energy import energy_state
from pbsim.dynamics.equality import (eq_factor_rows, eq_has_bodies, eq_solve, equality_project_velocity,
                                     equality_rows)
from pbsim.dynamics.kinematics import fk_state, pose_pass
from pbsim.dynamics.joints import difference_config, integrate_config
from pbsim.dynamics.minv import minv_factor, minv_solve
from pbsim.dynamics.passive import passive_linear
from pbsim.control.site_actuators import site_forces
from pbsim.dynamics.tendon import tendon_forces
from pbsim.dynamics.rnea import rnea_state
from pbsim.optim.linalg import lu_solve_inplace
from pbsim.optim.linalg import lu_solve_inplace as lu_solve_rows  # kept in the RIQN build (VI_FEATURES dense)

RIQN, NEWTON, BROYDEN = 0, 1, 2
METHODS = {"riqn": RIQN, "newton": NEWTON, "broyden": BROYDEN}

# Jk, Si, imp: the equality rows' Jacobian at q_k, the matrix J(q_i) A^-1 J(q_k)^T and the impulse
# J(q_k)^T lambda (vi_eq_*; sized by the rows, empty without them)
VWork = namedtuple("VWork", "qi d dprev f fold x lin Qc zero tau arm dq p vt Jac H hy qs hq st Jk Si imp")


def make_vwork(model, batch: int, dense: bool) -> VWork:
    B, nq, nv = max(batch, 1), model.nq, model.nv
    z = np.zeros
    nd = nv if dense else 1
    ke = int(getattr(model, "neq_rows", 0))
    return VWork(z((B, nq)), z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)),
                 z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)),
                 z((B, nd, nd)), z((B, nd, nd)), z((B, 2, nd)), z((B, nq)), z((B, nv)), z((B, 3)),
                 z((B, ke, nv)), z((B, ke, ke)), z((B, nv if ke else 0)))


@kernel
def gj_inverse(A, Ainv, n):
    """``Ainv = A^-1`` by Gauss-Jordan with partial pivoting (A is destroyed)."""
    for r in range(n):
        for c in range(n):
            Ainv[r, c] = 1.0 if r == c else 0.0
    for k in range(n):
        piv = k
        best = abs(A[k, k])
        for r in range(k + 1, n):
            if abs(A[r, k]) > best:
                best = abs(A[r, k])
                piv = r
        if piv != k:
            for c in range(n):
                t = A[k, c]
                A[k, c] = A[piv, c]
                A[piv, c] = t
                t = Ainv[k, c]
                Ainv[k, c] = Ainv[piv, c]
                Ainv[piv, c] = t
        d = A[k, k]
        for c in range(n):
            A[k, c] /= d
            Ainv[k, c] /= d
        for r in range(n):
            if r != k:
                fct = A[r, k]
                if fct != 0.0:
                    for c in range(n):
                        A[r, c] -= fct * A[k, c]
                        Ainv[r, c] -= fct * Ainv[k, c]


# Equality constraints (pbsim.dynamics.equality) as in RATTLE: the DEL in position-momentum form
# gets the impulse J(q_k)^T lambda and the rows phi(q_k+1) = 0; the returned momentum is projected
# onto J(q_k+1) M^-1 p = 0.  RIQN's A = M(q_k) + dt diag(lin) borders its update with the rows as
# SHAKE does: Y = A^-1 J(q_k)^T once per step, and per iteration the rows at the iterate q_i with
# the K x K matrix J(q_i) Y (J(q_k) in its place stalls once a link turns ~0.3 rad a step).

@kernel
def vi_eq_begin(m, w, vw, b, q, v):
    """The rows at q_k (kept in ``vw.Jk``), ``w.eY = A^-1 J^T`` with the RIQN factor in ``w``, the
    factor of ``J A^-1 J^T`` (its dropped rows: ``w.ed``); the impulse ``vw.imp`` = 0."""
    eq_factor_rows(m, w, b, q, v)
    for a in range(w.eJ.shape[1]):
        for j in range(m.nv):
            vw.Jk[b, a, j] = w.eJ[b, a, j]
    for j in range(m.nv):
        vw.imp[b, j] = 0.0


@kernel
def vi_eq_residual(m, vw, b, f):
    """``f -= J(q_k)^T lambda`` (the constraint impulse so far); returns ``|f|_inf``."""
    r = 0.0
    for j in range(m.nv):
        f[j] -= vw.imp[b, j]
        if abs(f[j]) > r:
            r = abs(f[j])
    return r


@kernel
def vi_eq_impulse(m, vw, b, dl, p):
    """``p += J(q_k)^T dl``."""
    for a in range(vw.Jk.shape[1]):
        for j in range(m.nv):
            p[j] += vw.Jk[b, a, j] * dl[a]


@kernel
def vi_eq_update(m, w, vw, b, q, qi, v, dt, x):
    """RIQN's update ``x = dt A^-1 f`` (then ``qi (+) -x``) bordered by the rows: ``x -= dt Y dl``
    with ``(J_i Y) dl = (J_i x - phi(qi)) / dt`` (so that ``J_i (-x) = -phi(qi)``), the impulse
    ``+= J(q_k)^T dl``; rows dropped at q_k keep multiplier 0.  ``w``'s parent-relative poses are
    put back at q_k for the factor's next solve."""
    K = w.eJ.shape[1]
    bodies = eq_has_bodies(m)
    if bodies:
        fk_state(m, w, b, qi)
    equality_rows(m, w, b, qi, v, False, True)  # phi(qi), J(qi)
    if bodies:
        pose_pass(m, w, b, q)
    J = w.eJ[b]
    Y = w.eY[b]
    S = vw.Si[b]
    dl = w.el[b]
    for a in range(K):
        s = -w.er[b, a]
        for j in range(m.nv):
            s += J[a, j] * x[j]
        dl[a] = s / dt
        for c in range(K):
            s = 0.0
            for j in range(m.nv):
                s += J[a, j] * Y[j, c]
            S[a, c] = s
    for a in range(K):
        if w.ed[b, a] != 0.0:  # dependent at q_k: no multiplier
            for c in range(K):
                S[a, c] = 0.0
                S[c, a] = 0.0
            S[a, a] = 1.0
            dl[a] = 0.0
    if not lu_solve_rows(S, dl, K):  # singular at q_i: the symmetric system at q_k
        eq_solve(w.eK[b], w.ed[b], dl, K)
    vi_eq_impulse(m, vw, b, dl, vw.imp[b])
    for a in range(K):
        for j in range(m.nv):
            x[j] -= dt * Y[j, a] * dl[a]


@kernel
def vi_eq_finish(m, w, b, qn, v, p):
    """``v`` onto ``J(q_k+1) v = 0`` in the metric M(q_k+1) (its factor in ``w``) and ``p`` by the
    same impulse (RATTLE's velocity multiplier), so that the next step's momentum is ``M v``."""
    K = w.eJ.shape[1]
    eq_factor_rows(m, w, b, qn, v)
    equality_project_velocity(m, w, b, v)  # v += M^-1 J^T lam, lam in w.el
    J = w.eJ[b]
    lam = w.el[b]
    for j in range(m.nv):
        s = 0.0
        for a in range(K):
            s += J[a, j] * lam[a]
        p[j] += s


@kernel
def vi_residual(m, dw, vw, b, q, qi, dt, f):
    """Full residual f(qi): DRNEA body part + armature + damping/SPD (linear in d_k) - constant impulses."""
    drnea_eval(m, dw, b, qi, dt, f)
    d = vw.d[b]
    difference_config(m, q, qi, d, dw.Rj[b])
    r = 0.0
    for j in range(m.nv):
        f[j] += (m.armature[j] / dt + vw.lin[b, j]) * d[j] - vw.Qc[b, j]
        if abs(f[j]) > r:
            r = abs(f[j])
    return r


@kernel
def vi_state(m, m0, c, w, dw, vw, b, q, v, dt, method, ig, tol, maxit, qn, vn, stats, reuse):
    """One step from (q_k, v_k) -> (q_k+1, v_k+1) in position-momentum form (see module doc).

    ``reuse``: the previous call on this b ended at this (q, v) (multi-step rollout): its momentum
    ``vw.p`` is p_k and its zero-armature factor of M(q_k) in ``w`` is still valid."""
    nv = m.nv
    lin = vw.lin[b]
    Qc = vw.Qc[b]
    hq = vw.hq[b]
    zero = vw.zero[b]
    tau = vw.tau[b]
    arm = vw.arm[b]
    qi = vw.qi[b]
    for j in range(nv):
        zero[j] = 0.0
    # non-conservative joint impulse over the step, Q(d_k) = dt tau - lin d_k (constant part + part
    # linear in d_k), split half/half: F^-_k = F^+_k = Q(d_k) / 2 (Marsden-West discrete forcing)
    control_torques(m, c, b, q, v, dt, vw.dq[b], vw.qs[b], w.Rj[b], tau, arm)
    spd = c.mode == SPD
    bp = b if c.kp.shape[0] > 1 else 0
    bd = b if c.kd.shape[0] > 1 else 0
    for j in range(nv):
        lin[j] = m.damping[j]
        if spd:
            kp = c.kp[bp, j]
            kd = c.kd[bd, j]
            hq[j] = 0.5 * dt * (tau[j] + (kp * dt + kd) * v[j])
            lin[j] += dt * kp + kd
        else:
            hq[j] = 0.5 * dt * tau[j]
    # springs, dry friction, limits: torque t0 + t1 d, impulse dt t0 + dt t1 d (zero: scratch)
    for j in range(nv):
        zero[j] = 0.0
        vw.dq[b, j] = 0.0
    passive_linear(m, q, v, dt, zero, vw.dq[b])
    tendon_forces(m, c, w, b, q, v, dt, False, False, zero, arm)  # tendons: explicit, at (q_k, v_k)
    site_forces(m, c, w, b, q, zero)  # site-transmission actuators: explicit
    for j in range(nv):
        hq[j] += 0.5 * dt * zero[j]
        lin[j] -= dt * vw.dq[b, j]
        lin[j] *= 0.5
        zero[j] = 0.0
    implicit = False
    for j in range(nv):
        if lin[j] != 0.0:
            implicit = True
    # p_k = M(q_k) v_k = D2 Ld(q_k-1, q_k) + F^+_k-1 (forced discrete Legendre transform)
    if not reuse:
        rnea_state(m0, w, b, q, zero, v, vw.p[b])
    have_factor = reuse  # w holds the articulated factor of M(q_k) (no extra diagonal)
    for j in range(nv):
        Qc[j] = vw.p[b, j] + hq[j]
        vw.dprev[b, j] = dt * v[j]
    # initial guess (Sec. 3.3)
    if ig == 3:  # tau still holds the control torques
        for j in range(nv):
            tau[j] -= m.damping[j] * v[j]
        if have_factor:  # a_k = M^-1 (tau - C v - g): RNEA bias + O(n) solve with the stored factor
            rnea_state(m, w, b, q, v, zero, vw.vt[b])
            for j in range(nv):
                tau[j] -= vw.vt[b, j]
            minv_solve(m, w, b, tau, vw.x[b])
        else:
            aba_state(m, w, b, q, v, tau, zero, vw.x[b])
            have_factor = True  # ABA's U, D^-1 at q_k with zero extra diagonal = minv_factor(q_k, 0)
        for j in range(nv):
            vw.vt[b, j] = dt * (v[j] + dt * vw.x[b, j])
        integrate_config(m, q, vw.vt[b], qi, w.Rj[b])
    elif ig == 2:
        integrate_config(m, q, vw.dprev[b], qi, w.Rj[b])
    else:
        for j in range(m.nq):
            qi[j] = q[j]
    # per-step constants
    if method == RIQN and (implicit or not have_factor):
        for j in range(nv):
            arm[j] = dt * lin[j]
        minv_factor(m, w, b, q, zero, arm)
    eq = w.eJ.shape[1] > 0
    if eq:
        vi_eq_begin(m, w, vw, b, q, v)
    drnea_setup_poses(m, dw, b, w.R[b], w.p[b], dt, 0.5)  # every path above left the poses at q_k in w
    f = vw.f[b]
    x = vw.x[b]
    it = 0
    conv = False
    res = 0.0
    while True:
        res = vi_residual(m, dw, vw, b, q, qi, dt, f)
        if eq:
            res = vi_eq_residual(m, vw, b, f)
        if it >= maxit:
            break
        if method == RIQN:
            minv_solve(m, w, b, f, x)  # Eq. 25
            for j in range(nv):
                x[j] *= dt
            if eq:
                vi_eq_update(m, w, vw, b, q, qi, v, dt, x)
        elif method == NEWTON or it == 0:
            Jac = vw.Jac[b]
            drnea_jacobian(m, dw, b, dt, Jac)
            for j in range(nv):
                Jac[j, j] += m.armature[j] / dt + lin[j]
            if method == NEWTON:
                for j in range(nv):
                    x[j] = f[j]
                lu_solve_inplace(Jac, x, nv)
            else:
                gj_inverse(Jac, vw.H[b], nv)
        else:  # Broyden ("good") update of H ~ J^-1: s = -x_old, y = f - f_old
            H = vw.H[b]
            hy = vw.hy[b, 0]
            sh = vw.hy[b, 1]
            den = 0.0
            for r in range(nv):
                s = 0.0
                for cc in range(nv):
                    s += H[r, cc] * (f[cc] - vw.fold[b, cc])
                hy[r] = s
                den -= x[r] * s
            for cc in range(nv):
                s = 0.0
                for r in range(nv):
                    s -= x[r] * H[r, cc]
                sh[cc] = s
            if den != 0.0:
                for r in range(nv):
                    a = (-x[r] - hy[r]) / den
                    for cc in range(nv):
                        H[r, cc] += a * sh[cc]
        if method == BROYDEN:
            H = vw.H[b]
            for r in range(nv):
                s = 0.0
                for cc in range(nv):
                    s += H[r, cc] * f[cc]
                vw.vt[b, r] = s
            for r in range(nv):
                x[r] = vw.vt[b, r]
                vw.fold[b, r] = f[r]
        step = 0.0
        for j in range(nv):
            if abs(x[j]) > step:
                step = abs(x[j])
            vw.vt[b, j] = -x[j]
        integrate_config(m, qi, vw.vt[b], qi, w.Rj[b])
        it += 1
        if step <= tol:
            conv = True
            break
        if not (step < 1e6):  # diverged / NaN
            break
    for j in range(m.nq):
        qn[j] = qi[j]
    # forced discrete Legendre transform: v_k+1 = M(q_k+1)^-1 (D2 Ld(q_k, q_k+1) + F^+_k), from the
    # last residual evaluation at q_l (DRNEA's mu2, d = q_l (-) q_k) and, when the loop took the
    # update q_l+1 = q_l (+) (-x) (|x| <= tol), its first-order change: d p / d q_k+1 ~ (M + A)/dt - lin
    # and ((M + A)/dt + lin) x ~ f_l give p(q_l+1) = p(q_l) - f_l + 2 lin x (error O(M tol))
    drnea_momentum(m, dw, b, dt, vw.p[b])
    for j in range(nv):  # + F^+_k
        vw.p[b, j] += m.armature[j] / dt * vw.d[b, j] + hq[j] - lin[j] * vw.d[b, j]
    if conv:  # (a loop stopped by max_iter ended on a residual evaluation at qi itself)
        for j in range(nv):
            vw.p[b, j] += -f[j] + 2.0 * lin[j] * x[j]
        if eq:  # f is f - J^T lambda_old: the last update's impulse J^T dl (in w.el) too
            vi_eq_impulse(m, vw, b, w.el[b], vw.p[b])
    minv_factor(m, w, b, qi, zero, zero)
    minv_solve(m, w, b, vw.p[b], vn)
    if eq:
        vi_eq_finish(m, w, b, qi, vn, vw.p[b])
    stats[0] = it
    stats[1] = res
    stats[2] = 1.0 if conv else 0.0


@kernel(parallel=True)
def vi_batch(m, m0, c, w, dw, vw, q, v, dt, method, ig, tol, maxit, qn, vn, e, stats):
    for i in prange(q.shape[0]):
        b = np.int64(i)
        vi_state(m, m0, c, w, dw, vw, b, q[b], v[b], dt, method, ig, tol, maxit, qn[b], vn[b], stats[b], False)
        energy_state(m, w, b, qn[b], vn[b], e[b])


@kernel(parallel=True)
def vi_rollout(m, m0, c, w, dw, vw, q, v, qn, vn, dt, method, ig, tol, maxit, nsteps, every,
               qo, vo, eo, its, stats):
    """``nsteps`` steps per state inside one call; every ``every``-th state goes to qo/vo/eo[b, f].
    ``q``/``v`` (B, nq/nv) hold the initial state and receive the final one; ``qn``/``vn`` scratch.
    ``its[b, k]`` iterations of step k; ``stats[b]`` = (steps not converged, first one, max residual)."""
    for i in prange(q.shape[0]):
        b = np.int64(i)
        stats[b, 0] = 0.0
        stats[b, 1] = -1.0
        stats[b, 2] = 0.0
        for k in range(nsteps):
            vi_state(m, m0, c, w, dw, vw, b, q[b], v[b], dt, method, ig, tol, maxit, qn[b], vn[b], vw.st[b], k > 0)
            its[b, k] = vw.st[b, 0]
            if vw.st[b, 1] > stats[b, 2] or not (vw.st[b, 1] == vw.st[b, 1]):
                stats[b, 2] = vw.st[b, 1]
            if vw.st[b, 2] < 0.5:
                if stats[b, 1] < 0.0:
                    stats[b, 1] = k
                stats[b, 0] += 1.0
            for j in range(m.nq):
                q[b, j] = qn[b, j]
            for j in range(m.nv):
                v[b, j] = vn[b, j]
            if (k + 1) % every == 0:
                fr = (k + 1) // every - 1
                for j in range(m.nq):
                    qo[b, fr, j] = q[b, j]
                for j in range(m.nv):
                    vo[b, fr, j] = v[b, j]
                energy_state(m, w, b, q[b], v[b], eo[b, fr])



# Newton's and Broyden's dense Jacobian and solves are compiled only into runs that use them
# (pbsim.jit.Variants): RIQN, the default, needs neither.
# Likewise the equality rows (vi_eq_*), compiled only into runs of models that have them: carried
# unused, they made the RIQN step on two free 6-link chains 10 % slower (129.8 -> 142.3 us at 5 ms,
# 127.2 with this feature; pbsim.jit.HEAVY_FEATURES).
VI_FEATURES = {
    "dense": ("drnea_jacobian", "lu_solve_inplace", "gj_inverse"),
    "equality": {"vi_eq_begin": unused, "vi_eq_residual": unused_float, "vi_eq_update": unused,
                 "vi_eq_finish": unused, "vi_eq_impulse": unused},
}
VI_BATCH = Variants(vi_batch, VI_FEATURES)
VI_ROLLOUT = Variants(vi_rollout, VI_FEATURES)
