"""pbsim: articulated-robot simulation with large-timestep integrators."""
from pbsim.dynamics.api import (aba, crba, difference, energy, forward_kinematics, frame_poses, integrate,
                                point_jacobian, rnea)
from pbsim.errors import InertiaError, InputError, MeshNotFoundError, ParseError, PbsimError, SimulationError
from pbsim.io import load
from pbsim.model import Model, ModelBuilder

__version__ = "0.1.0"

__all__ = ["load", "Model", "ModelBuilder", "aba", "rnea", "crba", "forward_kinematics", "frame_poses",
           "energy", "point_jacobian", "integrate", "difference", "PbsimError", "ParseError",
           "MeshNotFoundError", "InertiaError", "InputError", "SimulationError"]


def __getattr__(name):  # lazy: rollout and integrators pull in more kernels
    if name in ("rollout", "Trajectory"):
        from pbsim import rollout as _r

        return getattr(_r, name)
    if name == "integrators":
        import pbsim.integrators as _i

        return _i
    raise AttributeError(f"module 'pbsim' has no attribute {name!r}")
