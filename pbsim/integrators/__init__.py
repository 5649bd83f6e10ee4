"""Time integrators, switchable by name: ``pbsim.integrators.make("rk4", model)``."""
from pbsim.integrators.base import (Diagnostics, Integrator, Option, State, available, describe, describe_options,
                                    make, register, validate_options)

__all__ = ["Integrator", "State", "Diagnostics", "Option", "available", "describe", "describe_options", "make",
           "register", "validate_options"]
