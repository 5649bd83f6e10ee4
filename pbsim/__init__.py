"""pbsim: articulated-robot simulation with large-timestep integrators."""

from pbsim.dynamics.api import (
    aba,
    crba,
    difference,
    energy,
    forward_kinematics,
    frame_poses,
    fluid_force,
    gravcomp,
    integrate,
    kinetic_energy_gradient,
    point_jacobian,
    rnea,
    rnea_derivatives,
)
from pbsim.dynamics.data import Data
from pbsim.errors import (
    InertiaError,
    InputError,
    MeshNotFoundError,
    ParseError,
    PbsimError,
    PbsimWarning,
    SimulationError,
)
from pbsim.io import load
from pbsim.model import Model, ModelBuilder
from pbsim.model.compose import combine, free_object
from pbsim import integrators
from pbsim.control import Control, Reference, control_from_args, spd_forward
from pbsim.contact import Scene, contact_diagnostics, contact_query, default_scene, make_scene
from pbsim.integrators import State
from pbsim.integrators.pbfd import friction_for_mu
from pbsim.rollout import Trajectory, rollout  # noqa: E402  (the function shadows the module name)
from pbsim.backends.cpu import Stepper  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "load",
    "Model",
    "ModelBuilder",
    "combine",
    "free_object",
    "rollout",
    "Trajectory",
    "State",
    "Control",
    "Reference",
    "control_from_args",
    "spd_forward",
    "Scene",
    "make_scene",
    "default_scene",
    "contact_query",
    "contact_diagnostics",
    "friction_for_mu",
    "integrators",
    "Data",
    "Stepper",
    "aba",
    "rnea",
    "crba",
    "forward_kinematics",
    "frame_poses",
    "energy",
    "fluid_force",
    "gravcomp",
    "kinetic_energy_gradient",
    "rnea_derivatives",
    "point_jacobian",
    "integrate",
    "difference",
    "PbsimError",
    "ParseError",
    "MeshNotFoundError",
    "InertiaError",
    "InputError",
    "SimulationError",
    "PbsimWarning",
]
