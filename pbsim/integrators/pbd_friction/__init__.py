"""The PBD friction baseline of paper 003 (B1 of the implementation note), the integrator
``pbd_friction``: friction as an energy (Eq. 11), minimised with the rest of PBAD's objective.

The step minimises (Eq. 6 with the contact of Eq. 9 + Eq. 11)

    E(q) + C_par P_par,   P_par = sum_k |u_k|^(beta+1) d_k^(gamma+1),   u_k = T_k (x_k(q) - x_k(q_k))

with ``E`` PBFD's (PBAD's order-2 inertia, gravity and joint-space terms + ``C_perp P_perp``,
``P_perp = sum_k d_k^(alpha+1) / (alpha+1)``) and the same constants, defaults and checks as
``pbfd`` (alpha, beta, gamma, C_perp, the mu-matched C_par rule).  Its true gradient holds the
friction force ``(beta+1) |u|^(beta-1) d^(gamma+1) u`` and the spurious normal force
``f* = (gamma+1) |u|^(beta+1) d^gamma n`` of Eq. 12, which is kept: it is what this baseline is
for (past a threshold of C_par it lifts a sliding body out of contact, Fig. 5).  The contact
model is PBFD's (:mod:`pbsim.contact.pbfd`, its energy form), the kernels are PBAD's and PBFD's
(:mod:`.step`); this file is the class and its options.

Optimizers (paper 003 Sec. V, Table I, on Eq. 6): ``lm``, Levenberg-Marquardt on E with its
exact Hessian (PBAD's solver); ``jtj``, JTJ-LM on ``|grad E|^2 / 2`` (PBFD's solver: the
residual is ``grad E``); ``lbfgs``, LBFGS on E (PBAD's, preconditioned by ``dt^2 M^-1``).
With ``hessian="gn"`` the LM runs on a Gauss-Newton Hessian of E instead (PBAD's ``gn``).
"""
from __future__ import annotations

from dataclasses import replace

from pbsim.errors import InputError
from pbsim.integrators.base import Option, register
from pbsim.integrators.pbd_friction.step import STEP_JTJ, STEP_LBFGS, STEP_LM
from pbsim.integrators.pbfd import Pbfd

__all__ = ["PbdFriction"]


@register("pbd_friction", doc="PBD friction baseline (paper 003 Eq. 11): min E + C_par sum |u|^(beta+1) d^(gamma+1), "
          "spurious normal force kept")
class PbdFriction(Pbfd):
    """PBD with friction as an energy (paper 003 Eq. 11, B1 of the note): LM on E (default),
    JTJ-LM on |grad E|^2 / 2, or LBFGS on E; convergence on ``|grad E|_inf <= rtol M g x 1 m``.
    Options, defaults, the sub-step fallback of an unconverged step and ``Diagnostics.extra``
    are pbfd's (:class:`pbsim.integrators.pbfd.Pbfd`; ``objective``: E for lm and lbfgs, GE for
    jtj).  ``c_friction=None``: C_par matched to the scene's mu at 0.1 m/s for the step's dt
    (the energy form's rule, :func:`pbsim.contact.pbfd.friction_constant` with ``energy``:
    ``mu_eff = 2 (C_par / C_perp) dt |v_t|`` with the default exponents, not counting f*).
    ``residual(q, v, qeval, dt)`` returns ``(E, grad E, hess E)`` (also as :meth:`objective`)."""

    name = "pbd_friction"
    ENERGY = True
    STEP = STEP_LM
    STEPS = {"lm": STEP_LM, "jtj": STEP_JTJ, "lbfgs": STEP_LBFGS}
    OPTIONS = tuple(
        replace(o, **{
            "optimizer": dict(choices=("lm", "jtj", "lbfgs"),
                              doc="minimiser: LM on E with its exact Hessian, JTJ-LM on |grad E|^2/2 (QR-solved), "
                                  "or LBFGS on E"),
            "max_iterations": dict(doc="solver iteration limit (None: 50 for lm/jtj, 500 for lbfgs)"),
            "rtol": dict(doc="converged when |grad E|_inf <= rtol * (M g x 1 m), the robot's weight as an energy scale"),
            "substep": dict(doc="an unconverged step is redone as two halves, recursively, up to this many levels "
                                "(0: never)"),
            "c_friction": dict(doc="C_par, friction energy C_par |u|^(beta+1) d^(gamma+1) per point (None: C_par "
                                   "matched to the scene's mu at 0.1 m/s for the step's dt, ~ dt^-beta)"),
            "beta": dict(doc="friction exponent, |u|^(beta+1) (> 0)"),
            "gamma": dict(doc="friction exponent on the depth, d^(gamma+1) (> 0)"),
        }.get(o.name, {}))
        for o in Pbfd.OPTIONS) + (
        Option("hessian", "exact", "optimizer='lm': E's exact Hessian, or Gauss-Newton (inertia J^T M J / dt^2 + the "
               "points' J^T K J, without the poses' second derivatives: the note's 'JTJ-LM on Eq. 6')", "str",
               ("exact", "gn")),
    )

    def __init__(self, model, scene=None, **options):
        o = dict(options)
        self.hessian = o.pop("hessian", "exact")
        if self.hessian not in ("exact", "gn"):
            raise InputError(f"pbd_friction hessian must be 'exact' or 'gn', got {self.hessian!r}")
        super().__init__(model, scene, **o)
        self.options = options

    def objective(self, q, v, qeval, dt, control=None, hessian=True):
        """``(E, grad E, hess E)`` of the step objective at ``qeval`` (batched arrays)."""
        return self.residual(q, v, qeval, dt, control, jacobian=hessian)
