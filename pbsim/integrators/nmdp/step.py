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
``tau = tau0 - arm thetaddot``: for SPD this is ``-Kp (theta - qbar) - Kd (thetadot - vbar)`` at the
new state exactly (backward Euler), ``d tau / d theta = -(Kp + Kd / h)`` (times the velocity map
``P`` below).  RNEA includes gravity and armature.  Contact: the wrench of
:mod:`pbsim.contact.nmdp` (vertices ``(k d^3 + zeta)(n + mu t^i)`` at the sphere centre ``c``),
applied at the sphere surface ``a = c - r n`` (ne_mdp's and the penalty model's point).

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
``dc = xi_w x c + xi_v``: ``d tau_j = (xi x S_j) . [a x f; f] + (S_j,w x da) . f``.

**QP** (Eq. 8/10) in the variables ``u = w cap_x / c_max`` (per contact the capped simplex
``u >= 0, 1^T u <= cap_x / c_max``: every variable has the scale of a force, ne_mdp's scaling)::

    min 1/2 du^T (D~^T Q D~ + (2 sigma / gamma) I) du - (D~^T g)^T du,  D~ = D diag(c_max / cap)

``sigma``: the largest diagonal entry of ``D~^T Q D~`` (the proximal weight ``|dw|^2 / gamma`` made
scale-free: gamma = 1 weighs it like the curvature).  Solved by :func:`pbsim.optim.qp.qp_solve`
(FISTA over the simplex blocks), warm-started at the current ``u``.  A candidate whose capacity is
below ``1e-14 c_max`` (``zeta = 0`` out of contact: ``v = 0``) keeps its weight (a [0, 0] box).

**Manifold projection** (Eq. 9/11): Newton ``theta <- theta (+) (-A^-1 G)`` until
``|G|_inf <= tol``; it *fails* (the step is to be subdivided) when the LU finds A singular (pivot
below 1e-14 of its largest entry), when ``|G|_inf`` does not decrease from one Newton step to the
next, after ``PROJ_MAX`` steps, or **[ours]** when a Newton step moves a coordinate by more than
``max_step`` (rad or m; 0.5 by default): G has several roots at a large h (RNEA is quadratic in
``(theta (-) theta_-) / h``, the capacity cubic in the depth) and such a jump lands on another one
(measured: a standing spider at dt = 50 ms, its legs folded by a radian and its feet lifted 0.6 m,
a root with every capacity at zeta from which the PGM cannot bring the contact back).

**Algorithm 1** (the note's cleaned-up form, B5 item 2): ``theta^0 = theta_- (+) h thetadot_-``
(B5 item 10: the explicit prediction as the start), ``w^0 = 0`` (``init="zero"``, the paper's) or
(``init="qp"``, the default, **[ours]**) the QP of the linearisation at that unprojected point (A,
B, g there, ``G != 0`` taken into the linear model, a weak proximal term ``gamma = 1e3``: NE-MDP's
problem, the linearised maximal dissipation), then projected.  Why: from ``w = 0`` a loaded robot's
projection is the step *without* ground forces -- a standing spider's stable-PD torques, no longer
balanced by the feet, fold its light legs by a radian in 50 ms and lift its feet 0.6 m out of the
ground, where every capacity is zeta and the PGM cannot bring the contact back (a feasible local
minimum, accepted; measured: the spider collapsed at dt = 50 ms in its 5th step).  Then per
iteration the
QP at the accepted ``(theta, w)``, the projection of the trial from theta; ``K`` increased or the
projection failed: reject, ``gamma <- gamma / eta``; else accept, ``gamma <- gamma eta``, and stop
when ``|theta^k (-) theta^(k-1)|_inf < xtol``.  A rejected trial whose projection succeeded within
``xtol`` of theta also stops (stationary to within xtol).  ``max_iterations`` outer iterations
without stopping: status 1 (Algorithm 2 halves the sub-step; at the cap it keeps the last accepted,
feasible iterate, flagged).

**Algorithm 2** (B5 item 3) as a loop over dyadic ticks (no recursion, so it is one kernel): the
step is ``2^depth`` ticks; a sub-step of level L spans ``2^(depth-L)`` ticks and carries
``(theta, thetadot)`` to the next; a PGM that failed (initial projection failed or the LU was
singular) or ran out of ``max_iterations`` (the paper's Algorithm 1 has no cap: its not converging is
the divergence Algorithm 2 reacts to) splits the current sub-step in two (L + 1); after a sub-step completes, the level goes back up
while the position closes the parent's interval -- exactly the recursion's order (the second half
is tried at the size of the half, whatever the first half became).  At ``L = depth`` (``alpha =
2^-depth``, 1/64 by default) a failure is the **cap**: the sub-step takes the projection iterate
with the smallest ``|G|_inf`` (out of iterations: its last accepted iterate, feasible) and the step
is flagged (``stats[CAP]``, converged 0), never silently.

The contact set is fixed for the whole step (B5 item 8): points with signed depth above
``-margin`` at ``theta_-`` or at ``theta_- (+) dt thetadot_-``.

``info`` = [outer iterations (all sub-steps), largest final |G|_inf, converged (every sub-step
stopped by xtol, no cap), min alpha]; ``stats`` = [sub-steps, projection failures, QP solves that
did not reach their tolerance, cap hit, sub-steps at the iteration cap, rejections, Newton
iterations, largest final |G|_inf, largest |G|_inf of an accepted iterate (the initial projection
included), accepted iterates whose K rose (0 by construction: a check), K after the initial
projection and K at the end, both of the last sub-step] (Theorem 5.5's invariants, B-T2).
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from pbsim.backends.kernel import kernel
from pbsim.contact.depth import predicted_depths_state
from pbsim.contact.nmdp import nmdp_point
from pbsim.contact.query import contact_detect, point_force_jt
from pbsim.control.solve import joint_forces
from pbsim.dynamics.crba import crba_state
from pbsim.dynamics.energy import kinetic_energy_gradient_state
from pbsim.dynamics.joints import BALL, FREE, difference_config, integrate_config
from pbsim.dynamics.kinematics import fk_state
from pbsim.dynamics.rnea import rnea_state
from pbsim.dynamics.rnea_derivatives import make_rnea_derivatives_work, rnea_derivatives_state
from pbsim.integrators.pbad.order2 import rotate_by_exp_transpose
from pbsim.optim.linalg import gram_symmetric, inf_norm, lu_factor, lu_solve
from pbsim.optim.qp import QP_BOX, QP_SIMPLEX, qp_solve

PROJ_MAX = 50  # Newton steps of one manifold projection
CAP_EPS = 1e-14  # a candidate with capacity below this fraction of the step's largest is inert
QP_MAXIT = 5000  # FISTA iterations per QP
GAMMA_INIT = 1e3  # the warm start's QP: a weak proximal term (it only keeps the QP strictly convex)
QP_TOL = 1e-10  # its KKT residual (u in units of the largest capacity; QP scaled by its largest diagonal)
# stats columns
S_SUB, S_PFAIL, S_QPFAIL, S_CAP, S_ITCAP, S_REJ, S_NEWTON, S_RES, S_GACC, S_KRISE, S_K0, S_K1 = range(12)
NSTATS = 12

# The step's scratch (leading axis B on the batched fields; P = max(1, scene points), V = vx,
# MP = P V, n = nv): rw RneaDerivWork; q0, v0 the sub-step's start; th, thn, thb, qp (nq)
# accepted / trial / best-projection / predicted configurations; vel, acc (n) thetadot, thetaddot;
# Pm (n, n) the velocity map; G (n), A, LU (n, n), piv (n) ints; dq, gk, mv, g, tau0, arm (n);
# dRq, dRv, M (n, n); sdp (P) predicted depths; act (P) ints: candidates; cap (P); Vt (P, V, 3)
# vertices; Dv (P, V, 3, 3) their x-derivatives; T1, T2, Dn, Dd (3, 3); Jc (n, 8) chain columns;
# Bm, Dm, HX (MP, n); wts, wn, qb, lo, hi (MP); QA (MP, MP); qw (5, MP); qinfo (4); bstart (P + 1),
# btype (P), bmu (P); info (4); stats (8); F (3, 3) the tangent basis' up frame; the options.
NmdpX = namedtuple(
    "NmdpX",
    "rw q0 v0 th thn thb qp vel acc Pm G A LU piv dq gk mv g tau0 arm dRq dRv M sdp act cap Vt Dv T1 T2 Dn Dd "
    "Jc Bm Dm HX wts wn qb lo hi QA qw qinfo bstart btype bmu info stats "
    "F k zeta mu vx margin maxit tol xtol eta depth zo init maxstep",
)
BATCHED = (
    "rw", "q0", "v0", "th", "thn", "thb", "qp", "vel", "acc", "Pm", "G", "A", "LU", "piv", "dq", "gk", "mv", "g",
    "tau0", "arm", "dRq", "dRv", "M", "sdp", "act", "cap", "Vt", "Dv", "T1", "T2", "Dn", "Dd", "Jc", "Bm", "Dm",
    "HX", "wts", "wn", "qb", "lo", "hi", "QA", "qw", "qinfo", "bstart", "btype", "bmu", "info", "stats",
)  # fmt: skip


def make_nmdp_extra(
    model, npts, B, F, k, zeta, mu, vx, margin, maxit, tol, xtol, eta, depth, zo, init, maxstep
) -> NmdpX:
    """Scratch for ``B`` trajectories of ``model`` with ``npts`` scene contact points."""
    n = max(model.nv, 1)
    nq = max(model.nq, 1)
    P = max(int(npts), 1)
    B = max(int(B), 1)
    V = int(vx)
    MP = P * V
    z = np.zeros
    return NmdpX(
        make_rnea_derivatives_work(model, B), z((B, nq)), z((B, n)), z((B, nq)), z((B, nq)), z((B, nq)),
        z((B, nq)), z((B, n)), z((B, n)), z((B, n, n)), z((B, n)), z((B, n, n)), z((B, n, n)), z((B, n), np.int64),
        z((B, n)), z((B, n)), z((B, n)), z((B, n)), z((B, n)), z((B, n)), z((B, n, n)), z((B, n, n)), z((B, n, n)),
        z((B, P)), z((B, P), np.int64), z((B, P)), z((B, P, V, 3)), z((B, P, V, 3, 3)), z((B, 3, 3)),
        z((B, 3, 3)), z((B, 3, 3)), z((B, 3, 3)), z((B, n, 8)), z((B, MP, n)), z((B, MP, n)), z((B, MP, n)),
        z((B, MP)), z((B, MP)), z((B, MP)), z((B, MP)), z((B, MP)), z((B, MP, MP)), z((B, 5, MP)), z((B, 4)),
        z((B, P + 1), np.int64), np.full((B, P), QP_SIMPLEX, np.int64), z((B, P)), z((B, 4)), z((B, NSTATS)),
        np.ascontiguousarray(F, dtype=np.float64), float(k), float(zeta), float(mu), V, float(margin), int(maxit),
        float(tol), float(xtol), float(eta), int(depth), int(zo), int(init), float(maxstep),
    )  # fmt: skip


@kernel
def nmdp_velocity(m, w, x, b, q0, v0, th, h):
    """``x.vel = (th (-) q0) / h`` (free joints' linear part in the body frame at th),
    ``x.acc = (vel - v0) / h`` and the velocity map ``x.Pm = h d vel / d delta``."""
    nv = m.nv
    vel = x.vel[b]
    P = x.Pm[b]
    difference_config(m, q0, th, vel, w.Rj[b])
    for r in range(nv):
        for c in range(nv):
            P[r, c] = 0.0
        P[r, r] = 1.0
    for i in range(m.nb):
        jt = m.jtype[i]
        if jt != BALL and jt != FREE:
            continue
        j = m.iv[i]
        a = j if jt == BALL else j + 3
        tx, ty, tz = vel[a], vel[a + 1], vel[a + 2]
        th2 = tx * tx + ty * ty + tz * tz
        t = math.sqrt(th2)
        if t < 1e-6:
            kk = 1.0 / 12.0 + th2 / 720.0
        else:
            kk = 1.0 / th2 - (1.0 + math.cos(t)) / (2.0 * t * math.sin(t))
        # Jr^-1(phi) = I + 1/2 [phi]x + kk [phi]x^2,  [phi]x^2 = phi phi^T - |phi|^2 I
        P[a, a + 1] += -0.5 * tz
        P[a, a + 2] += 0.5 * ty
        P[a + 1, a] += 0.5 * tz
        P[a + 1, a + 2] += -0.5 * tx
        P[a + 2, a] += -0.5 * ty
        P[a + 2, a + 1] += 0.5 * tx
        for r in range(3):
            pr = tx if r == 0 else (ty if r == 1 else tz)
            for c in range(3):
                pc = tx if c == 0 else (ty if c == 1 else tz)
                P[a + r, a + c] += kk * (pr * pc - (th2 if r == c else 0.0))
        if jt == FREE:  # u = exp(phi)^T (R0^T (p1 - p0)) = R1^T (p1 - p0): du = d_lin + [u]x d_ang
            rotate_by_exp_transpose(tx, ty, tz, vel, j)
            ux, uy, uz = vel[j], vel[j + 1], vel[j + 2]
            P[j, a + 1] = -uz
            P[j, a + 2] = uy
            P[j + 1, a] = uz
            P[j + 1, a + 2] = -ux
            P[j + 2, a] = -uy
            P[j + 2, a + 1] = ux
    acc = x.acc[b]
    for j in range(nv):
        vel[j] /= h
        acc[j] = (vel[j] - v0[j]) / h


@kernel
def nmdp_candidates(m, s, w, x, b, q0, v0, h):
    """The step's contact set (fixed for the step): points with signed depth above ``-margin`` at
    q0 or at ``q0 (+) h v0``, into ``x.act``; returns its size."""
    predicted_depths_state(m, s, w, b, q0, v0, h, x.dq[b], x.qp[b], x.sdp[b])
    nc = 0
    for kp in range(s.npts):
        body = s.pt_body[kp]
        _x, _y, _z, sd, _nx, _ny, _nz = contact_detect(s, kp, w.Rw[b, body], w.pw[b, body])
        if sd > -x.margin or x.sdp[b, kp] > -x.margin:
            x.act[b, nc] = kp
            nc += 1
    return nc


@kernel
def nmdp_prepare(m, s, c, w, sw, x, b, q0, v0, h):
    """The sub-step's constants: ``tau0``, ``arm`` (joint forces at the start, step h) and the
    contact set (returns its size)."""
    joint_forces(m, c, w, sw, b, q0, v0, h, True)
    for j in range(m.nv):
        x.tau0[b, j] = sw.tau[b, j]
        x.arm[b, j] = sw.arm[b, j]
    if s.npts == 0:
        return 0
    return nmdp_candidates(m, s, w, x, b, q0, v0, h)


@kernel
def nmdp_contact_jacobian(m, w, x, b, body, cx, cy, cz, ax, ay, az, r, fx, fy, fz, first, A):
    """``A -= d(J^T f)/dtheta`` (f fixed; module docstring) for the force ``f`` at ``a`` (the
    sphere surface of centre ``c``, radius ``r``; ``x.Dn[b]`` = dn/dx at c) and, with ``first``,
    ``A -= J_a^T x.Dd[b] J_c`` (``Dd = sum_i w_i dv^i/dx``)."""
    Rw = w.Rw[b]
    pw = w.pw[b]
    Jc = x.Jc[b]
    Dn = x.Dn[b]
    Dd = x.Dd[b]
    nn = 0
    j = body
    while j >= 0:  # the chain's world columns at the origin: omega, v0 = R s_lin + p x omega
        j0 = m.iv[j]
        for kk in range(m.nvj[j]):
            sv = m.S[j, kk]
            ox = Rw[j, 0, 0] * sv[0] + Rw[j, 0, 1] * sv[1] + Rw[j, 0, 2] * sv[2]
            oy = Rw[j, 1, 0] * sv[0] + Rw[j, 1, 1] * sv[1] + Rw[j, 1, 2] * sv[2]
            oz = Rw[j, 2, 0] * sv[0] + Rw[j, 2, 1] * sv[1] + Rw[j, 2, 2] * sv[2]
            px, py, pz = pw[j, 0], pw[j, 1], pw[j, 2]
            Jc[nn, 0], Jc[nn, 1], Jc[nn, 2] = ox, oy, oz
            Jc[nn, 3] = Rw[j, 0, 0] * sv[3] + Rw[j, 0, 1] * sv[4] + Rw[j, 0, 2] * sv[5] + py * oz - pz * oy
            Jc[nn, 4] = Rw[j, 1, 0] * sv[3] + Rw[j, 1, 1] * sv[4] + Rw[j, 1, 2] * sv[5] + pz * ox - px * oz
            Jc[nn, 5] = Rw[j, 2, 0] * sv[3] + Rw[j, 2, 1] * sv[4] + Rw[j, 2, 2] * sv[5] + px * oy - py * ox
            Jc[nn, 6] = j
            Jc[nn, 7] = j0 + kk
            nn += 1
        j = m.parent[j]
    # the wrench [a x f; f] at the origin
    mx = ay * fz - az * fy
    my = az * fx - ax * fz
    mz = ax * fy - ay * fx
    for kc in range(nn):  # the moving joint (column of A)
        xw0, xw1, xw2 = Jc[kc, 0], Jc[kc, 1], Jc[kc, 2]
        xv0, xv1, xv2 = Jc[kc, 3], Jc[kc, 4], Jc[kc, 5]
        bk = Jc[kc, 6]
        col = np.int64(Jc[kc, 7])
        # dc = xi_w x c + xi_v; da = dc - r Dn dc
        dcx = xw1 * cz - xw2 * cy + xv0
        dcy = xw2 * cx - xw0 * cz + xv1
        dcz = xw0 * cy - xw1 * cx + xv2
        dax = dcx - r * (Dn[0, 0] * dcx + Dn[0, 1] * dcy + Dn[0, 2] * dcz)
        day = dcy - r * (Dn[1, 0] * dcx + Dn[1, 1] * dcy + Dn[1, 2] * dcz)
        daz = dcz - r * (Dn[2, 0] * dcx + Dn[2, 1] * dcy + Dn[2, 2] * dcz)
        ddx = Dd[0, 0] * dcx + Dd[0, 1] * dcy + Dd[0, 2] * dcz  # (sum_i w_i dv^i/dx) dc
        ddy = Dd[1, 0] * dcx + Dd[1, 1] * dcy + Dd[1, 2] * dcz
        ddz = Dd[2, 0] * dcx + Dd[2, 1] * dcy + Dd[2, 2] * dcz
        for jc in range(nn):  # the torque row
            sw0, sw1, sw2 = Jc[jc, 0], Jc[jc, 1], Jc[jc, 2]
            sv0, sv1, sv2 = Jc[jc, 3], Jc[jc, 4], Jc[jc, 5]
            row = np.int64(Jc[jc, 7])
            t = 0.0
            if Jc[jc, 6] >= bk:  # S_j moves with joint k: (xi x S_j) . [a x f; f]
                cw0 = xw1 * sw2 - xw2 * sw1
                cw1 = xw2 * sw0 - xw0 * sw2
                cw2 = xw0 * sw1 - xw1 * sw0
                cv0 = xw1 * sv2 - xw2 * sv1 + xv1 * sw2 - xv2 * sw1
                cv1 = xw2 * sv0 - xw0 * sv2 + xv2 * sw0 - xv0 * sw2
                cv2 = xw0 * sv1 - xw1 * sv0 + xv0 * sw1 - xv1 * sw0
                t += cw0 * mx + cw1 * my + cw2 * mz + cv0 * fx + cv1 * fy + cv2 * fz
            # the point moves: (S_w x da) . f
            t += (sw1 * daz - sw2 * day) * fx + (sw2 * dax - sw0 * daz) * fy + (sw0 * day - sw1 * dax) * fz
            if first:  # J_a^T (Dd dc): the point velocity of column j at a
                ux = sv0 + sw1 * az - sw2 * ay
                uy = sv1 + sw2 * ax - sw0 * az
                uz = sv2 + sw0 * ay - sw1 * ax
                t += ux * ddx + uy * ddy + uz * ddz
            A[row, col] -= t


@kernel
def nmdp_eval(m, s, w, x, b, q0, v0, th, h, wts, nc, deriv, first):
    """``x.G = G(th, wts)`` for the sub-step of h from (q0, v0) (constants from
    :func:`nmdp_prepare`); with ``deriv`` also ``x.A`` (first order with ``first``, else
    zeroth), the rows ``x.Bm`` of B^T, ``x.M`` = H(th) and ``x.g`` = dK/dtheta.  Returns K(th)."""
    nv = m.nv
    nmdp_velocity(m, w, x, b, q0, v0, th, h)
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
    A = x.A[b]
    P = x.Pm[b]
    if deriv:
        dRq = x.dRq[b]
        dRv = x.dRv[b]
        rnea_derivatives_state(m, x.rw, b, th, vel, acc, dRq, dRv)
        ih = 1.0 / h
        ih2 = ih * ih
        for r in range(nv):
            for c in range(nv):
                acc2 = dRq[r, c]
                for kk in range(nv):
                    pk = P[kk, c]
                    if pk != 0.0:
                        mk = M[r, kk] + (x.arm[b, r] if r == kk else 0.0)
                        acc2 += (dRv[r, kk] * ih + mk * ih2) * pk
                A[r, c] = acc2
        kinetic_energy_gradient_state(m, w, b, th, vel, x.gk[b], x.mv[b])
        for c in range(nv):
            sg = x.gk[b, c]
            for kk in range(nv):
                sg += P[kk, c] * x.mv[b, kk] * ih
            x.g[b, c] = sg
    if nc == 0:
        return K
    fk_state(m, w, b, th)
    V = x.vx
    Dd = x.Dd[b]
    for ci in range(nc):
        kp = x.act[b, ci]
        body = s.pt_body[kp]
        Vt = x.Vt[b, ci]
        Dv = x.Dv[b, ci]
        cx, cy, cz, _sd, nx, ny, nz, cap = nmdp_point(
            s, x.F, x.k, x.zeta, x.mu, V, True, kp, w.Rw[b, body], w.pw[b, body], Vt, Dv, x.T1[b], x.T2[b], x.Dn[b]
        )
        x.cap[b, ci] = cap
        r = s.pt_radius[kp]
        ax, ay, az = cx - r * nx, cy - r * ny, cz - r * nz
        fx, fy, fz = 0.0, 0.0, 0.0
        for i in range(V):
            wi = wts[ci * V + i]
            fx += wi * Vt[i, 0]
            fy += wi * Vt[i, 1]
            fz += wi * Vt[i, 2]
        point_force_jt(m, w, b, body, ax, ay, az, -fx, -fy, -fz, G)
        if deriv:
            for i in range(V):
                row = x.Bm[b, ci * V + i]
                for j in range(nv):
                    row[j] = 0.0
                point_force_jt(m, w, b, body, ax, ay, az, -Vt[i, 0], -Vt[i, 1], -Vt[i, 2], row)
            for rr in range(3):
                for cc in range(3):
                    sdd = 0.0
                    if first:
                        for i in range(V):
                            sdd += wts[ci * V + i] * Dv[i, rr, cc]
                    Dd[rr, cc] = sdd
            nmdp_contact_jacobian(m, w, x, b, body, cx, cy, cz, ax, ay, az, r, fx, fy, fz, first, A)
    return K


@kernel
def nmdp_project(m, s, w, x, b, q0, v0, th, h, wts, nc, first, st):
    """Manifold projection (Eq. 9 / 11) of ``th`` (in place) onto G(., wts) = 0 by Newton steps
    with A (first or zeroth order).  Returns ``(ok, K, |G|_inf)``; on failure ``th`` holds the
    iterate with the smallest residual.  A, B rows, H, g are left at the returned th when ok."""
    nv = m.nv
    rprev = np.inf
    rbest = np.inf
    K = 0.0
    G = x.G[b]
    dq = x.dq[b]
    thb = x.thb[b]
    ok = False
    for it in range(PROJ_MAX + 1):
        K = nmdp_eval(m, s, w, x, b, q0, v0, th, h, wts, nc, True, first)
        r = inf_norm(G, nv)
        if r < rbest:
            rbest = r
            for j in range(m.nq):
                thb[j] = th[j]
        if r <= x.tol:
            ok = True
            break
        if not (r < rprev) or it == PROJ_MAX:  # not decreasing (NaN included) or too many steps
            break
        if not lu_factor(x.A[b], x.LU[b], x.piv[b], nv):
            break
        for j in range(nv):
            dq[j] = -G[j]
        lu_solve(x.LU[b], x.piv[b], dq, nv)
        if not (inf_norm(dq, nv) <= x.maxstep):  # a jump toward another root: fail, halve the step
            break
        integrate_config(m, th, dq, th, w.Rj[b])
        st[S_NEWTON] += 1.0
        rprev = r
    if not ok:
        st[S_PFAIL] += 1.0
        for j in range(m.nq):
            th[j] = thb[j]
        return False, K, rbest
    return True, K, rbest


@kernel
def nmdp_qp(m, x, b, nc, h, gamma, st, offset):
    """The QP (Eq. 8 / 10, module docstring) at the accepted iterate (A, B rows, H, g from its
    evaluation) for the trial weights ``x.wn``.  With ``offset`` (the warm start at a point where
    G != 0) the linearised constraint ``G + A dtheta + B dw = 0`` moves theta by the Newton step
    ``d0 = -A^-1 G`` too, so the gradient becomes ``g + Q d0``.  Returns False when A is singular."""
    nv = m.nv
    V = x.vx
    n = V * nc
    if not lu_factor(x.A[b], x.LU[b], x.piv[b], nv):
        return False
    geff = x.gk[b]  # (the evaluation's dK/dq scratch, free here)
    for j in range(nv):
        geff[j] = x.g[b, j]
    if offset:
        d0 = x.dq[b]
        for j in range(nv):
            d0[j] = -x.G[b, j]
        lu_solve(x.LU[b], x.piv[b], d0, nv)
        for i in range(nv):
            sacc = 0.0
            for j in range(nv):
                sacc += x.M[b, i, j] * d0[j]
            geff[i] += sacc / (h * h)
    cmax = 0.0
    for ci in range(nc):
        if x.cap[b, ci] > cmax:
            cmax = x.cap[b, ci]
    D = x.Dm[b]
    HX = x.HX[b]
    M = x.M[b]
    wts = x.wts[b]
    u = x.wn[b]
    ih2 = 1.0 / (h * h)
    for ci in range(nc):
        cap = x.cap[b, ci]
        live = cap > CAP_EPS * cmax
        scale = cmax / cap if live else 0.0
        x.bstart[b, ci] = V * ci
        x.btype[b, ci] = QP_SIMPLEX if live else QP_BOX
        x.bmu[b, ci] = cap / cmax if live else 0.0
        for i in range(V):
            rr = ci * V + i
            x.lo[b, rr] = 0.0
            x.hi[b, rr] = 0.0
            u[rr] = wts[rr] / scale if live else 0.0
            for j in range(nv):
                D[rr, j] = x.Bm[b, rr, j]
            lu_solve(x.LU[b], x.piv[b], D[rr], nv)
            for j in range(nv):
                D[rr, j] *= scale
    x.bstart[b, nc] = V * nc
    for rr in range(n):
        for i in range(nv):
            sacc = 0.0
            for j in range(nv):
                sacc += M[i, j] * D[rr, j]
            HX[rr, i] = sacc * ih2
    QA = x.QA[b]
    sig = gram_symmetric(D, HX, n, nv, QA)
    if not (sig > 0.0):
        sig = 1.0
    prox = 2.0 * sig / gamma
    for rr in range(n):
        QA[rr, rr] += prox
    inv = 1.0 / (sig + prox)
    qb = x.qb[b]
    for rr in range(n):
        sacc = 0.0
        for j in range(nv):
            sacc += geff[j] * D[rr, j]
        for cc in range(n):
            sacc += QA[rr, cc] * u[cc]
        qb[rr] = -sacc * inv
    for rr in range(n):
        for cc in range(n):
            QA[rr, cc] *= inv
    ok = qp_solve(QA, qb, n, x.lo[b], x.hi[b], x.bstart[b, : nc + 1], x.btype[b, :nc], x.bmu[b, :nc], u, QP_MAXIT,
                  QP_TOL, x.qw[b], x.qinfo[b])  # fmt: skip
    if not ok:
        st[S_QPFAIL] += 1.0
    for ci in range(nc):
        cap = x.cap[b, ci]
        live = cap > CAP_EPS * cmax
        for i in range(V):
            rr = ci * V + i
            u[rr] = u[rr] * cmax / cap if live else wts[rr]
    return True


@kernel
def nmdp_pgm(m, s, c, w, sw, x, b, q0, v0, h, st):
    """Algorithm 1 for the sub-step of h from (q0, v0); the result in ``x.th``.  Returns
    ``(status, outer iterations, |G|_inf)``: status 0 stopped by xtol, 1 iteration cap (the last
    accepted iterate, feasible), 2 failed (initial projection or singular A: subdivide)."""
    nv = m.nv
    first = x.zo == 0
    nc = nmdp_prepare(m, s, c, w, sw, x, b, q0, v0, h)
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
    if x.init == 1 and nc > 0:  # warm start: the QP of the linearisation at the prediction
        nmdp_eval(m, s, w, x, b, q0, v0, th, h, wts, nc, True, first)
        if nmdp_qp(m, x, b, nc, h, GAMMA_INIT, st, True):
            for rr in range(V * nc):
                wts[rr] = wn[rr]
    ok, K, res = nmdp_project(m, s, w, x, b, q0, v0, th, h, wts, nc, first, st)
    if not ok:
        return 2, 0, res
    st[S_K0] = K
    st[S_K1] = K
    if res > st[S_GACC]:
        st[S_GACC] = res
    if nc == 0:
        return 0, 0, res
    gamma = 1.0
    for it in range(x.maxit):
        if not nmdp_qp(m, x, b, nc, h, gamma, st, False):
            return 2, it, res
        for j in range(m.nq):
            thn[j] = th[j]
        okn, Kn, resn = nmdp_project(m, s, w, x, b, q0, v0, thn, h, wn, nc, first, st)
        dth = np.inf
        if okn:
            difference_config(m, th, thn, dq, w.Rj[b])
            dth = inf_norm(dq, nv)
        if okn and not (Kn > K):  # accept
            gamma *= x.eta
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
            if dth < x.xtol:
                return 0, it + 1, res
        else:  # reject: a stronger proximal term, the accepted iterate's derivatives again
            st[S_REJ] += 1.0
            gamma /= x.eta
            if dth < x.xtol:
                nmdp_eval(m, s, w, x, b, q0, v0, th, h, wts, nc, False, first)
                return 0, it + 1, res
            nmdp_eval(m, s, w, x, b, q0, v0, th, h, wts, nc, True, first)
    return 1, x.maxit, res


@kernel
def nmdp_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """The contract's step: Algorithm 2 (dyadic sub-steps down to ``dt / 2^depth``) around
    Algorithm 1, ``(q[b], v[b]) -> (qn[b], vn[b])``; ``x.info[b]``, ``x.stats[b]`` (module
    docstring)."""
    nv = m.nv
    st = x.stats[b]
    for i in range(st.shape[0]):
        st[i] = 0.0
    q0 = x.q0[b]
    v0 = x.v0[b]
    for j in range(m.nq):
        q0[j] = q[b, j]
    for j in range(nv):
        v0[j] = v[b, j]
    depth = x.depth
    N = np.int64(1) << depth
    pos = np.int64(0)
    L = np.int64(0)
    its = 0
    rmax = 0.0
    conv = True
    amin = 1.0
    th = x.th[b]
    while pos < N:
        h = dt / float(np.int64(1) << L)
        status, k, res = nmdp_pgm(m, s, c, w, sw, x, b, q0, v0, h, st)
        its += k
        if status != 0 and L < depth:  # failed or out of iterations: two halves
            L += 1
            continue
        if status == 2:
            st[S_CAP] = 1.0
            conv = False
        elif status == 1:
            st[S_ITCAP] += 1.0
            st[S_CAP] = 1.0
            conv = False
        nmdp_velocity(m, w, x, b, q0, v0, th, h)
        for j in range(m.nq):
            q0[j] = th[j]
        for j in range(nv):
            v0[j] = x.vel[b, j]
        if not (res <= rmax):
            rmax = res
        a = h / dt
        if a < amin:
            amin = a
        st[S_SUB] += 1.0
        pos += N >> L
        while L > 0 and pos % (N >> (L - 1)) == 0:
            L -= 1
    for j in range(m.nq):
        qn[b, j] = q0[j]
    for j in range(nv):
        vn[b, j] = v0[j]
    st[S_RES] = rmax
    info = x.info[b]
    info[0] = its
    info[1] = rmax
    info[2] = 1.0 if conv else 0.0
    info[3] = amin
