"""Time integrators, switchable by name: ``pbsim.integrators.make("rk4", model)``."""
from pbsim.integrators.base import Diagnostics, Integrator, State, available, describe, make, register

__all__ = ["Integrator", "State", "Diagnostics", "available", "describe", "make", "register"]
