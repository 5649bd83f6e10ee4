"""PBFD's residual (paper 003 Eq. 13) and its Jacobian, on PBAD's objective kernels.

The unknown is ``q = q_{k+1}``; with ``q_{k-1} = q_k (+) (-dt v_k)`` (as PBAD order 2)

    r(q) = grad E(q) - C_par sum_k J_k^T f_par,k

``E`` = PBAD's order-2 inertia (Eq. 4-5 through Eq. 8's second moments, Algorithms 1-3) +
gravity + the joint-space terms (control, SPD, damping, armature, springs, dry friction, limits:
:mod:`pbsim.integrators.pbad.joints`) + ``C_perp P_perp`` on the scene's contact points, and
``f_par`` the non-integrable friction force (:mod:`pbsim.contact.pbfd`).  Nothing of PBAD is
copied: :func:`pbfd_objective` *is* PBAD's :func:`~pbsim.integrators.pbad.order2.pbad2_eval`,
specialised (:func:`pbsim.jit.specialize`) with PBFD's contact model in place of
Eq. 9's.  Because the contact model writes its per-point vector ``F = dP/dx - C_par f_par`` into
the same ``G_i = dE/dT_i`` accumulator and its ``K = dF/dx`` into the point block, PBAD's adjoint
gradient (Algorithm 1) returns ``r`` and its exact Hessian (Algorithms 2-3 + the points'
``J^T K J``) returns

    J_r = hess E + C_par sum_k [ J^T (-df_par/dx) J - d(J^T)[f_par] ]

the point-Hessian contraction ``d(J^T f)/dd`` at fixed ``f`` coming from Algorithm 2 (the second
derivatives of the poses, contracted with every force in ``G``).  ``J_r`` is not symmetric (the
friction block).  Derivatives are tangent ones, ``q (+) d`` at ``d = 0``; not differentiated:
the environment normal's change (:mod:`pbsim.contact.pbfd`), and for ball/free joints the
off-diagonal joint-space Hessian terms PBAD also drops (:mod:`pbsim.integrators.pbad.joints`).

Solvers (:mod:`.solve`): JTJ-LM on ``GE = |r|^2 / 2`` and LBFGS on GE.

With ``PbfdModel.energy`` the same kernels are the PBD baseline's (``pbd_friction``, paper 003
Eq. 11): the contact model's energy form makes :func:`pbfd_objective` return ``E + C_par P_par``,
``r = grad(E + C_par P_par)`` (the spurious normal force included) and ``J_r`` its Hessian.
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import prange

from pbsim.jit import kernel, specialize
from pbsim.contact.pbfd import pbfd_law, pbfd_point
from pbsim.integrators.pbad.energy import PbadModel, make_pbad_model
from pbsim.integrators.pbad.order2 import pbad2_eval, pbad2_prepare
from pbsim.optim.linalg import dot

# PBAD's model constants (every field of PbadModel, which pbad2_eval reads: second moments, no
# drag points, D1/D2 sized to the scene's points) + PBFD's: C_perp, C_par (< 0: C_par = cf_dt /
# dt^(beta+1), the mu-matched default), alpha, beta, gamma; energy: 1.0 for friction as Eq. 11's
# energy (the PBD baseline, pbsim.integrators.pbd_friction: F is then the true gradient, spurious
# normal force included, and K its Hessian), 0.0 for PBFD's force (Eq. 12-13)
PbfdModel = namedtuple("PbfdModel",
                       PbadModel._fields + ("c_normal", "c_friction", "cf_dt", "alpha", "beta", "gamma", "energy"))


def make_pbfd_model(model, npts: int, c_normal: float, c_friction: float, cf_dt: float, alpha: float,
                    beta: float, gamma: float, energy: bool = False) -> PbfdModel:
    """PBFD's constants for ``model`` and a scene of ``npts`` contact points (``c_friction`` < 0:
    ``C_par = cf_dt / dt^(beta+1)`` at every step, ``dt^beta`` with ``energy``)."""
    pm = make_pbad_model(model, D1=np.zeros(npts), D2=np.zeros(npts))
    return PbfdModel(*pm, float(c_normal), float(c_friction), float(cf_dt), float(alpha), float(beta), float(gamma),
                     1.0 if energy else 0.0)


@kernel
def friction_at(pm, dt):
    """``C_par`` of a step of ``dt``: the given constant, or the mu-matched ``cf_dt / dt^(beta+1)``
    (the energy form's: ``cf_dt / dt^beta``, :func:`pbsim.contact.pbfd.friction_constant`)."""
    if pm.c_friction >= 0.0:
        return pm.c_friction
    return pm.cf_dt / dt ** (pm.beta + 1.0 - pm.energy)


@kernel
def pbfd_contact_terms(m, pm, s, T, Tk, dt, G, F, K):
    """PBFD's contact (:func:`pbsim.contact.pbfd.pbfd_point`) at the scene's contact points, in the
    place of PBAD's Eq. 9 (:func:`pbsim.integrators.pbad.energy.contact_terms`, same signature):
    adds ``F [p;1]^T`` to ``G``, stores per point ``F`` and ``K = dF/dx`` after the drag points',
    returns the normal energy ``C_perp sum d^(alpha+1) / (alpha+1)`` (+ the friction energy
    ``C_par P_par`` of Eq. 11 with ``pm.energy``: then ``F`` and ``K`` are its gradient and Hessian)."""
    e = 0.0
    k0 = pm.npts
    cf = friction_at(pm, dt)
    energy = pm.energy > 0.5
    for k in range(s.npts):
        i = s.pt_body[k]
        pl = s.pt_local[k]
        Fk = F[k0 + k]
        e += pbfd_point(s, k, pm.c_normal, cf, pm.alpha, pm.beta, pm.gamma, energy, T[i], T[i, :, 3], Tk[i],
                        Tk[i, :, 3], Fk, K[k0 + k])
        for r in range(3):
            G[i, r, 0] += Fk[r] * pl[0]
            G[i, r, 1] += Fk[r] * pl[1]
            G[i, r, 2] += Fk[r] * pl[2]
            G[i, r, 3] += Fk[r]
    return e


@kernel
def pbfd_pair_law(pm, s, k, dep, n0, n1, n2, d0, d1, d2, m0, m1, m2, dt, F, K):
    """PBFD's point law (:func:`pbsim.contact.pbfd.pbfd_law`) at body-body point ``k``, in the
    place of PBAD's Eq. 9 between bodies (:func:`pbsim.integrators.pbad.pairs.pair_terms`' hook):
    ``C_par`` scaled by the pair's friction over the scene's (1 unless the file gives the pair its
    own friction, ``make_scene(friction="model")``)."""
    cf = friction_at(pm, dt)
    if s.mu > 0.0:
        cf *= s.pp_mu[k] / s.mu
    return pbfd_law(dep, n0, n1, n2, d0, d1, d2, m0, m1, m2, pm.c_normal, cf, pm.alpha, pm.beta, pm.gamma,
                    pm.energy > 0.5, F, K)


# pbad2_eval(m, s, pm, c, w, pw, b, q, qk, vk, dt, want_g, want_h, exact_h, g, H) with PBFD's
# contact: returns E (inertia + gravity + joint terms + C_perp P_perp); g <- r, H <- J_r
pbfd_objective = specialize(pbad2_eval, "pbfd", contact_terms=pbfd_contact_terms, pair_law=pbfd_pair_law)


@kernel
def pbfd_residual(m, s, pm, c, w, pw, b, q, qk, vk, dt, want_j, r, J):
    """``r`` (and with ``want_j`` its Jacobian ``J``) at ``q`` for the step from (q_k, v_k) (the
    poses of q_{k-1}, q_k in pw.T[b, 0:2], :func:`pbad2_prepare`); returns E."""
    return pbfd_objective(m, s, pm, c, w, pw, b, q, qk, vk, dt, True, want_j, True, r, J)


@kernel
def ge_gradient(J, r, out, n):
    """``out = J^T r``: the gradient of GE = |r|^2 / 2."""
    for j in range(n):
        t = 0.0
        for i in range(n):
            t += J[i, j] * r[i]
        out[j] = t


@kernel
def half_sq(r, n):
    return 0.5 * dot(r, r, n)


# ---------------------------------------------------------------------------------------------
# the damped Gauss-Newton system in the well-conditioned form (note's pitfall 3)

@kernel
def qr_factor(J, R, qtr, r, D, n):
    """Householder QR of ``J`` (n x n): ``R`` upper triangular (zero below), ``qtr = Q^T r``, and the
    Marquardt scaling ``D_j = sqrt(|J e_j|^2 + 1e-9)`` (the ``diag(J^T J)`` of :func:`pbsim.optim.lm.lm_solve`)."""
    for j in range(n):
        s = 0.0
        for i in range(n):
            R[i, j] = J[i, j]
            s += J[i, j] * J[i, j]
        D[j] = math.sqrt(s + 1e-9)
    for i in range(n):
        qtr[i] = r[i]
    for k in range(n):
        s = 0.0
        for i in range(k, n):
            s += R[i, k] * R[i, k]
        if not (s > 0.0):
            continue
        nrm = math.sqrt(s)
        x0 = R[k, k]
        a = -nrm if x0 >= 0.0 else nrm
        vtv = 2.0 * (s - a * x0)  # |x - a e_1|^2
        R[k, k] = x0 - a  # the reflector v in R[k:, k]
        for j in range(k + 1, n):
            t = 0.0
            for i in range(k, n):
                t += R[i, k] * R[i, j]
            f = 2.0 * t / vtv
            for i in range(k, n):
                R[i, j] -= f * R[i, k]
        t = 0.0
        for i in range(k, n):
            t += R[i, k] * qtr[i]
        f = 2.0 * t / vtv
        for i in range(k, n):
            qtr[i] -= f * R[i, k]
        R[k, k] = a
        for i in range(k + 1, n):
            R[i, k] = 0.0


@kernel
def qr_damped_solve(R, V, lam, S, L, dx, n):
    """The LM step ``dx = -(J^T J + lam D^2)^-1 J^T r`` as the least-squares solution of
    ``[J; sqrt(lam) D] dx = [-r; 0]`` from ``J = Q R`` (:func:`qr_factor`): the rows
    ``sqrt(lam) D_j e_j`` are rotated into ``R`` by Givens rotations (MINPACK's qrsolv), so the
    solve never forms ``J^T J`` (whose condition number is cond(J)^2: > 1e12 with stiff contact at
    small dt).  Same signature as :func:`pbsim.optim.lm.lm_solve`, whose place it takes in the
    generic LM loop: ``V`` rows are [Q^T r, D, scratch, scratch]; ``S`` scratch (n, n); ``L``
    unused.  False when the system is singular (the loop raises lambda and retries)."""
    qtr = V[0]
    D = V[1]
    z = V[2]
    wr = V[3]
    sl = math.sqrt(lam)
    for i in range(n):
        for j in range(n):
            S[i, j] = R[i, j] if j >= i else 0.0
        z[i] = qtr[i]
    for j in range(n):
        for c in range(j, n):
            wr[c] = 0.0
        wr[j] = sl * D[j]
        wz = 0.0
        for k in range(j, n):
            bb = wr[k]
            if bb == 0.0:
                continue
            aa = S[k, k]
            rr = math.sqrt(aa * aa + bb * bb)
            cs = aa / rr
            sn = bb / rr
            S[k, k] = rr
            wr[k] = 0.0
            for c in range(k + 1, n):
                t = S[k, c]
                u = wr[c]
                S[k, c] = cs * t + sn * u
                wr[c] = cs * u - sn * t
            t = z[k]
            z[k] = cs * t + sn * wz
            wz = cs * wz - sn * t
    for i in range(n - 1, -1, -1):
        if not (abs(S[i, i]) > 0.0):
            return False
        t = -z[i]
        for c in range(i + 1, n):
            t -= S[i, c] * dx[c]
        dx[i] = t / S[i, i]
        if not math.isfinite(dx[i]):
            return False
    return True


# ---------------------------------------------------------------------------------------------
# tests and tools

@kernel(parallel=True)
def pbfd_eval_batch(m, s, pm, c, w, pw, q, v, qeval, dt, want_j, E, r, J):
    """``E``, ``r`` and (``want_j``) ``J_r`` at ``qeval`` for the step from (q, v) (tests, tools)."""
    for i in prange(q.shape[0]):
        b = np.int64(i)
        pbad2_prepare(m, s, w, pw, b, q, v, dt)
        E[b] = pbfd_residual(m, s, pm, c, w, pw, b, qeval[b], q[b], v[b], dt, want_j, r[b], J[b])
