"""Joint-level control: torques, PD and stable PD (paper 001)."""
from pbsim.control.control import Control

__all__ = ["Control"]
