"""The ``pbd_nmdp`` / ``pbd_nmdp_zo`` step kernel: PBD-NMDP of paper 002 (Pan & Hauser, Eq. 12;
notes/pbfd_nmdp.md B1, B5), the position-based form of NMDP on PBAD's energy terms (paper 000),
solved by the PGM shared with the Newton-Euler form (:mod:`pbsim.integrators.pgm`: QP, manifold
projection, Algorithms 1 and 2).  This module supplies the form's two hooks.

**Discretization** (Eq. 12 with the note's corrected alpha scaling, B5 item 1: ``h = alpha dt``
throughout): from the carried state ``(theta_-, thetadot_-)`` (B5 item 3) the configuration one
frame step back is ``theta_-- = theta_- (+) (-dt thetadot_-)`` (PBAD order 2's ``q_{k-1}``), the
unknown theta is at ``t + h``, ``alpha = h / dt`` (1 unless Algorithm 2 split the step)::

    I_alpha(theta) = int rho |X(theta) - (1 + alpha) X(theta_-) + alpha X(theta_--)|^2 / (2 alpha^2 dt^2)
    P_g(theta)     = - int rho g . X(theta)                     (gravity; [ours], missing from Eq. 12)
    E_j(theta)     = PBAD's joint-space terms at step h (:mod:`pbsim.integrators.pbad.joints`:
                     control, stable PD at the new state, damping, armature, springs, dry friction,
                     limits: "consistent with backward Euler")
    G(theta, w)    = grad (I_alpha + P_g + E_j)(theta) - sum_x J_x^T v_x(theta) w_x
    K(theta)       = int rho |X(theta) - X(theta_-)|^2 / (2 h^2)

(K with ``h^2`` rather than Eq. 12's ``dt^2``: a constant factor, the minimiser is the same.)  At
``alpha = 1`` ``I_alpha + P_g + E_j`` is PBAD order 2's step objective (paper 000 Eq. 5) without
its penalty contact, so without contact a step is PBAD's (the stationary point of the same
energy).  The contact wrench is NMDP's (:mod:`pbsim.contact.nmdp`) through the shared
:func:`~pbsim.integrators.pgm.contact.pgm_contact`, exactly as in ``nmdp``.

**Derivatives** (tangent ``theta (+) delta``, ``integrate_config``'s right increments; all
analytic, through PBAD's world-pose machinery, :mod:`pbsim.integrators.pbad.energy`)::

    grad I_alpha + grad P_g:  G_i = A_i M~_i / h^2 - m_i g [c_i; 1]^T,  A_i = T_i - (1 + alpha) T_i,- + alpha T_i,--,
                              g_a = <hat(xi_a), W_body(a)>  (Algorithm 1)
    A = H_E + N(g_E) - sum_x d(J_x^T v_x w_x)/dtheta
        H_E: the exact Hessian of I_alpha + P_g (Algorithm 2: <hat xi_a hat xi_b, W>; Algorithm 3:
             M_rigid(theta) / h^2) plus the joint terms' (exact on 1-DOF joints, their leading
             diagonal on ball/free joints, as in PBAD)
        N(g_E): A is the derivative of the *tangent* gradient g_E(theta (+) delta), not the
             symmetric Hessian of E(theta (+) d): within a ball joint (theta (+) delta) (+) d =
             theta (+) (delta + d + 1/2 delta x d + ...) adds 1/2 [g_rot]x, within a free joint
             also p + R (delta_lin + exp(delta_rot) d_lin) adds [g_lin]x in the (lin, rot) block
        the contact part and its zeroth-order variant (Eq. 10: dv_x/dtheta dropped): pgm_contact
    g = grad K: the same with A_i = T_i - T_i,- (no gravity),
    Q = M_rigid(theta) / h^2  (``k_hessian="gn"``, default: K's Gauss-Newton Hessian, PSD, so the
        QP's D^T Q D + prox I is convex, like nmdp's H / h^2)
      or M_rigid / h^2 + <hat xi_a hat xi_b, W_K> (``"exact"``: K's exact symmetric Hessian; its
        second-order part is small while bodies turn by well under 90 degrees per step)

``x.M = h^2 Q`` is what the shared QP reads.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from pbsim.jit import kernel, specialize
from pbsim.dynamics.joints import BALL, FREE, integrate_config
from pbsim.dynamics.equality import equality_penalty
from pbsim.dynamics.kinematics import fk_state
from pbsim.integrators.pbad.energy import (
    adjoint_gradient,
    composite_moments,
    gn_block,
    hessian_second_order,
    inertial_gravity_terms,
    poses_from_work,
    world_twists,
)
from pbsim.integrators.pbad.joints import joint_energy, joint_gradient, joint_hessian
from pbsim.integrators.pgm.contact import pgm_candidates, pgm_contact
from pbsim.integrators.pgm.problem import PGM_FIELDS, PGM_OPTIONS, pgm_arrays
from pbsim.integrators.pgm.step import pgm_step

# The form's scratch: the shared PGM fields, then (leading axis B) T, Tm1, Tm2 (nb, 3, 4) the poses
# of theta, theta_-, theta_--; Ab, Gb, Wb (nb, 3, 4) the pose combination, dE/dT_i and the subtree
# sums (PBAD's A, G, W); Cm (nb, 4, 4) composite moments; xi (nv, 6) world twists; qm2 (nq)
# theta_--; jd, jh, jv2, jv3 (nv) the joint terms' scratch; Hs (nv, nv) K's second-order Hessian
# part; al (1,) alpha; then pm (PbadModel: the second moments M~), the PGM options and kexact.
OWN = ("T", "Tm1", "Tm2", "Ab", "Gb", "Wb", "Cm", "xi", "qm2", "jd", "jh", "jv2", "jv3", "Hs", "al")
PbdNmdpX = namedtuple("PbdNmdpX", PGM_FIELDS + OWN + ("pm",) + PGM_OPTIONS + ("kexact",))
BATCHED = PGM_FIELDS + OWN


def make_pbd_nmdp_extra(model, pm, npts, B, kexact, options) -> PbdNmdpX:
    """Scratch for ``B`` trajectories of ``model`` (``pm``: its PbadModel) with ``npts`` scene
    contact points; ``options``: :func:`pbsim.integrators.pgm.problem.pgm_options`."""
    nb = max(model.nb, 1)
    n = max(model.nv, 1)
    nq = max(model.nq, 1)
    B = max(int(B), 1)
    z = np.zeros
    own = dict(
        T=z((B, nb, 3, 4)), Tm1=z((B, nb, 3, 4)), Tm2=z((B, nb, 3, 4)), Ab=z((B, nb, 3, 4)), Gb=z((B, nb, 3, 4)),
        Wb=z((B, nb, 3, 4)), Cm=z((B, nb, 4, 4)), xi=z((B, n, 6)), qm2=z((B, nq)), jd=z((B, n)), jh=z((B, n)),
        jv2=z((B, n)), jv3=z((B, n)), Hs=z((B, n, n)), al=z((B, 1)),
    )  # fmt: skip
    return PbdNmdpX(**pgm_arrays(model, npts, B, options["vx"], options["npair"]), **own, pm=pm, **options, kexact=int(kexact))


@kernel
def pbd_nmdp_prepare(m, s, c, w, sw, x, b, q0, v0, h, dt):
    """The sub-step's constants: ``alpha = h / dt``, the poses of ``theta_- = q0`` and ``theta_-- =
    q0 (+) (-dt v0)`` (Eq. 12), and the contact set (returns its size)."""
    x.al[b, 0] = h / dt
    fk_state(m, w, b, q0)
    poses_from_work(m, w, b, x.Tm1[b])
    d = x.dq[b]
    for j in range(m.nv):
        d[j] = -dt * v0[j]
    integrate_config(m, q0, d, x.qm2[b], w.Rj[b])
    fk_state(m, w, b, x.qm2[b])
    poses_from_work(m, w, b, x.Tm2[b])
    if s.npts == 0 and s.nitem == 0:
        return 0
    return pgm_candidates(m, s, w, x, b, q0, v0, h)


@kernel
def tangent_bracket(m, g, A):
    """``A += N(g)``: the derivative of a tangent gradient ``g`` under ``theta (+) delta`` minus the
    symmetric Hessian (module docstring): ``1/2 [g_rot]x`` in the rotation block of every ball and
    free joint, ``[g_lin]x`` in a free joint's (lin, rot) block."""
    for i in range(m.nb):
        jt = m.jtype[i]
        if jt != BALL and jt != FREE:
            continue
        j = m.iv[i]
        a = j if jt == BALL else j + 3
        gx, gy, gz = 0.5 * g[a], 0.5 * g[a + 1], 0.5 * g[a + 2]
        A[a, a + 1] -= gz
        A[a, a + 2] += gy
        A[a + 1, a] += gz
        A[a + 1, a + 2] -= gx
        A[a + 2, a] -= gy
        A[a + 2, a + 1] += gx
        if jt == FREE:
            gx, gy, gz = g[j], g[j + 1], g[j + 2]
            A[j, a + 1] -= gz
            A[j, a + 2] += gy
            A[j + 1, a] += gz
            A[j + 1, a + 2] -= gx
            A[j + 2, a] -= gy
            A[j + 2, a + 1] += gx


@kernel
def pbd_nmdp_eval(m, s, c, w, x, b, q0, v0, th, h, wts, nc, deriv, first):
    """``x.G = G(th, wts)`` of Eq. 12 for the sub-step of h from (q0, v0) (constants from
    :func:`pbd_nmdp_prepare`); with ``deriv`` also ``x.A`` (first order with ``first``, else
    zeroth), the rows ``x.Bm`` of B^T, ``x.M = h^2 Q`` and ``x.g = dK/dtheta``.  Returns K(th)."""
    nv = m.nv
    pm = x.pm
    T = x.T[b]
    T1 = x.Tm1[b]
    T2 = x.Tm2[b]
    Ab = x.Ab[b]
    Gb = x.Gb[b]
    Wb = x.Wb[b]
    xi = x.xi[b]
    G = x.G[b]
    al = x.al[b, 0]
    ih2 = 1.0 / (h * h)
    fk_state(m, w, b, th)
    poses_from_work(m, w, b, T)
    for i in range(m.nb):
        for r in range(3):
            for cc in range(4):
                Ab[i, r, cc] = T[i, r, cc] - (1.0 + al) * T1[i, r, cc] + al * T2[i, r, cc]
    inertial_gravity_terms(m, pm, T, Ab, ih2, True, Gb)  # I_alpha + P_g (Eq. 12, B5 item 1: / 2 h^2)
    world_twists(m, T, xi)
    adjoint_gradient(m, T, Gb, xi, Wb, G)  # G = grad (I_alpha + P_g) (PBAD Algorithm 1)
    joint_energy(m, c, b, th, q0, v0, h, x.jd[b], x.jh[b], x.jv2[b], w.Rj[b])
    joint_gradient(m, c, b, th, x.jd[b], x.jh[b], x.jv2[b], x.jv3[b], w.Rj[b], G)  # + grad E_j
    A = x.A[b]
    M = x.M[b]
    if deriv:
        hessian_second_order(m, xi, Wb, A, False)  # <hat xi_a hat xi_b, W> (PBAD Algorithm 2)
        composite_moments(m, pm, T, T, 1.0, x.Cm[b])
        gn_block(m, xi, xi, x.Cm[b], M, 0, 0, False)  # M_rigid(theta) (PBAD Algorithm 3)
        for r in range(nv):
            for cc in range(nv):
                A[r, cc] += M[r, cc] * ih2
        joint_hessian(m, c, b, th, x.jd[b], h, A)
        if m.eq_type.shape[0] > 0:  # equality constraints: PBAD's stiff penalty (pbsim.dynamics.equality)
            equality_penalty(m, w, b, th, v0, h, True, True, G, A)
        tangent_bracket(m, G, A)  # d g_E(theta (+) delta) / d delta = H_E + N(g_E)
    elif m.eq_type.shape[0] > 0:
        equality_penalty(m, w, b, th, v0, h, True, False, G, A)
    # K = int rho |X(theta) - X(theta_-)|^2 / (2 h^2) (Eq. 12) and its gradient
    for i in range(m.nb):
        for r in range(3):
            for cc in range(4):
                Ab[i, r, cc] = T[i, r, cc] - T1[i, r, cc]
    K = inertial_gravity_terms(m, pm, T, Ab, ih2, False, Gb)
    if deriv:
        adjoint_gradient(m, T, Gb, xi, Wb, x.g[b])
        if x.kexact:  # h^2 Q = M_rigid + h^2 <hat xi_a hat xi_b, W_K>
            Hs = x.Hs[b]
            hessian_second_order(m, xi, Wb, Hs, False)
            h2 = h * h
            for r in range(nv):
                for cc in range(nv):
                    M[r, cc] += h2 * Hs[r, cc]
    if nc == 0:
        return K
    pgm_contact(m, s, w, x, b, wts, nc, deriv, first)  # - sum_x J_x^T v_x w_x (w holds theta's poses)
    return K


# Algorithm 2 around Algorithm 1 on the position-based form: the shared PGM with this form's hooks
pbd_nmdp_step = specialize(pgm_step, "pbd_nmdp", pgm_prepare=pbd_nmdp_prepare, pgm_eval=pbd_nmdp_eval)
