"""``ne_dry``: Newton-Euler with Coulomb dry friction, the baseline of paper 003 (PBFD, Sec. III-A/C,
Eq. 1, 2 and 7; notes/pbfd_nmdp.md A2 (B2)).

Semi-implicit Euler on the joint-space Newton-Euler equations (dense CRBA mass matrix, RNEA bias
forces, control / damping / passive joint forces through :func:`pbsim.control.solve.joint_forces`
like ``euler``) with the contact impulses of a velocity-level Stewart-Trinkle LCP: per active
contact point a normal impulse, a 4-direction polyhedral friction cone and its slack, solved by
Lemke's complementary pivoting (:mod:`pbsim.optim.lcp`), with an Anitescu/Baumgarte penetration
correction.  The equations and constants are in :mod:`.step`.

Options: ``mu`` (None: the scene's), ``margin`` (contact points closer than this to the
environment are in the LCP), ``baumgarte`` (fraction of a penetration corrected per step),
``max_iterations`` (Lemke's pivot cap; None: 100 + 10 x the LCP size), ``max_contacts`` (body-body
contact points in the LCP, at most: the deepest are kept, an overflow flags the step: not
converged, ``extra["contact_overflow"]``, a warning).  Diagnostics: iterations =
Lemke pivots of the step, residual = the LCP's complementarity residual, converged = the LCP was
solved, ``extra["active_contacts"]``.
"""
from __future__ import annotations

import math

from pbsim.errors import InputError
from pbsim.integrators.base import Integrator, Option, StepSpec, contact_equality_used, register
from pbsim.integrators.ne_dry.step import FEATURES, BATCHED, NeDryX, make_ne_dry_extra, ne_dry_step  # noqa: F401
from pbsim.integrators.pgm.wrench import (MAX_CONTACTS, MAX_CONTACTS_OPTION, check_max_contacts, overflow_warning,
                                          pair_capacity)

MARGIN = 0.01  # [m] default activation margin: points within 1 cm of the environment enter the LCP
BAUMGARTE = 0.2  # default fraction of a penetration depth pushed out per step (velocity bias 0.2 d / dt)


def _extra(integrator, B):
    I = integrator
    ks = I.scene.kernel_arrays(I.model)
    return make_ne_dry_extra(I.model, ks.npts, B, I.mu, I.margin, I.baumgarte, I.max_iterations,
                             pair_capacity(ks, I.max_contacts))


@register("ne_dry", doc="Newton-Euler + Coulomb dry friction: semi-implicit Euler, Stewart-Trinkle LCP by Lemke "
                        "(paper 003's baseline)")
class NeDry(Integrator):
    """Newton-Euler with dry friction (velocity-level LCP, Lemke)."""

    name = "ne_dry"
    supports_equality = True  # bilateral rows of the step (pbsim.integrators.velocity_level.equality)
    supports_fluid = True  # explicit at the step's start (joint_forces)
    clamps_effort = True  # clamp_velocity_step
    OPTIONS = (
        Option("mu", None, "Coulomb friction coefficient (None: the scene's mu)", "float"),
        Option("margin", MARGIN, "contact points with signed distance below this [m] enter the LCP", "float"),
        Option("baumgarte", BAUMGARTE, "fraction of a penetration depth corrected per step (0..1)", "float"),
        Option("max_iterations", None, "Lemke pivot cap per LCP (None: 100 + 10 x the LCP size)", "int"),
        MAX_CONTACTS_OPTION,
    )
    STEP = StepSpec(ne_dry_step, extra=_extra, batched=BATCHED, info="info", features=FEATURES, used=contact_equality_used)

    def __init__(self, model, scene=None, **options):
        super().__init__(model, scene, **options)
        mu = options.get("mu")
        self.mu = float(self.scene.mu if mu is None else mu)
        self.margin = float(options.get("margin", MARGIN))
        self.baumgarte = float(options.get("baumgarte", BAUMGARTE))
        maxit = options.get("max_iterations")
        self.max_iterations = 0 if maxit is None else int(maxit)
        if not (math.isfinite(self.mu) and self.mu >= 0.0):
            raise InputError(f"ne_dry: mu must be a finite number >= 0, got {mu!r}")
        if not (math.isfinite(self.margin) and self.margin >= 0.0):
            raise InputError(f"ne_dry: margin must be a finite number >= 0 [m], got {self.margin!r}")
        if not (0.0 <= self.baumgarte <= 1.0):
            raise InputError(f"ne_dry: baumgarte must be in [0, 1] (a fraction of the depth per step), "
                             f"got {self.baumgarte!r}")
        if maxit is not None and self.max_iterations < 1:
            raise InputError(f"ne_dry: max_iterations must be >= 1, got {maxit!r}")
        self.max_contacts = check_max_contacts("ne_dry", options.get("max_contacts", MAX_CONTACTS))

    def _step(self, state, control, dt):
        new, d = super()._step(state, control, dt)
        d.extra["active_contacts"] = d.extra.pop("objective").astype(int)
        d.extra["pivots"] = d.iterations
        over = self._x.ovf[:, 0].astype(int)
        d.extra["contact_overflow"] = over
        overflow_warning(self.name, over, self.max_contacts, "warn")
        return new, d
