"""Visual and collision shapes attached to a body (or to the world, body -1)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SHAPES = ("box", "sphere", "capsule", "cylinder", "mesh", "plane")


@dataclass
class Geometry:
    """One shape, placed in its body's frame by ``(R, p)``.

    ``size`` by shape: box -> half extents (3,); sphere -> (radius,); capsule and
    cylinder -> (radius, half length) along the local z axis; mesh -> scale (3,);
    plane -> (half x, half y) or (0, 0) for infinite.
    """

    name: str
    shape: str
    body: int
    R: np.ndarray
    p: np.ndarray
    size: np.ndarray
    role: str = "collision"  # "visual" | "collision"
    mesh_path: str | None = None
    rgba: np.ndarray = field(default_factory=lambda: np.array([0.7, 0.7, 0.75, 1.0]))
    link: str = ""  # the robot-file link (frame) this shape was declared on
    mesh_data: tuple | None = None  # (vertices (n, 3), faces (m, 3)) in the shape frame, when not from a file

    def load_mesh(self):
        """The mesh as a ``trimesh.Trimesh`` in the body frame (mesh shapes only)."""
        import trimesh

        if self.shape != "mesh":
            raise ValueError(f"geometry {self.name!r} is a {self.shape}, not a mesh")
        if self.mesh_data is not None:
            mesh = trimesh.Trimesh(np.array(self.mesh_data[0]), np.array(self.mesh_data[1]), process=False)
        else:
            mesh = trimesh.load(self.mesh_path, force="mesh", process=False)
        mesh.apply_scale(self.size)
        T = np.eye(4)
        T[:3, :3] = self.R
        T[:3, 3] = self.p
        mesh.apply_transform(T)
        return mesh


@dataclass
class Frame:
    """A named frame rigidly attached to a body: every link of the robot file is one.

    Links merged through fixed joints keep their frame here; ``body = -1`` is the world.
    """

    name: str
    body: int
    R: np.ndarray
    p: np.ndarray
