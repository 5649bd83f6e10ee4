"""Time integrators, switchable by name: ``pbsim.integrators.make("rk4", model)``.

One folder per method (``explicit/``, ``pbad/``, ``variational/`` ...), each registering its
classes with an option spec and, where it has one, a per-trajectory step kernel; see
:mod:`pbsim.integrators.base` for the contract."""
from pbsim.integrators.base import (Diagnostics, Integrator, State, StepSpec, available, describe, describe_options,
                                    make, make_batched, register, step_spec, validate_options)
from pbsim.integrators.options import Option

__all__ = ["Integrator", "State", "Diagnostics", "Option", "StepSpec", "available", "describe", "describe_options",
           "make", "make_batched", "register", "step_spec", "validate_options"]
