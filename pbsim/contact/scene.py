"""Scene: the environment and the contact parameters of one simulation.

The kernels read a :class:`KScene` namedtuple.  This first version only knows an optional
ground plane and robot contact points given explicitly; the contact module grows it
(heightfields, meshes via signed-distance grids, sampled contact points).
"""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, field

import numpy as np

KScene = namedtuple("KScene", "npts pt_body pt_local pt_radius plane_n plane_d stiffness damping mu")


@dataclass
class Scene:
    """Environment + penalty-contact parameters.  ``Scene()`` is empty space (no contact)."""

    ground: bool = False
    plane_normal: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    plane_offset: float = 0.0
    stiffness: float = 0.0
    damping: float = 0.0
    mu: float = 0.0
    points_body: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    points_local: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    points_radius: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def kernel_arrays(self, model) -> KScene:
        n = len(self.points_body) if self.ground else 0
        return KScene(n, np.ascontiguousarray(self.points_body, np.int32),
                      np.ascontiguousarray(self.points_local, np.float64).reshape(-1, 3),
                      np.ascontiguousarray(self.points_radius, np.float64),
                      np.asarray(self.plane_normal, np.float64), float(self.plane_offset),
                      float(self.stiffness), float(self.damping), float(self.mu))
