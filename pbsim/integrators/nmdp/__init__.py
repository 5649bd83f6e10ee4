"""``nmdp`` and ``nmdp_zo``: NE-NMDP of paper 002 (Pan & Hauser, *Implicit Integration for
Articulated Bodies with Contact via the Nonconvex Maximal Dissipation Principle*; notes/pbfd_nmdp.md
B1, B5): backward-Euler Newton-Euler dynamics whose contact forces minimise the kinetic energy at
the end of the step over NMDP's polytope wrench (:mod:`pbsim.contact.nmdp`, evaluated at the
*new* configuration)::

    min_{theta, w} K(theta) = 1/2 thetadot^T H(theta) thetadot
    s.t. G(theta, w) = RNEA(theta, thetadot, thetaddot) - sum_x J_x^T v_x(theta) w_x - tau(theta) = 0,
         w_x >= 0, 1^T w_x <= 1

solved by the projected gradient method of Algorithm 1: first order (``nmdp``, Eq. 7-9: exact
``A = dG/dtheta``) or zeroth order (``nmdp_zo``, Eq. 10-11: the ``dv_x/dtheta`` part of A
dropped), inside Algorithm 2's adaptive sub-stepping (a step whose projection fails or whose PGM
runs out of ``max_iterations`` is redone as two halves, recursively, down to ``alpha =
2^-substep``).  The NE form's equations are in :mod:`.step`, the QP, the projection and the loop (shared with
the position-based form ``pbd_nmdp``) in :mod:`pbsim.integrators.pgm`; the whole of Algorithm 2 is one step kernel (the recursion is a
loop over dyadic ticks), so ``CpuBatch`` and ``rollout`` run the same code as
:meth:`Integrator.step`.

Deviations and choices (each documented in :mod:`.step`): the corrected alpha scaling ``h = alpha
dt`` (B5 item 1), the proximal rule reversed to match Eq. 8 (reject: ``gamma / eta``; accept:
``gamma eta``; B5 item 2), Algorithm 2 carrying ``(theta, thetadot)`` with the cap (B5 item 3),
zeta in newtons on the candidate points only (B5 item 4), the contact set fixed per step (B5 item
8), the PSD ``Q = H / h^2`` (B1), the start ``theta_- (+) h thetadot_-`` (B5 item 10) with the
weights of the linearised MDP QP there (``init="qp"``; ``"zero"``: the paper's ``w = 0``), a
projection whose Newton step exceeds ``max_step`` counted as failed (B5 item 10: no line search,
failure means subdivide), the
proximal weight scaled by the QP's curvature and the QP in force-scaled variables (scale-free
gamma), no ``|w|^2`` regularisation (Remark 4).  Effort clamping (``Control(clamp=True)``) only
pre-clips the explicit actuation; the stable-PD part is not clamped.

Diagnostics: ``iterations`` = outer PGM iterations (summed over sub-steps), ``residual`` = the
largest final ``|G|_inf`` [N, N m], ``converged`` = every sub-step stopped by ``xtol`` and the cap
was not hit; ``extra``: ``min_alpha`` (smallest ``h / dt``), ``substeps``, ``alpha_cap`` (bool:
a sub-step of the smallest alpha failed: the state is its best projection iterate, not a solution,
or its last feasible iterate when it ran out of iterations), ``iteration_cap`` (sub-steps at the
smallest alpha that ran out of ``max_iterations``: feasible, not stationary), ``projection_failures``,
``qp_failures`` (QP solves that stopped at their iteration limit), ``rejections``,
``newton_iterations``, ``accepted_max_residual`` (the largest ``|G|_inf`` of an accepted iterate),
``accepted_k_rises`` (accepted iterates whose K rose: 0), ``k_start``/``k_end`` (K after the
initial projection and at the end of the last sub-step); the work: ``evaluations`` (of G with A
and B), ``lu_factorizations``, ``qp_solves``, ``qp_iterations`` (all sub-steps).
"""

from __future__ import annotations

from pbsim.integrators.base import StepSpec, register
from pbsim.integrators.options import Option
from pbsim.integrators.nmdp.step import (BATCHED, METRIC_INERTIA, METRIC_STEP, make_nmdp_extra, nmdp_eval,
                                        nmdp_prepare, nmdp_step)
from pbsim.integrators.pgm.integrator import PGM_FEATURES, PGM_USED, PgmIntegrator, pgm_option_specs
from pbsim.integrators.pgm.solve import GAMMA0_ZO
from pbsim.integrators.pgm.wrench import MARGIN, VX, WRENCH_OPTIONS, pair_capacity, wrench_parameters  # noqa: F401

__all__ = ["Nmdp", "NmdpZo"]


def _extra(integrator, B):
    I = integrator
    ks = I.scene.kernel_arrays(I.model)
    return make_nmdp_extra(
        I.model, ks.npts, B, I.frame, I.k, I.zeta, I.mu, I.vx, I.margin, I.max_iterations,
        I.gtol, I.xtol, I.eta, I.substep, I.zo, 1 if I.init == "qp" else 0, I.max_step, I.gamma0,
        METRIC_STEP if I.metric == "step" else METRIC_INERTIA, pair_capacity(ks, I.max_contacts), I.maxpen,
    )  # fmt: skip


METRIC = Option("metric", "inertia", "the kinetic energy the contact minimises: 'inertia' 1/2 v^T H v (the paper's "
                "Eq. 6) or 'step' 1/2 v^T (H + diag(arm)) v, arm the step's implicit SPD/damping diagonal (ours: "
                "maximal dissipation at the contacts under implicit actuation)", "str", ("inertia", "step"))  # fmt: skip


@register("nmdp", doc="NE-NMDP (paper 002): backward-Euler Newton-Euler + nonconvex maximal dissipation, "
                      "first-order PGM (Algorithm 1) with adaptive sub-steps (Algorithm 2)")  # fmt: skip
class Nmdp(PgmIntegrator):
    """NE-NMDP, first-order projected gradient method (paper 002, Eq. 6-9, Algorithms 1-2); options,
    checks, diagnostics and the tools ``residual`` / ``candidates``: :class:`pbsim.integrators.pgm.integrator.PgmIntegrator`."""

    name = "nmdp"
    supports_fluid = True  # explicit at the step's start (joint_forces' tau0)
    supports_equality = True  # PBAD's penalty as a force in G (nmdp_eval), the end-of-step projection (pgm.step)
    ZO = False
    OPTIONS = (*pgm_option_specs(200), METRIC)
    STEP = StepSpec(nmdp_step, extra=_extra, batched=BATCHED, info="info", features=PGM_FEATURES, used=PGM_USED)
    HOOKS = (nmdp_prepare, nmdp_eval)

    def __init__(self, model, scene=None, **options):
        super().__init__(model, scene, **options)
        self.metric = options.get("metric", "inertia")


@register("nmdp_zo", doc="NE-ZONMDP (paper 002): nmdp with the zeroth-order PGM (Eq. 10-11: dv_x/dtheta dropped "
                         "from A)")  # fmt: skip
class NmdpZo(Nmdp):
    """NE-NMDP, zeroth-order projected gradient method (paper 002, Eq. 10-11)."""

    name = "nmdp_zo"
    ZO = True
    OPTIONS = (*pgm_option_specs(500, GAMMA0_ZO, zo=True), METRIC)
    STEP = StepSpec(nmdp_step, extra=_extra, batched=BATCHED, info="info", features=PGM_FEATURES, used=PGM_USED)
