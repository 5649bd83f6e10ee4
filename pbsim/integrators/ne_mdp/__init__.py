"""``ne_mdp``: NE-MDP, the baseline of paper 002 (NMDP, Pan & Hauser; notes/pbfd_nmdp.md B2):
forward Newton-Euler with the contact forces of the maximal dissipation principle over NMDP's
polytope wrench model, one convex QP per step.

    v(w) = v + dt H^^-1 (tau - C + sum_x J_x^T V_x w_x),   H^ = H + diag(arm)  (SPD's dt Kd, as MABA)
    w*   = argmin 1/2 v(w)^T H v(w)   over w_x >= 0, 1^T w_x <= 1
    q+   = q (+) dt v(w*)

(paper 002 Eq. 3, whose "-C" is "+C" with Eq. 1's sign convention; the contact vertices
``V_x = (k d^3 + zeta)(n + mu t^i)`` of :mod:`pbsim.contact.nmdp` evaluated at q).  The
equations, the contact set and the QP are in :mod:`.step`.

Options: ``k`` (cubic stiffness [N/m^3]; None: ``M g / (4 delta_ref^3)``, four points carry the
weight at the scene's delta_ref, 5 mm), ``zeta`` (capacity of candidate points out of contact [N];
None: ``1e-3 k delta_ref^3``), ``vx`` (friction directions per point, >= 3; default 4), ``margin``
(contact set: points within this of the environment at q or at the predicted ``q (+) dt v``; 2 cm),
``max_iterations`` (QP iteration cap; 10000) and ``tol`` (QP KKT residual, in units of the step's largest capacity; 1e-6),
``max_contacts`` (the body-body candidates of a step, at most; 256: on overflow the deepest are kept
and the step is flagged: not converged, ``extra["contact_overflow"]``, a warning),
``on_fail`` (a step whose QP did not converge: "warn", "raise" or "ignore"), ``spd`` (stable PD:
"tan", Tan et al.'s ``-Kp (q + dt v - qbar) - Kd (v+ - vbar)``, the note's B2 baseline, or "backward",
at the new state ``-Kp (q + dt v+ - qbar) - Kd (v+ - vbar)`` as in nmdp / pbd_nmdp; Tan's is unstable
on a light link once ``dt Kp`` exceeds about ``Kd``: with the Robosimian's feet and gains that is
ne_mdp's 7 ms divergence threshold, docs/benchmarks/nmdp.md).  mu is the scene's.
Diagnostics: iterations = QP iterations, residual = its KKT residual, converged = the QP reached
``tol`` (False also when the mass matrix could not be factored), ``extra["active_contacts"]``: the
candidate points of the step.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from pbsim.contact.nmdp import tangent_frame
from pbsim.errors import InputError, SimulationError
from pbsim.integrators.base import Integrator, Option, StepSpec, contact_equality_used, register
from pbsim.integrators.ne_mdp.step import (BATCHED, FEATURES, SPD_BACKWARD, SPD_TAN, NeMdpX,  # noqa: F401
                                          make_ne_mdp_extra, ne_mdp_step)

from pbsim.integrators.pgm.wrench import (MARGIN, MAX_CONTACTS, MAX_CONTACTS_OPTION, VX,  # noqa: F401
                                          WRENCH_OPTIONS, check_max_contacts, overflow_warning, pair_capacity,
                                          wrench_parameters)

MAX_ITERATIONS = 10000  # QP iteration cap (degenerate steps, every capacity saturated while settling, took up to ~2000)
# QP KKT residual (vertex forces over the step's largest capacity; QP scaled by its largest diagonal):
# a force error of ~1e-6 of the peak point load.  1e-9 left most steps of a Robosimian standing at rest
# (32 candidates, 128 weights, curvature ratio ~3e4 on the QP's range) at the 10000-iteration cap; at
# 1e-6 every step converged within 4900 iterations (docs/benchmarks/nmdp.md)
TOL = 1e-6


def _extra(integrator, B):
    I = integrator
    ks = I.scene.kernel_arrays(I.model)
    return make_ne_mdp_extra(
        I.model, ks.npts, B, I.frame, I.k, I.zeta, I.mu, I.vx, I.margin,
        I.max_iterations, I.tol, SPD_BACKWARD if I.spd == "backward" else SPD_TAN, pair_capacity(ks, I.max_contacts),
    )  # fmt: skip


@register("ne_mdp", doc="NE-MDP: forward Newton-Euler + maximal-dissipation contact over NMDP's polytope wrench, "
                        "one QP per step (paper 002's baseline)")  # fmt: skip
class NeMdp(Integrator):
    """NE-MDP (paper 002's baseline): forward Newton-Euler, MDP contact forces by one QP per step."""

    name = "ne_mdp"
    supports_equality = True  # bilateral rows of the step (pbsim.integrators.velocity_level.equality)
    supports_fluid = True  # explicit at the step's start (joint_forces)
    clamps_effort = True  # clamp_velocity_step
    OPTIONS = (
        *WRENCH_OPTIONS,
        Option("max_iterations", MAX_ITERATIONS, "QP iteration cap per step", "int"),
        Option("tol", TOL, "QP tolerance: KKT (natural) residual of the vertex forces / the step's largest "
               "capacity", "float"),
        Option("on_fail", "warn", "what a step whose QP did not converge does", "str", ("warn", "raise", "ignore")),
        Option("spd", "tan", "stable PD: Tan et al.'s (dt Kd implicit; the note's B2 baseline) or 'backward' "
               "(at the new state, dt Kd + dt^2 Kp implicit, as nmdp)", "str", ("tan", "backward")),
        MAX_CONTACTS_OPTION,
    )  # fmt: skip
    STEP = StepSpec(ne_mdp_step, extra=_extra, batched=BATCHED, info="info", features=FEATURES,
                    used=contact_equality_used)

    def __init__(self, model, scene=None, **options):
        super().__init__(model, scene, **options)
        sc = self.scene
        self.mu, self.k, self.zeta, self.vx = wrench_parameters("ne_mdp", model, sc, options)
        self.margin = options.get("margin", MARGIN)
        if not (isinstance(self.margin, (int, float)) and math.isfinite(self.margin) and self.margin >= 0.0):
            raise InputError(f"ne_mdp: margin must be a finite number >= 0 [m], got {self.margin!r}")
        self.max_iterations = options.get("max_iterations", MAX_ITERATIONS)
        if self.max_iterations is None or int(self.max_iterations) < 1:
            raise InputError(f"ne_mdp: max_iterations must be >= 1, got {self.max_iterations!r}")
        self.max_iterations = int(self.max_iterations)
        self.tol = options.get("tol", TOL)
        if self.tol is None or not (math.isfinite(float(self.tol)) and float(self.tol) > 0.0):
            raise InputError(f"ne_mdp: tol must be a finite number > 0, got {self.tol!r}")
        self.tol = float(self.tol)
        self.on_fail = options.get("on_fail", "warn")
        self.spd = options.get("spd", "tan")
        self.max_contacts = check_max_contacts("ne_mdp", options.get("max_contacts", MAX_CONTACTS))
        self.frame = tangent_frame(model)

    def _step(self, state, control, dt):
        if not (np.isfinite(state.q).all() and np.isfinite(state.v).all()):
            raise InputError("ne_mdp: the state holds NaN or inf (q or v)")
        new, d = super()._step(state, control, dt)
        d.extra["active_contacts"] = d.extra.pop("objective").astype(int)
        over = self._x.ovf[:, 0].astype(int)
        d.extra["contact_overflow"] = over
        overflow_warning(self.name, over, self.max_contacts, self.on_fail)
        bad = ~d.converged & (over == 0)
        if bad.any() and self.on_fail != "ignore":
            i = np.flatnonzero(bad)
            msg = (f"ne_mdp: the contact QP did not converge in {len(i)} of {len(bad)} trajectories (first: "
                   f"{i[0]}, KKT residual {d.residual[i[0]]:.3g} > tol {self.tol:g} after {d.iterations[i[0]]} "
                   f"iterations; raise max_iterations or tol)")  # fmt: skip
            if self.on_fail == "raise":
                raise SimulationError(msg)
            warnings.warn(msg, RuntimeWarning, stacklevel=3)
        return new, d
