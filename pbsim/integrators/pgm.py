"""The projected gradient method of paper 002 (Pan & Hauser, NMDP; notes/pbfd_nmdp.md B1, B5)
shared by its two forms: the Newton-Euler form (``nmdp``/``nmdp_zo``, Eq. 6, :mod:`.nmdp`) and the
position-based form (``pbd_nmdp``/``pbd_nmdp_zo``, Eq. 12, :mod:`.pbd_nmdp`).  Both solve::

    min_{theta, w} K(theta)  s.t.  G(theta, w) = G_0(theta) - sum_x J_x^T v_x(theta) w_x = 0,
                                   w_x >= 0, 1^T w_x <= 1

for the configuration theta at ``t + h`` (``h = alpha dt``, B5 item 1) from the carried state
``(theta_-, thetadot_-)`` (B5 item 3).  A form supplies, per trajectory, two hooks (bound with
:func:`pbsim.jit.specialize`, like the LM loop's problems):

- ``pgm_prepare(m, s, c, w, sw, x, b, q0, v0, h, dt) -> nc``: the sub-step's constants and the
  contact set (:func:`pgm_candidates`, fixed for the step: B5 item 8);
- ``pgm_eval(m, s, c, w, x, b, q0, v0, th, h, wts, nc, deriv, first) -> K``: ``x.G = G(th, wts)``
  and with ``deriv`` ``x.A = dG/dtheta`` (first order with ``first``: Eq. 7; else Eq. 10's A
  without ``dv_x/dtheta``), the rows ``x.Bm`` of ``B^T = (dG/dw)^T``, the capacities ``x.cap``,
  ``x.g = dK/dtheta`` and ``x.M = h^2 Q`` (Q: the QP's Hessian of K, Eq. 8); the contact part of
  G and A is :func:`pgm_contact` for both forms.

Everything else is here: the velocity ``(theta (-) theta_-) / h`` (:func:`pgm_velocity`), the
QP (:func:`pgm_qp`), the manifold projection (:func:`pgm_project`), Algorithm 1
(:func:`pgm_solve`) and Algorithm 2 (:func:`pgm_step`, the contract's step kernel).  The
scratch ``x`` of a form is a namedtuple holding at least the fields of :data:`PGM_FIELDS` (built
by :func:`pgm_arrays`) and the options of :data:`PGM_OPTIONS`; :class:`PgmIntegrator` is the
integrator class both forms derive from (options, checks, diagnostics, the test tools).

**QP** (Eq. 8/10) in the variables ``u = w cap_x / c_max`` (per contact the capped simplex
``u >= 0, 1^T u <= cap_x / c_max``: every variable has the scale of a force, ne_mdp's scaling)::

    min 1/2 du^T (D~^T Q D~ + (2 sigma / gamma) I) du - (D~^T g)^T du,  D~ = D diag(c_max / cap)

``D = A^-1 B`` (one LU, m back-solves); ``sigma``: the largest diagonal entry of ``D~^T Q D~``
(the proximal weight ``|dw|^2 / gamma`` made scale-free: gamma = 1 weighs it like the
curvature).  Solved by :func:`pbsim.optim.qp.qp_solve_as` (the primal active-set method over the
simplex blocks; FISTA, :func:`~pbsim.optim.qp.qp_solve`, took ~50x longer on the Robosimian's
QPs: docs/benchmarks/nmdp.md "QP solver"), warm-started at the current ``u``.  A candidate whose
capacity is below ``1e-14 c_max`` (``zeta = 0`` out of contact: ``v = 0``) keeps its weight (a
[0, 0] box).

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
zeroth order differs in what it computes, the QP's ``D = A~^-1 B`` (the projected point is
re-evaluated once with that A for the next QP): ~2 Newton steps a projection, 200-420
evaluations a step, 1.3-2.2 s per simulated second on those drops.

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

**Algorithm 2** (B5 item 3) as a loop over dyadic ticks (no recursion, so it is one kernel): the
step is ``2^depth`` ticks; a sub-step of level L spans ``2^(depth-L)`` ticks and carries
``(theta, thetadot)`` to the next; a PGM that failed (initial projection failed or the LU was
singular) or ran out of ``max_iterations`` (the paper's Algorithm 1 has no cap: its not
converging is the divergence Algorithm 2 reacts to) splits the current sub-step in two (L + 1);
after a sub-step completes, the level goes back up while the position closes the parent's
interval -- exactly the recursion's order (the second half is tried at the size of the half,
whatever the first half became).  At ``L = depth`` (``alpha = 2^-depth``, 1/64 by default) a
failure is the **cap**: the sub-step takes the projection iterate with the smallest ``|G|_inf``
(out of iterations: its last accepted iterate, feasible) and the step is flagged (``stats[CAP]``,
converged 0), never silently.

``info`` = [outer iterations (all sub-steps), largest final |G|_inf, converged (every sub-step
stopped by xtol, no cap), min alpha]; ``stats`` = [sub-steps, projection failures, QP solves that
did not reach their tolerance, cap hit, sub-steps at the iteration cap, rejections, Newton
iterations, largest final |G|_inf, largest |G|_inf of an accepted iterate (the initial projection
included), accepted iterates whose K rose (0 by construction: a check), K after the initial
projection and K at the end, both of the last sub-step (Theorem 5.5's invariants, B-T2), then the
work: evaluations of G (with A, B), LU factorizations, QPs, QP iterations (all sub-steps), then the
largest number of body-body candidates a (sub-)step's contact set dropped].

**Contact between bodies** (issue 28, notes/body_contact.md Sec. 3.4).  The contact set holds the
scene's points against the environment (candidate ``kp < s.npts``) and, when the scene has
body-body items (:mod:`pbsim.contact.pairs`), the body-body points (``kp = s.npts + k``) with signed
depth above ``-margin`` at ``q0`` or at the prediction, among the items the broadphase keeps with
the margin (:func:`pbsim.contact.depth.pair_candidates_state`).  Their buffer is bounded: at most
``max_contacts`` (option; memory per trajectory stays static), on overflow the deepest are kept,
``stats[S_OVER]`` counts the dropped, the step is flagged (converged 0, so ``rollout`` hands it to
:meth:`Integrator.step`, which warns; ``extra["contact_overflow"]``): never silent.  Fixed with the
set for the step: the item's box face (:func:`pbsim.contact.query.item_face`), the tangent basis'
sign ``sigma = sign(n . up)`` (a lower body's points against an upper body's underside have ``n =
-up``, the smooth basis' singular point: the basis of ``sigma n`` is smooth there:
:func:`pbsim.contact.nmdp.pair_basis`) and, against a box, cylinder or hull, the contact plane in
B's frame (:func:`pbsim.contact.nmdp.pair_plane`: the box distance with a face choice jumps where a
point deep along the face leaves through a side plane, which failed the projection's Newton steps).
The wrench ``v^i = (k d^3 + zeta)(n + mu t^i)`` (``mu`` the point's own, ``n`` out of B) acts on A
at ``a = c - r n`` and ``-v^i`` on B: ``G -= (J_A(a) - J_B(a))^T f`` and the rows of ``B^T``
through :func:`pbsim.contact.query.pair_force_jt`; ``A``'s contact part is
:func:`pgm_pair_jacobian` (the exact derivative at first order; zeroth order: f fixed in B's frame).
The body-body kernels are compiled only into runs whose scene has items (:data:`PGM_FEATURES`).

Not a method: no ``register`` here (the registry's discovery imports it like a method's module).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from pbsim.jit import kernel, unused, unused_float
from pbsim.contact.depth import pair_candidates_state, predicted_depths_state
from pbsim.contact.nmdp import nmdp_pair_point, nmdp_point, pair_plane, tangent_frame
from pbsim.contact.query import contact_detect, pair_force_jt, point_force_jt
from pbsim.dynamics.equality import equality_project_mass
from pbsim.dynamics.joints import BALL, FREE, difference_config, integrate_config
from pbsim.errors import InputError, SimulationError
from pbsim.integrators.base import Integrator, body_contact_used
from pbsim.integrators.nmdp_wrench import (
    MARGIN,
    MAX_CONTACTS,
    MAX_CONTACTS_OPTION,
    WRENCH_OPTIONS,  # noqa: F401
    check_max_contacts,
    overflow_warning,
    pair_capacity,
    wrench_parameters,
)
from pbsim.integrators.options import Option
from pbsim.integrators.pbad.order2 import rotate_by_exp_transpose
from pbsim.optim.linalg import dot, gram_symmetric, inf_norm, lu_factor, lu_solve, lu_solve_rows, matvec_add
from pbsim.optim.qp import QP_BOX, QP_SIMPLEX, qp_solve_as, qp_work_as

PROJ_MAX = 50  # Newton steps of one manifold projection
PROJ_MAX_ZO = 500  # chord steps (the zeroth-order A): they converge linearly
LS_MAX = 10  # halvings of one Newton step (its line search on |G|_2)
CAP_EPS = 1e-14  # a candidate with capacity below this fraction of the step's largest is inert
QP_MAXIT = 5000  # QP iterations per QP (active-set steps; FISTA's when it falls back)
GAMMA_INIT = 1e3  # the warm start's QP: a weak proximal term (it only keeps the QP strictly convex)
# gamma0's defaults: a weak proximal term at the first iteration of the first-order PGM (the
# Robosimian jump: 3.4 / 10.4 outer iterations per step at dt 10 / 50 ms against 10.5 / 27 with the
# paper's gamma = 1, the states the same to 1e-5 m; docs/benchmarks/nmdp.md), 1 for the zeroth order
# (its inexact A: 1e4 raised nmdp_zo's iterations at 50 ms from 57 to 77)
GAMMA0_FO = 1e4
GAMMA0_ZO = 1.0
QP_TOL = 1e-10  # its KKT residual (u in units of the largest capacity; QP scaled by its largest diagonal)
# stats columns
S_SUB, S_PFAIL, S_QPFAIL, S_CAP, S_ITCAP, S_REJ, S_NEWTON, S_RES, S_GACC, S_KRISE, S_K0, S_K1 = range(12)
# the work: evaluations of G (and A), LU factorizations, QPs, QP iterations
S_EVAL, S_LU, S_QP, S_QPIT = range(12, 16)
# the most body-body candidates a (sub-)step's contact set dropped (the buffer's overflow)
S_OVER = 16
NSTATS = 17

# The shared scratch (leading axis B; P = max(1, scene points + body-body capacity), V = vx, MP = P V,
# n = nv): q0, v0
# the sub-step's start; th, thn, thb, qp (nq) accepted / trial / best-projection / predicted
# configurations; vel, acc (n) thetadot, thetaddot; dn (n) the projection's Newton direction; Pm (n, n) the velocity map; G (n), A, LU (n, n),
# piv (n) ints; dq, gk (QP scratch), g (n); M (n, n) h^2 Q; sdp (P) predicted depths; act (P) ints:
# candidates; cap (P); Vt (P, V, 3) vertices; Dv (P, V, 3, 3) their x-derivatives; T1, T2, Dn, Dd
# (3, 3); Jc (n, 9) chain columns; Bm, Dm, HX (MP, n); wts, wn, qb, lo, hi (MP); QA (MP, MP); qw (qp_work_as,
# kmax max(4 n, 64); with body-body candidates MP: the proximal term makes every weight a possible free
# dof, and past kmax the active-set QP finishes by FISTA: a three-box stack's nmdp step took 114 ms
# instead of 6.4); qinfo (4); bstart (P + 1), btype (P), bmu (P); info (4); stats (NSTATS); the
# body-body candidates: Tq (nb, 3, 4) poses at the step's start, cface (P) ints their item's box face,
# csig (P) their tangent basis' sign, csc (P) their scores (pbsim.contact.depth.pair_candidates_state),
# cpl (P, 7) their contact planes for the step (pbsim.contact.nmdp.pair_plane).
PGM_FIELDS = (
    "q0", "v0", "th", "thn", "thb", "qp", "vel", "acc", "dn", "Pm", "G", "A", "LU", "piv", "dq", "gk", "g", "M", "sdp",
    "act", "cap", "Vt", "Dv", "T1", "T2", "Dn", "Dd", "Jc", "Bm", "Dm", "HX", "wts", "wn", "qb", "lo", "hi", "QA",
    "qw", "qinfo", "bstart", "btype", "bmu", "info", "stats", "Tq", "cface", "csig", "csc", "cpl",
)  # fmt: skip
# the options (not batched): F the tangent basis' up frame (3, 3), the wrench's k, zeta, mu, vx,
# margin; maxit, tol (|G|_inf bound), xtol, eta, depth (substep), zo, init (1: qp), maxstep, gamma0;
# npair the body-body candidate buffer's capacity (min(max_contacts, body-body points))
PGM_OPTIONS = (
    "F", "k", "zeta", "mu", "vx", "margin", "maxit", "tol", "xtol", "eta", "depth", "zo", "init", "maxstep", "gamma0",
    "npair",
)  # fmt: skip


def pgm_arrays(model, npts, B, vx, npair=0) -> dict:
    """The arrays of :data:`PGM_FIELDS` for ``B`` trajectories of ``model`` with ``npts`` scene
    contact points, ``npair`` body-body candidates at most and ``vx`` friction directions."""
    n = max(model.nv, 1)
    nq = max(model.nq, 1)
    P = max(int(npts) + int(npair), 1)
    B = max(int(B), 1)
    V = int(vx)
    MP = P * V
    z = np.zeros
    return dict(
        q0=z((B, nq)), v0=z((B, n)), th=z((B, nq)), thn=z((B, nq)), thb=z((B, nq)), qp=z((B, nq)), vel=z((B, n)),
        acc=z((B, n)), dn=z((B, n)), Pm=z((B, n, n)), G=z((B, n)), A=z((B, n, n)), LU=z((B, n, n)), piv=z((B, n), np.int64),
        dq=z((B, n)), gk=z((B, n)), g=z((B, n)), M=z((B, n, n)), sdp=z((B, P)), act=z((B, P), np.int64),
        cap=z((B, P)), Vt=z((B, P, V, 3)), Dv=z((B, P, V, 3, 3)), T1=z((B, 3, 3)), T2=z((B, 3, 3)), Dn=z((B, 3, 3)),
        Dd=z((B, 3, 3)), Jc=z((B, n, 9)), Bm=z((B, MP, n)), Dm=z((B, MP, n)), HX=z((B, MP, n)), wts=z((B, MP)),
        wn=z((B, MP)), qb=z((B, MP)), lo=z((B, MP)), hi=z((B, MP)), QA=z((B, MP, MP)),
        qw=z((B, *qp_work_as(MP, max(4 * n, 64) if npair == 0 else MP).shape)),
        qinfo=z((B, 4)), bstart=z((B, P + 1), np.int64), btype=np.full((B, P), QP_SIMPLEX, np.int64), bmu=z((B, P)),
        info=z((B, 4)), stats=z((B, NSTATS)), Tq=z((B, max(model.nb, 1), 3, 4)), cface=z((B, P), np.int64),
        csig=np.ones((B, P)), csc=z((B, P)), cpl=z((B, P, 7)),
    )  # fmt: skip


def pgm_options(
    F, k, zeta, mu, vx, margin, maxit, tol, xtol, eta, depth, zo, init, maxstep, gamma0=1.0, npair=0
) -> dict:
    """The option fields of :data:`PGM_OPTIONS`, typed as the kernels read them."""
    return dict(
        F=np.ascontiguousarray(F, dtype=np.float64), k=float(k), zeta=float(zeta), mu=float(mu), vx=int(vx),
        margin=float(margin), maxit=int(maxit), tol=float(tol), xtol=float(xtol), eta=float(eta), depth=int(depth),
        zo=int(zo), init=int(init), maxstep=float(maxstep), gamma0=float(gamma0), npair=int(npair),
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# the form's hooks: placeholders, rebound by pbsim.jit.specialize (an unbound loop does
# not compile)


def pgm_prepare(m, s, c, w, sw, x, b, q0, v0, h, dt):
    """The sub-step's constants (from ``(q0, v0)``, step ``h`` of the frame step ``dt``) and the
    contact set into ``x.act``; returns its size (module docstring)."""
    raise NotImplementedError("bind the PGM hooks with pbsim.jit.specialize")


def pgm_eval(m, s, c, w, x, b, q0, v0, th, h, wts, nc, deriv, first):
    """``x.G`` at ``(th, wts)``; with ``deriv`` ``x.A``, ``x.Bm``, ``x.cap``, ``x.g``, ``x.M``;
    returns K(th) (module docstring)."""
    raise NotImplementedError("bind the PGM hooks with pbsim.jit.specialize")


# ---------------------------------------------------------------------------------------------
# shared kernels


@kernel
def pgm_velocity(m, w, x, b, q0, v0, th, h):
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
def pgm_candidates(m, s, w, x, b, q0, v0, h):
    """The step's contact set (fixed for the step): points with signed depth above ``-margin`` at
    q0 or at ``q0 (+) h v0``, into ``x.act``; returns its size.  Candidate ``kp < s.npts`` is the
    scene point ``kp`` against the environment, ``kp >= s.npts`` the body-body point ``kp - s.npts``
    (:func:`pgm_pair_candidates`)."""
    predicted_depths_state(m, s, w, b, q0, v0, h, x.dq[b], x.qp[b], x.sdp[b])
    nc = 0
    for kp in range(s.npts):
        body = s.pt_body[kp]
        _x, _y, _z, sd, _nx, _ny, _nz = contact_detect(s, kp, w.Rw[b, body], w.pw[b, body])
        if sd > -x.margin or x.sdp[b, kp] > -x.margin:
            x.act[b, nc] = kp
            nc += 1
    if s.nitem > 0:
        nc += pgm_pair_candidates(m, s, w, x, b, q0, nc)
    return nc


@kernel
def pgm_pair_candidates(m, s, w, x, b, q0, nw):
    """The body-body part of the contact set (after the ``nw`` environment candidates): points with
    signed depth above ``-margin`` at q0 or at the prediction ``x.qp`` (:func:`pbsim.contact.depth.
    pair_candidates_state`: their item's face and basis sign are fixed for the step), at most
    ``x.npair``, the deepest kept; the largest number dropped by a (sub-)step goes to
    ``stats[S_OVER]`` (the step is then flagged, :func:`pgm_step`).  Returns how many it added."""
    n, over = pair_candidates_state(
        m, s, w, b, q0, x.qp[b], True, x.Tq[b], x.margin, x.F, nw, x.npair, x.act[b], x.cface[b], x.csig[b], x.csc[b]
    )
    if over > x.stats[b, S_OVER]:
        x.stats[b, S_OVER] = over
    Tq = x.Tq[b]
    for c in range(nw, nw + n):  # the contact planes of the step (used against boxes, cylinders, hulls)
        k = x.act[b, c] - s.npts
        it = s.pp_item[k]
        A = s.it_a[it]
        B = s.it_b[it]
        pair_plane(s, k, x.cface[b, c], Tq[A], Tq[A, :, 3], Tq[B], Tq[B, :, 3], x.cpl[b, c])
    return n


@kernel
def pgm_contact_jacobian(m, w, x, b, body, cx, cy, cz, ax, ay, az, r, fx, fy, fz, first, A):
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
def pgm_pair_jacobian(m, w, x, b, A, B, lca, cx, cy, cz, nx, ny, nz, ax, ay, az, r, fx, fy, fz, gx, gy, gz, first, Am):
    """``Am -= d(J_rel(a)^T f)/dtheta`` for a body-body point (:func:`pgm_pair_point`): the force
    ``f`` on body A at ``a = c - r n`` and ``-f`` on body B (``c``: the point's sphere centre on A,
    ``n``: the normal out of B's shape at ``y = T_B^-1 c``).  With ``s_a = +1`` on A's chain below
    the bodies' lowest common ancestor ``lca``, ``-1`` on B's, the row of DOF ``a`` is ``tau_a = s_a
    (w_a x a + u_a) . f`` and its derivative along DOF ``c`` (world twist ``xi_c = (w_c, u_c)``,
    which moves A when on A's chain or above ``lca``, B when on B's or above)::

        d tau_a = s_a [ (xi_c x xi_a) . [a x f; f]   (c at or above a on a's chain: the column moves)
                      + (w_a x da) . f + (w_a x a + u_a) . df ]
        R_B dy = s_c P(c) xi_c,  P(c) xi = w x c + u          (c relative to B; s_c = 0 above lca)
        dn = [moves B] w_c x n + Dn R_B dy,  dsd = -n . R_B dy
        da = [moves A] P(c) xi_c - r dn
        df = g dsd + Nn dn                                    (first order, Eq. 7)
        df = [moves B] w_c x f                                (zeroth order, Eq. 10: f fixed in B's frame)

    ``Dn`` = ``x.Dn[b]`` (the shape's curvature, world), ``Nn`` = ``x.Dd[b]`` = ``sum_i w_i dv^i/dn``
    and ``g`` = ``sum_i w_i dv^i/dsd``.  The first order is the exact derivative of G(theta): the
    vertices are functions of y and of n = R_B nB(y) (their tangent basis is built from n in the
    world's up frame, so f is not exactly fixed in B's frame; the zeroth order's reading drops
    only that twist of the basis and the dependence on y).  With B the world (``lca = -1``, no B
    side) this is :func:`pgm_contact_jacobian`.  Columns: A's chain to the root (flag 1 below
    ``lca``, 3 from ``lca`` up) and B's chain below ``lca`` (flag 2), in ``x.Jc`` (n, 9)."""
    Rw = w.Rw[b]
    pw = w.pw[b]
    Jc = x.Jc[b]
    Dn = x.Dn[b]
    Nn = x.Dd[b]
    nn = 0
    for side in range(2):
        j = A if side == 0 else B
        fl = 1 if side == 0 else 2
        while j >= 0 and not (side == 1 and j == lca):
            if side == 0 and j == lca:
                fl = 3
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
                Jc[nn, 8] = fl
                nn += 1
            j = m.parent[j]
    mx = ay * fz - az * fy  # [a x f; f]
    my = az * fx - ax * fz
    mz = ax * fy - ay * fx
    for kc in range(nn):  # the moving DOF (column of A)
        xw0, xw1, xw2 = Jc[kc, 0], Jc[kc, 1], Jc[kc, 2]
        xv0, xv1, xv2 = Jc[kc, 3], Jc[kc, 4], Jc[kc, 5]
        bk = Jc[kc, 6]
        col = np.int64(Jc[kc, 7])
        fc = np.int64(Jc[kc, 8])
        mA = (fc & 1) != 0
        mB = (fc & 2) != 0
        sc = (1.0 if mA else 0.0) - (1.0 if mB else 0.0)
        vx_ = xw1 * cz - xw2 * cy + xv0  # P(c) xi_c
        vy_ = xw2 * cx - xw0 * cz + xv1
        vz_ = xw0 * cy - xw1 * cx + xv2
        ry0, ry1, ry2 = sc * vx_, sc * vy_, sc * vz_  # R_B dy
        dn0 = Dn[0, 0] * ry0 + Dn[0, 1] * ry1 + Dn[0, 2] * ry2
        dn1 = Dn[1, 0] * ry0 + Dn[1, 1] * ry1 + Dn[1, 2] * ry2
        dn2 = Dn[2, 0] * ry0 + Dn[2, 1] * ry1 + Dn[2, 2] * ry2
        if mB:
            dn0 += xw1 * nz - xw2 * ny
            dn1 += xw2 * nx - xw0 * nz
            dn2 += xw0 * ny - xw1 * nx
        da0, da1, da2 = -r * dn0, -r * dn1, -r * dn2
        if mA:
            da0 += vx_
            da1 += vy_
            da2 += vz_
        if first:
            dsd = -(nx * ry0 + ny * ry1 + nz * ry2)
            df0 = gx * dsd + Nn[0, 0] * dn0 + Nn[0, 1] * dn1 + Nn[0, 2] * dn2
            df1 = gy * dsd + Nn[1, 0] * dn0 + Nn[1, 1] * dn1 + Nn[1, 2] * dn2
            df2 = gz * dsd + Nn[2, 0] * dn0 + Nn[2, 1] * dn1 + Nn[2, 2] * dn2
        elif mB:
            df0 = xw1 * fz - xw2 * fy
            df1 = xw2 * fx - xw0 * fz
            df2 = xw0 * fy - xw1 * fx
        else:
            df0, df1, df2 = 0.0, 0.0, 0.0
        for jc in range(nn):  # the torque row: DOFs below lca only
            fr = np.int64(Jc[jc, 8])
            if fr == 3:
                continue
            sw0, sw1, sw2 = Jc[jc, 0], Jc[jc, 1], Jc[jc, 2]
            sv0, sv1, sv2 = Jc[jc, 3], Jc[jc, 4], Jc[jc, 5]
            row = np.int64(Jc[jc, 7])
            t = 0.0
            if (fr & fc) != 0 and Jc[jc, 6] >= bk:  # S_j moves with joint k: (xi x S_j) . [a x f; f]
                cw0 = xw1 * sw2 - xw2 * sw1
                cw1 = xw2 * sw0 - xw0 * sw2
                cw2 = xw0 * sw1 - xw1 * sw0
                cv0 = xw1 * sv2 - xw2 * sv1 + xv1 * sw2 - xv2 * sw1
                cv1 = xw2 * sv0 - xw0 * sv2 + xv2 * sw0 - xv0 * sw2
                cv2 = xw0 * sv1 - xw1 * sv0 + xv0 * sw1 - xv1 * sw0
                t += cw0 * mx + cw1 * my + cw2 * mz + cv0 * fx + cv1 * fy + cv2 * fz
            # the point moves: (S_w x da) . f
            t += (sw1 * da2 - sw2 * da1) * fx + (sw2 * da0 - sw0 * da2) * fy + (sw0 * da1 - sw1 * da0) * fz
            # the force changes: (S_w x a + S_v) . df
            ux = sv0 + sw1 * az - sw2 * ay
            uy = sv1 + sw2 * ax - sw0 * az
            uz = sv2 + sw0 * ay - sw1 * ax
            t += ux * df0 + uy * df1 + uz * df2
            if fr == 1:
                Am[row, col] -= t
            else:
                Am[row, col] += t


@kernel
def pgm_pair_point(m, s, w, x, b, ci, k, wts, deriv, first):
    """Candidate ``ci``, the body-body point ``k``, in :func:`pgm_contact`: ``x.G -= J_rel(a)^T f``
    (``f = sum_i w_i v^i`` on A at the sphere surface ``a = c - r n``, ``-f`` on B:
    :func:`pbsim.contact.query.pair_force_jt`), with ``deriv`` the rows of ``B^T`` (``-J_rel(a)^T
    v^i``), its capacity and ``A -= d(J_rel^T f)/dtheta`` (:func:`pgm_pair_jacobian`).  The vertices
    (:func:`pbsim.contact.nmdp.nmdp_pair_point`) take the point's own mu, its item's face and the
    basis sign chosen with the contact set."""
    nv = m.nv
    V = x.vx
    it = s.pp_item[k]
    A = s.it_a[it]
    B = s.it_b[it]
    lca = s.it_lca[it]
    Vt = x.Vt[b, ci]
    Dv = x.Dv[b, ci]
    cx, cy, cz, _sd, nx, ny, nz, cap, dcap = nmdp_pair_point(
        s, x.F, x.k, x.zeta, V, k, x.cface[b, ci], x.csig[b, ci], x.cpl[b, ci], w.Rw[b, A], w.pw[b, A], w.Rw[b, B],
        w.pw[b, B], Vt, Dv, x.T1[b], x.T2[b], x.Dn[b])  # fmt: skip
    x.cap[b, ci] = cap
    r = s.pp_radius[k]
    ax, ay, az = cx - r * nx, cy - r * ny, cz - r * nz
    fx, fy, fz = 0.0, 0.0, 0.0
    for i in range(V):
        wi = wts[ci * V + i]
        fx += wi * Vt[i, 0]
        fy += wi * Vt[i, 1]
        fz += wi * Vt[i, 2]
    pair_force_jt(m, w, b, A, B, lca, ax, ay, az, -fx, -fy, -fz, x.G[b])
    if not deriv:
        return
    for i in range(V):
        row = x.Bm[b, ci * V + i]
        for j in range(nv):
            row[j] = 0.0
        pair_force_jt(m, w, b, A, B, lca, ax, ay, az, -Vt[i, 0], -Vt[i, 1], -Vt[i, 2], row)
    Nn = x.Dd[b]
    for rr in range(3):
        for cc in range(3):
            sdd = 0.0
            for i in range(V):
                sdd += wts[ci * V + i] * Dv[i, rr, cc]
            Nn[rr, cc] = sdd
    q = dcap / cap if cap > 0.0 else 0.0  # sum_i w_i dv^i/dsd = (dcap / cap) f
    pgm_pair_jacobian(
        m, w, x, b, A, B, lca, cx, cy, cz, nx, ny, nz, ax, ay, az, r, fx, fy, fz, q * fx, q * fy, q * fz, first, x.A[b]
    )


@kernel
def pgm_contact(m, s, w, x, b, wts, nc, deriv, first):
    """The contact part of G (both forms): ``x.G -= sum_x J_x^T v_x(theta) w_x`` (Eq. 6 / 12) over
    the step's ``nc`` candidates, and with ``deriv`` the rows ``x.Bm`` of ``B^T = -[J_x^T v_x^i]^T``
    (Eq. 7), the capacities ``x.cap`` and ``A -= d(J^T f)/dtheta`` (:func:`pgm_contact_jacobian`;
    the vertex derivative with ``first``, Eq. 7 vs Eq. 10); body-body candidates through
    :func:`pgm_pair_point`.  The world poses in ``w`` must be those of theta (``fk_state``)."""
    nv = m.nv
    G = x.G[b]
    A = x.A[b]
    V = x.vx
    Dd = x.Dd[b]
    for ci in range(nc):
        kp = x.act[b, ci]
        if kp >= s.npts:  # a body-body point
            pgm_pair_point(m, s, w, x, b, ci, kp - s.npts, wts, deriv, first)
            continue
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
            pgm_contact_jacobian(m, w, x, b, body, cx, cy, cz, ax, ay, az, r, fx, fy, fz, first, A)


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
def pgm_project(m, s, c, w, x, b, q0, v0, th, h, wts, nc, first, st, lim):
    """Manifold projection (Eq. 9 / 11) of ``th`` (in place) onto G(., wts) = 0 by Newton steps
    with A (first or zeroth order), damped (module docstring): a step that does not decrease
    the merit (``|G|_2``; zeroth order ``|A^-1 G|_2``) is halved (up to ``LS_MAX`` times) before
    the projection fails.  Returns ``(ok, K, |G|_inf)``; on failure
    ``th`` holds the iterate with the smallest residual.  A, B rows, H, g are left at the returned
    th when ok."""
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
    for _ in range(pmax * (LS_MAX + 1) + 1):
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
    if not ok:
        st[S_PFAIL] += 1.0
        for j in range(m.nq):
            th[j] = thb[j]
        return False, K, racc
    if pf != first:  # the QP's zeroth-order A (Eq. 10) at the projected point
        K = pgm_eval(m, s, c, w, x, b, q0, v0, th, h, wts, nc, True, first)
        st[S_EVAL] += 1.0
    return True, K, racc


@kernel
def pgm_qp(m, x, b, nc, h, gamma, st, offset):
    """The QP (Eq. 8 / 10, module docstring) at the accepted iterate (A, B rows, H, g from its
    evaluation) for the trial weights ``x.wn``.  With ``offset`` (the warm start at a point where
    G != 0) the linearised constraint ``G + A dtheta + B dw = 0`` moves theta by the Newton step
    ``d0 = -A^-1 G`` too, so the gradient becomes ``g + Q d0``.  Returns False when A is singular."""
    nv = m.nv
    V = x.vx
    n = V * nc
    st[S_LU] += 1.0
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
    x.bstart[b, nc] = V * nc
    lu_solve_rows(x.LU[b], x.piv[b], D, 0, n, nv)  # D = A^-1 B, four right-hand sides at a time
    for ci in range(nc):
        cap = x.cap[b, ci]
        scale = cmax / cap if cap > CAP_EPS * cmax else 0.0
        for i in range(V):
            rr = ci * V + i
            for j in range(nv):
                D[rr, j] *= scale
    for rr in range(n):  # H D, row by row of D: HX[rr] = (H D[rr]) / h^2
        HXr = HX[rr]
        for i in range(nv):
            HXr[i] = 0.0
        matvec_add(M, D[rr], HXr, nv, nv)
        for i in range(nv):
            HXr[i] *= ih2
    QA = x.QA[b]
    sig = gram_symmetric(D, HX, n, nv, QA)
    if not (sig > 0.0):
        sig = 1.0
    prox = 2.0 * sig / gamma
    for rr in range(n):
        QA[rr, rr] += prox
    inv = 1.0 / (sig + prox)
    qb = x.qb[b]
    for rr in range(n):  # -(D^T geff + QA u) / (sig + prox)
        qb[rr] = 0.0
    matvec_add(D, geff, qb, n, nv)
    matvec_add(QA, u, qb, n, n)
    for rr in range(n):
        qb[rr] = -qb[rr] * inv
    for rr in range(n):
        for cc in range(n):
            QA[rr, cc] *= inv
    ok = qp_solve_as(QA, qb, n, x.lo[b], x.hi[b], x.bstart[b, : nc + 1], x.btype[b, :nc], x.bmu[b, :nc], u, QP_MAXIT,
                  QP_TOL, x.qw[b], x.qinfo[b])  # fmt: skip
    st[S_QP] += 1.0
    st[S_QPIT] += x.qinfo[b, 0]
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
    ok, K, res = pgm_project(m, s, c, w, x, b, q0, v0, th, h, wts, nc, first, st, lim)
    if not ok:
        return 2, 0, res
    st[S_K0] = K
    st[S_K1] = K
    if res > st[S_GACC]:
        st[S_GACC] = res
    if nc == 0:
        return 0, 0, res
    gamma = x.gamma0
    for it in range(x.maxit):
        if not pgm_qp(m, x, b, nc, h, gamma, st, False):
            return 2, it, res
        for j in range(m.nq):
            thn[j] = th[j]
        okn, Kn, resn = pgm_project(m, s, c, w, x, b, q0, v0, thn, h, wn, nc, first, st, lim)
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
            st[S_EVAL] += 1.0
            if dth < x.xtol:
                pgm_eval(m, s, c, w, x, b, q0, v0, th, h, wts, nc, False, first)
                return 0, it + 1, res
            pgm_eval(m, s, c, w, x, b, q0, v0, th, h, wts, nc, True, first)
    return 1, x.maxit, res


@kernel
def pgm_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
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
        status, k, res = pgm_solve(m, s, c, w, sw, x, b, q0, v0, h, dt, st)
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
        if m.eq_type.shape[0] > 0:  # equality constraints (pbd_nmdp): th onto them, in the mass metric
            equality_project_mass(m, w, b, th, 2)
        pgm_velocity(m, w, x, b, q0, v0, th, h)
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
    if st[S_OVER] > 0.0:  # the body-body candidate buffer overflowed: flagged, never silent
        conv = False
    info = x.info[b]
    info[0] = its
    info[1] = rmax
    info[2] = 1.0 if conv else 0.0
    info[3] = amin


# ---------------------------------------------------------------------------------------------
# the integrator class of both forms


PROJECTION = Option(
    "projection", "newton", "zeroth-order PGM: the manifold projection's A: 'newton' the exact A of Eq. 9 (ours; "
    "the QP's D stays Eq. 10's), 'chord' Eq. 11's zeroth-order A (the paper's; linear convergence, slow against "
    "stiff contact)", "str", ("newton", "chord"))  # fmt: skip


def pgm_option_specs(maxit, gamma0=GAMMA0_FO, zo=False):
    """The options of both forms (the NMDP wrench's, then the PGM's); ``maxit`` the default of
    ``max_iterations``, ``gamma0`` that of ``gamma0``; ``zo``: the zeroth-order form's
    ``projection`` too."""
    return (*_pgm_option_specs(maxit, gamma0), *((PROJECTION,) if zo else ()))


def _pgm_option_specs(maxit, gamma0):
    return (
        *WRENCH_OPTIONS,
        Option("tol", 1e-8, "manifold projection converged when |G|_inf <= tol * (M g x 1 m)", "float"),
        Option("xtol", 1e-6, "PGM stops when an accepted iterate moves theta by less than this (the paper's "
               "epsilon, rad or m)", "float"),
        Option("eta", 1.5, "proximal factor: reject gamma /= eta, accept gamma *= eta (> 1)", "float"),
        Option("gamma0", gamma0, "the proximal parameter gamma at the first PGM iteration of a (sub-)step (> 0; the "
               "proximal weight is 2 sigma / gamma, sigma the QP's largest curvature)", "float"),
        Option("max_iterations", maxit, "outer PGM iterations per (sub-)step", "int"),
        Option("substep", 6, "Algorithm 2: a failed step is halved recursively down to alpha = 2^-substep "
               "(the cap; 0: never)", "int"),
        Option("max_step", 0.5, "a Newton step of the manifold projection moving a coordinate by more than this "
               "(rad or m), plus how far PD/SPD joint targets lie from the prediction, is a projection failure "
               "(Algorithm 2 halves the step; ours)", "float"),
        Option("init", "qp", "start of the PGM: 'qp' the linearised MDP QP at theta_- (+) dt v (ours), 'zero' "
               "w = 0 (the paper's Algorithm 1)", "str", ("qp", "zero")),
        Option("on_fail", "warn", "what a step whose sub-step at the cap alpha failed or ran out of iterations, or whose "
               "body-body contact set overflowed max_contacts, does", "str", ("warn", "raise", "ignore")),
        MAX_CONTACTS_OPTION,
    )  # fmt: skip


def check_number(nm, v, lo, strict, where):
    """``float(v)``, finite and ``>= lo`` (``> lo`` when ``strict``), else an InputError naming ``where``."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise InputError(f"{where}: {nm} must be a finite number, got {v!r}") from None
    if not math.isfinite(f) or f < lo or (strict and f == lo):
        raise InputError(f"{where}: {nm} must be a finite number {'>' if strict else '>='} {lo:g}, got {v!r}")
    return f


@kernel
def no_pairs(*args):
    """Stands in for the body-body candidates in a run without body-body items (:data:`BODY_CONTACT`)."""
    return 0


# the body-body kernels, compiled only into runs whose scene has body-body items
# (pbsim.jit.Variants; StepSpec.features / used)
BODY_CONTACT = {"pgm_pair_candidates": no_pairs, "pgm_pair_point": unused}
# equality constraints (the position-based form's penalty and end-of-step projection)
PGM_FEATURES = {"body_contact": BODY_CONTACT,
                "equality": {"equality_penalty": unused_float, "equality_project_mass": unused}}


def PGM_USED(integrator, kc, ks) -> dict:  # noqa: N802 (the name the forms import)
    """``StepSpec.used``: contact between bodies, equality constraints."""
    return {**body_contact_used(integrator, kc, ks), "equality": integrator.model.k.eq_type.shape[0] > 0}


class PgmIntegrator(Integrator):
    """Base of the NMDP integrators (both forms): the options of :func:`pgm_option_specs` checked
    (InputError), the step through the form's ``STEP`` (a :func:`pgm_step` bound to its hooks),
    the diagnostics, ``on_fail``, and the test tools :meth:`residual` / :meth:`candidates`.  A form
    sets ``name``, ``ZO``, ``OPTIONS``, ``STEP``, ``HOOKS = (prepare, eval)`` (its bound hook
    kernels) and :meth:`make_x`."""

    implicit = True
    ZO = False
    HOOKS = ()

    def __init__(self, model, scene=None, **options):
        super().__init__(model, scene, **options)
        nm = self.name
        sc = self.scene
        self.mu, self.k, self.zeta, self.vx = wrench_parameters(nm, model, sc, options)
        self.margin = check_number("margin", options.get("margin", MARGIN), 0.0, False, nm)
        self.tol = check_number("tol", options.get("tol", 1e-8), 0.0, True, nm)
        self.xtol = check_number("xtol", options.get("xtol", 1e-6), 0.0, True, nm)
        self.eta = check_number("eta", options.get("eta", 1.5), 1.0, True, nm)
        g0 = options.get("gamma0", next(o.default for o in type(self).OPTIONS if o.name == "gamma0"))
        self.gamma0 = check_number("gamma0", g0, 0.0, True, nm)
        mi = options.get("max_iterations", next(o.default for o in type(self).OPTIONS if o.name == "max_iterations"))
        if isinstance(mi, bool) or not isinstance(mi, (int, np.integer)) or mi < 1:
            raise InputError(f"{nm}: max_iterations must be an integer >= 1, got {mi!r}")
        self.max_iterations = int(mi)
        sub = options.get("substep", 6)
        if isinstance(sub, bool) or not isinstance(sub, (int, np.integer)) or not 0 <= sub <= 20:
            raise InputError(f"{nm}: substep must be an integer in 0..20 (alpha >= 2^-substep), got {sub!r}")
        self.substep = int(sub)
        self.max_step = check_number("max_step", options.get("max_step", 0.5), 0.0, True, nm)
        self.init = options.get("init", "qp")
        if self.init not in ("qp", "zero"):
            raise InputError(f"{nm}: init must be 'qp' or 'zero', got {self.init!r}")
        self.on_fail = options.get("on_fail", "warn")
        if self.on_fail not in ("warn", "raise", "ignore"):
            raise InputError(f"{nm}: on_fail must be 'warn', 'raise' or 'ignore', got {self.on_fail!r}")
        self.max_contacts = check_max_contacts(nm, options.get("max_contacts", MAX_CONTACTS))
        self.projection = options.get("projection", "newton")
        if self.projection not in ("newton", "chord"):
            raise InputError(f"{nm}: projection must be 'newton' or 'chord', got {self.projection!r}")
        # the kernel's zo: 0 first order, 1 zeroth order with Eq. 11's chord projection, 2 zeroth
        # order with the exact A in the projection (ours)
        self.zo = 0 if not self.ZO else (2 if self.projection == "newton" else 1)
        g = float(np.linalg.norm(model.gravity)) or 9.81
        self.gtol = self.tol * max(float(model.total_mass), 1e-6) * g  # |G|_inf bound [N, N m]
        self.frame = tangent_frame(model)

    def pgm_options(self) -> dict:
        """The option fields of the step's scratch (:data:`PGM_OPTIONS`)."""
        return pgm_options(self.frame, self.k, self.zeta, self.mu, self.vx, self.margin, self.max_iterations,
                           self.gtol, self.xtol, self.eta, self.substep, self.zo,
                           1 if self.init == "qp" else 0, self.max_step, self.gamma0,
                           pair_capacity(self.scene.kernel_arrays(self.model), self.max_contacts))  # fmt: skip

    def make_x(self, B):
        """The step's scratch for ``B`` trajectories (the form's namedtuple)."""
        raise NotImplementedError

    def _step(self, state, control, dt):
        if not (np.isfinite(state.q).all() and np.isfinite(state.v).all()):
            raise InputError(f"{self.name}: the state holds NaN or inf (q or v)")
        new, d = super()._step(state, control, dt)
        st = self._x.stats
        d.extra["min_alpha"] = d.extra.pop("objective")
        d.extra["substeps"] = st[:, S_SUB].astype(int)
        d.extra["alpha_cap"] = st[:, S_CAP] > 0.5
        d.extra["iteration_cap"] = st[:, S_ITCAP].astype(int)
        d.extra["projection_failures"] = st[:, S_PFAIL].astype(int)
        d.extra["qp_failures"] = st[:, S_QPFAIL].astype(int)
        d.extra["rejections"] = st[:, S_REJ].astype(int)
        d.extra["newton_iterations"] = st[:, S_NEWTON].astype(int)
        d.extra["accepted_max_residual"] = st[:, S_GACC].copy()
        d.extra["accepted_k_rises"] = st[:, S_KRISE].astype(int)
        d.extra["k_start"] = st[:, S_K0].copy()
        d.extra["k_end"] = st[:, S_K1].copy()
        d.extra["evaluations"] = st[:, S_EVAL].astype(int)
        d.extra["lu_factorizations"] = st[:, S_LU].astype(int)
        d.extra["qp_solves"] = st[:, S_QP].astype(int)
        d.extra["qp_iterations"] = st[:, S_QPIT].astype(int)
        over = st[:, S_OVER].astype(int)
        d.extra["contact_overflow"] = over
        overflow_warning(self.name, over, self.max_contacts, self.on_fail)
        bad = ~d.converged & (over == 0)
        if bad.any() and self.on_fail != "ignore":
            i = int(np.flatnonzero(bad)[0])
            why = (f"ran out of max_iterations = {self.max_iterations} at the sub-step cap alpha = 2^-{self.substep} "
                   "(feasible, not stationary)" if d.extra["iteration_cap"][i]
                   else "hit the sub-step cap alpha = 2^-%d (the state is the best projection iterate, |G|_inf %.3g)"
                   % (self.substep, d.residual[i]))  # fmt: skip
            msg = f"{self.name}: {int(bad.sum())} of {len(bad)} trajectories did not converge (first: {i}, {why})"
            if self.on_fail == "raise":
                raise SimulationError(msg)
            warnings.warn(msg, RuntimeWarning, stacklevel=3)
        return new, d

    # tools for tests and scripts ----------------------------------------------------------------
    def _prepared(self, q0, v0, dt, control, frame_dt=None):
        from pbsim.control import Control
        from pbsim.control.stepwork import make_step_work
        from pbsim.dynamics.workspace import work_for

        x = self.STEP.make_extra(self, 1)
        kc = (control or Control()).kernel_arrays(self.model, 1)
        wk = work_for(self.model, 1)
        ks = self.scene.kernel_arrays(self.model)
        q0, v0 = (np.ascontiguousarray(a, float).copy() for a in (q0, v0))
        dtf = float(dt if frame_dt is None else frame_dt)
        nc = self.HOOKS[0](self.model.k, ks, kc, wk, make_step_work(self.model, 1), x, 0, q0, v0, float(dt), dtf)
        return x, kc, wk, ks, q0, v0, nc

    def residual(self, q0, v0, theta, w, dt, control=None, deriv=True, first=None, frame_dt=None):
        """``(G, A, B, K, g, M)`` of the sub-step of ``dt`` (of the frame step ``frame_dt``, default
        ``dt``: alpha = 1) from ``(q0, v0)`` at ``(theta, w)`` for one trajectory (1-D arrays; ``w``
        (candidates * vx,) in the order of :meth:`candidates`); ``A`` first order unless ``first``
        is False (default: this method's order).  B is (nv, m) = dG/dw; ``M = dt^2 Q`` (Q the QP's
        Hessian of K)."""
        first = (not self.ZO) if first is None else bool(first)
        x, kc, wk, ks, q0, v0, nc = self._prepared(q0, v0, dt, control, frame_dt)
        th = np.ascontiguousarray(theta, float).copy()
        wv = np.zeros(x.wts.shape[1])
        w = np.asarray(w, float).ravel()
        wv[: len(w)] = w
        K = self.HOOKS[1](self.model.k, ks, kc, wk, x, 0, q0, v0, th, float(dt), wv, nc, bool(deriv), first)
        m = nc * self.vx
        return (x.G[0].copy(), x.A[0].copy(), x.Bm[0, :m].T.copy(), float(K), x.g[0].copy(), x.M[0].copy())

    def candidates(self, q0, v0, dt, control=None):
        """The contact set of the step of ``dt`` from ``(q0, v0)``: scene point indices."""
        x, _kc, _wk, _ks, _q0, _v0, nc = self._prepared(q0, v0, dt, control)
        return x.act[0, :nc].copy()
