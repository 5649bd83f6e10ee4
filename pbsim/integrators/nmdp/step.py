"""The ``nmdp`` / ``nmdp_zo`` step kernel: NE-NMDP of paper 002 (Pan & Hauser; notes/pbfd_nmdp.md
B1, B5), first-order (Eq. 6-9) or zeroth-order (Eq. 10-11) projected gradient method (Algorithm 1)
inside the adaptive sub-stepping of Algorithm 2, one whole step of one trajectory per call.

**Discretization** (Eq. 2 with the note's corrected alpha scaling, B5 item 1): the unknown is the
configuration theta at ``t + h``, ``h = alpha dt``, from the carried state ``(theta_-, thetadot_-)``
(the integrator's (q, v): B5 item 3)::

    thetadot  = (theta (-) theta_-) / h        (a free joint's linear part re-expressed in the
                                                body frame at theta, as pbad/pbfd's velocity)
    thetaddot = (thetadot - thetadot_-) / h
    G(theta, w) = RNEA(theta, thetadot, thetaddot) + arm * thetaddot - tau0 - sum_x J_x^T v_x(theta) w_x
    K(theta)    = 1/2 thetadot^T H(theta) thetadot

``tau0``/``arm``: :func:`pbsim.control.solve.joint_forces` at the start of the sub-step with step
``h`` (control, SPD, damping, springs, dry friction, joint limits) in their stable-PD form
``tau = tau0 - arm thetaddot``, with ``h^2 Kp`` added to SPD's ``arm``: then SPD is ``-Kp (theta -
qbar) - Kd (thetadot - vbar)`` at the new state (backward Euler; exact on 1-DOF joints, to first
order on ball/free ones), ``d tau / d theta = -(Kp + Kd / h)`` (times the velocity map ``P``
below).  ``joint_forces`` alone gives Tan et al.'s SPD (``arm = h Kd``, the position term at the
prediction ``theta_- + h thetadot_-``), which is unstable when ``h Kp`` exceeds about ``Kd`` on a
light link (the 1-DOF step map's determinant is ``(I - h^2 Kp) / (I + h Kd)``): measured, the Robosimian's
1.76 kg feet under ``kp = 30 M, kd = 0.3 M`` at dt 10 ms grew 1.6x per step in free flight (the
same in ne_mdp, whose 7 ms divergence threshold this is), 30 rad/s within 0.17 s on the ground,
which made nmdp sub-step in 35-92 % of the steps from 10 ms and threw the robot 2 m at 50 ms.
RNEA includes gravity and armature.  Contact: the wrench of
:mod:`pbsim.contact.nmdp` (vertices ``(k d^3 + zeta)(n + mu t^i)`` at the sphere centre ``c``),
applied at the sphere surface ``a = c - r n`` (ne_mdp's and the penalty model's point).

**The metric of K** (option ``metric``, **[ours]**).  ``"inertia"`` (default) is Eq. 6's K above.
``"step"`` minimises ``K + 1/2 thetadot^T diag(arm) thetadot``, the kinetic energy in the metric of
the implicit step ``H + diag(arm)`` (gradient ``+ P^T arm thetadot / h``, the QP's ``Q`` with
``+ diag(arm) / h^2``).  Why: near a solution ``A ~ (H + diag(arm)) / h^2``, so Eq. 6's stationarity
in ``w`` weighs the contact velocity ``J (H + diag(arm))^-1 H thetadot``; only with the step's metric
is it ``J thetadot``, the maximal dissipation principle at the contacts (Stewart's: the friction
force opposes the contact's sliding velocity).  With SPD implicit in the step, ``"inertia"`` lets a
stance foot give way to its own leg's push by the fraction ``(s - 1) / s``, ``s = 1 + h (Kd + h
Kp) / mu`` (scripts/figures/nmdp_two_mass.py).  Measured on the Robosimian, 10 s at 5-50 ms: the walk's
distance spread across dt drops from 0.275 to 0.054 m, and the jump lifts off at every dt to 25 ms.
But at 50 ms, where the 0.15 s push spans three steps, the jump tilts 3.8 deg (docs/benchmarks/nmdp.md).
The position-based form keeps Eq. 12's K.

**Derivatives** (tangent ``theta (+) delta``; all analytic).  With ``P = d thetadot / d delta h``
(identity on 1-DOF joints; ``Jr^-1(phi)`` on the rotation of ball/free joints, ``phi`` the step's
rotation vector; ``[u]x`` from the linear part's re-expression)::

    A = dRNEA/dq + dRNEA/dqd P / h + (H + diag(arm)) P / h^2
        - sum_x d(J_x^T)/dtheta [f_x]          (f_x fixed: the columns move, the point moves)
        - sum_x J_x^T (dv_x/dtheta) w_x        (first order only; nmdp_zo drops it: Eq. 10)
    B = dG/dw = -[J_x^T v_x^i],   D = A^-1 B (one LU, m back-solves),
    g = dK/dtheta = dK/dq|_qd + P^T H thetadot / h,   Q = H / h^2 (PSD, note B1)

``d(J^T f)/dtheta`` for a world force ``f`` at a point of body ``b``: moving joint k by the world
twist ``xi`` moves every column ``S_j`` of its subtree (j at or below k: ``dS_j = xi x S_j``, the
joint's own bracket for ball/free joints included) and the point ``da = (I - r dn/dx) dc``,
``dc = xi_w x c + xi_v``: ``d tau_j = (xi x S_j) . [a x f; f] + (S_j,w x da) . f``.  Between bodies
the rows are the relative Jacobian's and A's contact part :func:`pbsim.integrators.pgm.contact.pgm_pair_jacobian`
(both bodies' chains, the normal turning with B and with the point's motion relative to B).

The QP (Eq. 8/10, ``Q = H / h^2``: ``x.M = H``), the manifold projection (Eq. 9/11), Algorithm 1
and Algorithm 2 are the shared PGM of :mod:`pbsim.integrators.pgm` (also the position-based
form's, ``pbd_nmdp``): this module supplies the form's hooks ``pgm_prepare`` = :func:`nmdp_prepare`
and ``pgm_eval`` = :func:`nmdp_eval`, bound by :func:`pbsim.jit.specialize` into
:data:`nmdp_step`, the contract's step kernel.

The contact set is fixed for the whole step (B5 item 8): points with signed depth above
``-margin`` at ``theta_-`` or at ``theta_- (+) dt thetadot_-``.

``info`` = [outer iterations (all sub-steps), largest final |G|_inf, converged (every sub-step
stopped by xtol, no cap), min alpha]; ``stats`` = [sub-steps, projection failures, QP solves that
did not reach their tolerance, cap hit, sub-steps at the iteration cap, rejections, Newton
iterations, largest final |G|_inf, largest |G|_inf of an accepted iterate (the initial projection
included), accepted iterates whose K rose (0 by construction: a check), K after the initial
projection and K at the end, both of the last sub-step (Theorem 5.5's invariants, B-T2), then the
work: evaluations of G (with A, B), LU factorizations, QPs, QP iterations (all sub-steps)].
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from pbsim.jit import kernel, specialize
from pbsim.control.solve import joint_forces, spd_at_new_state
from pbsim.contact.query import point_force_jt
from pbsim.dynamics.crba import crba_state
from pbsim.dynamics.gravcomp import gravcomp_forces, gravcomp_point_force, has_gravcomp
from pbsim.dynamics.energy import kinetic_energy_gradient_state
from pbsim.dynamics.kinematics import fk_state
from pbsim.dynamics.equality import equality_penalty
from pbsim.dynamics.rnea import rnea_state
from pbsim.dynamics.rnea_derivatives import make_rnea_derivatives_work, rnea_derivatives_state
from pbsim.integrators.pgm.contact import pgm_candidates, pgm_chain_columns, pgm_contact, pgm_contact_jacobian
from pbsim.integrators.pgm.problem import PGM_FIELDS, PGM_OPTIONS, pgm_arrays, pgm_options, pgm_velocity
from pbsim.integrators.pgm.step import pgm_step

# The form's scratch: the shared PGM fields (pbsim.integrators.pgm), then rw RneaDerivWork; tau0,
# arm, mv (n); dRq, dRv (n, n); metric (the option: METRIC_INERTIA or METRIC_STEP); then the PGM's
# options.  x.M is H (the QP's Q = H / h^2; with METRIC_STEP H + diag(arm)).
METRIC_INERTIA, METRIC_STEP = 0, 1
NmdpX = namedtuple("NmdpX", PGM_FIELDS + ("rw", "tau0", "arm", "mv", "dRq", "dRv", "metric") + PGM_OPTIONS)
BATCHED = PGM_FIELDS + ("rw", "tau0", "arm", "mv", "dRq", "dRv")


def make_nmdp_extra(
    model, npts, B, F, k, zeta, mu, vx, margin, maxit, tol, xtol, eta, depth, zo, init, maxstep, gamma0=1.0,
    metric=METRIC_INERTIA, npair=0, maxpen=0.0,
) -> NmdpX:
    """Scratch for ``B`` trajectories of ``model`` with ``npts`` scene contact points and room for
    ``npair`` body-body candidates."""
    n = max(model.nv, 1)
    Bb = max(int(B), 1)
    z = np.zeros
    return NmdpX(
        **pgm_arrays(model, npts, B, vx, npair), rw=make_rnea_derivatives_work(model, Bb), tau0=z((Bb, n)),
        arm=z((Bb, n)), mv=z((Bb, n)), dRq=z((Bb, n, n)), dRv=z((Bb, n, n)), metric=int(metric),
        **pgm_options(F, k, zeta, mu, vx, margin, maxit, tol, xtol, eta, depth, zo, init, maxstep, gamma0, npair,
                      maxpen),
    )  # fmt: skip


@kernel
def nmdp_prepare(m, s, c, w, sw, x, b, q0, v0, h, dt):
    """The sub-step's constants: ``tau0``, ``arm`` (joint forces at the start, step h) and the
    contact set (returns its size; ``dt`` unused: the NE form needs only h)."""
    joint_forces(m, c, w, sw, b, q0, v0, h, True, False)
    # SPD's position term at the new state: tau0 holds -Kp (q0 + h v0 - qbar), so backward
    # Euler's -Kp (theta - qbar) adds -Kp h^2 thetaddot (Tan's SPD arm, h Kd, omits it)
    spd_at_new_state(m, c, sw, b, h)
    for j in range(m.nv):
        x.tau0[b, j] = sw.tau[b, j]
        x.arm[b, j] = sw.arm[b, j]
    gravcomp_forces(m, w, b, q0, -1.0, x.tau0[b])  # NMDP holds it at theta with gravity (nmdp_gravcomp)
    if s.npts == 0 and s.nitem == 0:
        return 0
    return pgm_candidates(m, s, w, x, b, q0, v0, h)


@kernel
def nmdp_eval(m, s, c, w, x, b, q0, v0, th, h, wts, nc, deriv, first):
    """``x.G = G(th, wts)`` for the sub-step of h from (q0, v0) (constants from
    :func:`nmdp_prepare`; ``c`` unused: the control is in ``tau0``, ``arm``); with ``deriv`` also ``x.A`` (first order with ``first``, else
    zeroth), the rows ``x.Bm`` of B^T, ``x.M`` = H(th) and ``x.g`` = dK/dtheta.  Returns K(th)."""
    nv = m.nv
    pgm_velocity(m, w, x, b, q0, v0, th, h)
    vel = x.vel[b]
    acc = x.acc[b]
    G = x.G[b]
    rnea_state(m, w, b, th, vel, acc, G)
    for j in range(nv):
        G[j] += x.arm[b, j] * acc[j] - x.tau0[b, j]
    M = x.M[b]
    crba_state(m, w, b, th, M)
    K = 0.0
    for r in range(nv):
        sr = 0.0
        for c in range(nv):
            sr += M[r, c] * vel[c]
        K += 0.5 * vel[r] * sr
    if x.metric == METRIC_STEP:  # the step's metric: K + 1/2 thetadot^T diag(arm) thetadot (module docstring)
        for r in range(nv):
            K += 0.5 * x.arm[b, r] * vel[r] * vel[r]
    A = x.A[b]
    P = x.Pm[b]
    if deriv:
        dRq = x.dRq[b]
        dRv = x.dRv[b]
        rnea_derivatives_state(m, x.rw, b, th, vel, acc, dRq, dRv)
        ih = 1.0 / h
        ih2 = ih * ih
        # P is zero outside the joints' diagonal blocks (pgm_velocity): kk runs over column c's
        # joint only (the terms skipped are the zeros the full sum skipped, in the same order)
        for i in range(m.nb):
            c0 = m.iv[i]
            c1 = c0 + m.nvj[i]
            for r in range(nv):
                for c in range(c0, c1):
                    acc2 = dRq[r, c]
                    for kk in range(c0, c1):
                        pk = P[kk, c]
                        if pk != 0.0:
                            mk = M[r, kk] + (x.arm[b, r] if r == kk else 0.0)
                            acc2 += (dRv[r, kk] * ih + mk * ih2) * pk
                    A[r, c] = acc2
        kinetic_energy_gradient_state(m, w, b, th, vel, x.gk[b], x.mv[b])
        if x.metric == METRIC_STEP:
            for kk in range(nv):
                x.mv[b, kk] += x.arm[b, kk] * vel[kk]
        for c in range(nv):
            sg = x.gk[b, c]
            for kk in range(nv):
                sg += P[kk, c] * x.mv[b, kk] * ih
            x.g[b, c] = sg
        if x.metric == METRIC_STEP:  # the QP's Q = (H + diag(arm)) / h^2
            for r in range(nv):
                M[r, r] += x.arm[b, r]
    nmdp_gravcomp(m, w, x, b, th, deriv)
    if m.eq_type.shape[0] > 0:  # equality constraints: PBAD's stiff penalty, its force kc J^T phi in G
        equality_penalty(m, w, b, th, v0, h, True, deriv, G, A)
    if nc == 0:
        return K
    fk_state(m, w, b, th)
    pgm_contact(m, s, w, x, b, wts, nc, deriv, first)
    return K


@kernel
def nmdp_gravcomp(m, w, x, b, th, deriv):
    """The bodies' gravity compensation at theta, where NMDP's RNEA takes gravity (so a body held
    up entirely moves as without gravity): ``x.G -= J^T f`` for the force ``f = -m_gc g`` at its
    point (:mod:`pbsim.dynamics.gravcomp`) and, with ``deriv``, ``x.A -= d(J^T f)/dtheta`` (the
    contact forces' term with a point fixed on its body)."""
    if not has_gravcomp(m):
        return
    fk_state(m, w, b, th)
    for i in range(m.nb):
        if m.gravcomp[i, 0] == 0.0:
            continue
        px, py, pz, fx, fy, fz = gravcomp_point_force(m, w, b, i)
        point_force_jt(m, w, b, i, px, py, pz, -fx, -fy, -fz, x.G[b])
        if deriv:
            nn = pgm_chain_columns(m, w, x, b, i)
            pgm_contact_jacobian(m, w, x, b, nn, px, py, pz, px, py, pz, 0.0, fx, fy, fz, False, False, x.A[b])


# Algorithm 2 around Algorithm 1 on the NE form: the shared PGM with this form's hooks
nmdp_step = specialize(pgm_step, "nmdp", pgm_prepare=nmdp_prepare, pgm_eval=nmdp_eval)
