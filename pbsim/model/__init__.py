from pbsim.model.builder import JointSpec, LinkSpec, ModelBuilder
from pbsim.model.geometry import Frame, Geometry
from pbsim.model.model import Model
from pbsim.model.notes import ModelWarning

__all__ = ["Model", "ModelBuilder", "LinkSpec", "JointSpec", "Geometry", "Frame", "ModelWarning"]
