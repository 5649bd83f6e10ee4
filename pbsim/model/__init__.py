from pbsim.model.builder import JointSpec, LinkSpec, ModelBuilder
from pbsim.model.geometry import Frame, Geometry
from pbsim.model.model import Model

__all__ = ["Model", "ModelBuilder", "LinkSpec", "JointSpec", "Geometry", "Frame"]
