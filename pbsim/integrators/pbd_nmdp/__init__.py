"""``pbd_nmdp`` and ``pbd_nmdp_zo``: PBD-NMDP of paper 002 (Pan & Hauser, Eq. 12; notes/pbfd_nmdp.md
B1, B5), the position-based form of NMDP: PBAD's step energy (paper 000 Eq. 5: the inertia term
``I_alpha``, gravity, the joint-space terms) whose gradient must balance NMDP's polytope contact
wrench (:mod:`pbsim.contact.nmdp`, at the new configuration), the wrench's weights minimising the
Cartesian kinetic energy ``K`` at the end of the step::

    min_{theta, w} K(theta) = int rho |X(theta) - X(theta_-)|^2 / (2 h^2)
    s.t. G(theta, w) = grad (I_alpha + P_g + E_j)(theta) - sum_x J_x^T v_x(theta) w_x = 0,
         w_x >= 0, 1^T w_x <= 1

solved by the projected gradient method of Algorithm 1 inside Algorithm 2's adaptive sub-stepping,
first order (``pbd_nmdp``, Eq. 7-9) or zeroth order (``pbd_nmdp_zo``, Eq. 10-11).  The form's
equations are in :mod:`.step`; the PGM (QP, projection, Algorithms 1-2), the options, their
checks, the diagnostics and the test tools are those of ``nmdp`` (:mod:`pbsim.integrators.pgm`,
one implementation for both forms; the same deviations and choices, listed in
:mod:`pbsim.integrators.nmdp`).  Own option: ``k_hessian`` (the QP's Hessian of K: ``"gn"``
PBAD's Gauss-Newton ``M_rigid(theta) / h^2``, PSD, the default; ``"exact"``).  Without contact
and with ``alpha = 1`` a step is PBAD order 2's (``pbad``), to the solvers' tolerances.
"""

from __future__ import annotations

from pbsim.errors import InputError
from pbsim.integrators.base import Option, StepSpec, register
from pbsim.integrators.pbad.energy import make_pbad_model
from pbsim.integrators.pbd_nmdp.step import BATCHED, make_pbd_nmdp_extra, pbd_nmdp_eval, pbd_nmdp_prepare, pbd_nmdp_step
from pbsim.integrators.pgm.integrator import PGM_FEATURES, PGM_USED, PgmIntegrator, pgm_option_specs
from pbsim.integrators.pgm.solve import GAMMA0_FO, GAMMA0_ZO

__all__ = ["PbdNmdp", "PbdNmdpZo"]


def _extra(integrator, B):
    return integrator.make_x(B)


def _options(maxit, gamma0, zo=False):
    return (
        *pgm_option_specs(maxit, gamma0, zo),
        Option("k_hessian", "gn", "the QP's Hessian of K: 'gn' M_rigid / h^2 (PSD), 'exact' with the poses' "
               "second derivatives", "str", ("gn", "exact")),
    )  # fmt: skip


@register("pbd_nmdp", doc="PBD-NMDP (paper 002 Eq. 12): PBAD's step energy + nonconvex maximal dissipation, "
                          "first-order PGM (Algorithm 1) with adaptive sub-steps (Algorithm 2)")  # fmt: skip
class PbdNmdp(PgmIntegrator):
    """PBD-NMDP, first-order projected gradient method (paper 002, Eq. 12, 7-9, Algorithms 1-2)."""

    name = "pbd_nmdp"
    ZO = False
    supports_equality = True  # PBAD's penalty in Eq. 12 and the end-of-step projection (pbsim.dynamics.equality)
    spatial_tendons = False  # fixed tendons only (pbsim.dynamics.tendon: potentials of the step)
    tendon_potentials = True
    OPTIONS = _options(200, GAMMA0_FO)
    STEP = StepSpec(pbd_nmdp_step, extra=_extra, batched=BATCHED, info="info", features=PGM_FEATURES,
                    used=PGM_USED)
    HOOKS = (pbd_nmdp_prepare, pbd_nmdp_eval)

    def __init__(self, model, scene=None, **options):
        super().__init__(model, scene, **options)
        self.k_hessian = options.get("k_hessian", "gn")
        if self.k_hessian not in ("gn", "exact"):
            raise InputError(f"{self.name}: k_hessian must be 'gn' or 'exact', got {self.k_hessian!r}")
        self.pm = make_pbad_model(model)  # the bodies' second moments M~ (paper 000 Eq. 8)

    def make_x(self, B):
        npts = self.scene.kernel_arrays(self.model).npts
        return make_pbd_nmdp_extra(self.model, self.pm, npts, B, self.k_hessian == "exact", self.pgm_options())


@register("pbd_nmdp_zo", doc="PBD-ZONMDP (paper 002): pbd_nmdp with the zeroth-order PGM (Eq. 10-11: dv_x/dtheta "
                             "dropped from A)")  # fmt: skip
class PbdNmdpZo(PbdNmdp):
    """PBD-NMDP, zeroth-order projected gradient method (paper 002, Eq. 10-11)."""

    name = "pbd_nmdp_zo"
    ZO = True
    OPTIONS = _options(500, GAMMA0_ZO, zo=True)
    STEP = StepSpec(pbd_nmdp_step, extra=_extra, batched=BATCHED, info="info", features=PGM_FEATURES,
                    used=PGM_USED)
