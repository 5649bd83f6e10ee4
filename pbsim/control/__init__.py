"""Joint-level control: torques, PD and stable PD (paper 001): gains and targets (``targets``),
DF / SF / MABA solvers (``dense``, ``sparse``, ``maba``), reference motions (``motions``)."""
from pbsim.control.control import Control
from pbsim.control.external import body_wrench_torque
from pbsim.control.maba import maba, spd_forward
from pbsim.control.targets import Reference, control_from_args, gains, load_targets, per_dof, save_targets

__all__ = ["Control", "body_wrench_torque", "Reference", "control_from_args", "gains", "per_dof", "load_targets",
           "save_targets", "maba", "spd_forward"]
