"""Baseline integrators: semi-implicit Euler (paper 000 Eq. 3), explicit Euler, RK2/3/4.

Runge-Kutta stages live in the tangent space at q_k (Runge-Kutta-Munthe-Kaas), so RK keeps its
order with quaternions.  Forces (control, damping, penalty contact) come from
:func:`~pbsim.integrators.explicit.forces.forward_dynamics`; each method is a step kernel run by
the generic drivers (:class:`~pbsim.integrators.base.StepSpec`).
"""
from __future__ import annotations

import numpy as np

from pbsim.integrators.base import Integrator, StepSpec, register
from pbsim.integrators.explicit.forces import FEATURES, features_used
from pbsim.integrators.explicit.step import TABLEAUS, RKExtra, euler_step, rk_step


def _used(integrator, kc, ks):
    return features_used(kc, ks, integrator.model.k)


def _tableau(integrator, B):
    A, wts = TABLEAUS[integrator.tableau]
    return RKExtra(np.ascontiguousarray(A, np.float64), np.ascontiguousarray(wts, np.float64))


@register("euler", doc="semi-implicit (symplectic) Euler, paper 000 Eq. 3; SPD via MABA, implicit damping")
class SemiImplicitEuler(Integrator):
    """Semi-implicit Euler."""

    name = "euler"
    supports_fluid = True  # explicit in joint_forces, as MuJoCo's
    clamps_effort = True  # clamp_active_set
    supports_mimic = True
    supports_equality = True
    STEP = StepSpec(euler_step, features=FEATURES, used=_used)


class _RungeKutta(Integrator):
    tableau = "rk4"
    supports_fluid = True  # explicit at each stage, as MuJoCo's RK4
    clamps_effort = True
    supports_mimic = True
    supports_equality = True
    STEP = StepSpec(rk_step, extra=_tableau, features=FEATURES, used=_used)


@register("explicit_euler", doc="explicit (forward) Euler: q+ = q (+) dt v, v+ = v + dt qdd")
class ExplicitEuler(_RungeKutta):
    """Explicit Euler."""

    name = tableau = "explicit_euler"


@register("rk2", doc="explicit midpoint Runge-Kutta, order 2")
class RK2(_RungeKutta):
    """RK2 (midpoint)."""

    name = tableau = "rk2"


@register("rk3", doc="Kutta's third-order Runge-Kutta")
class RK3(_RungeKutta):
    """RK3."""

    name = tableau = "rk3"


@register("rk4", doc="classical fourth-order Runge-Kutta")
class RK4(_RungeKutta):
    """RK4."""

    name = tableau = "rk4"
