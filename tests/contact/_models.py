"""Small free-body models for the contact tests."""

import numpy as np

from pbsim.model.builder import LinkSpec, ModelBuilder
from pbsim.model.geometry import Geometry


def free_body(shape: str, size, mass: float = 1.0):
    """One free-floating body (box half extents / sphere radius) with its collision shape."""
    size = np.asarray(size, float)
    if shape == "box":
        a, b, c = 2 * size
        I = mass / 12 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    else:
        I = np.eye(3) * 0.4 * mass * size[0] ** 2
    g = Geometry("g", shape, 0, np.eye(3), np.zeros(3), size)
    mb = ModelBuilder("body")
    mb.add_link(LinkSpec("body", mass, np.zeros(3), I, [g]))
    return mb.build(floating_base=True)
