"""Visual and collision shapes attached to a body (or to the world, body -1)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SHAPES = ("box", "sphere", "capsule", "cylinder", "mesh", "plane", "ellipsoid", "hfield")


@dataclass
class Geometry:
    """One shape, placed in its body's frame by ``(R, p)``.

    ``size`` by shape: box -> half extents (3,); sphere -> (radius,); capsule and
    cylinder -> (radius, half length) along the local z axis; mesh -> scale (3,);
    plane -> (half x, half y) or (0, 0) for infinite; ellipsoid -> semi-axes (3,) along the local
    x, y, z; hfield -> MuJoCo's (radius_x, radius_y, elevation_z, base_z), its elevations in
    ``hfield`` (static shapes only).
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
    # contact filtering and parameters as the file gives them (MJCF; URDF shapes keep the defaults:
    # contype = conaffinity = 1, i.e. "may touch anything the contact rules allow")
    contype: int = 1
    conaffinity: int = 1
    margin: float = 0.0  # [m] the surface offset of MuJoCo's margin (contact at distance < margin)
    friction: float | None = None  # sliding friction from the file (None: the scene's mu)
    source_index: int = -1  # the geom's index in its file's compiled model (MJCF: MuJoCo's geom id)
    # hfield shapes: (asset name, (nrow, ncol) elevations in [0, 1] as MuJoCo keeps them; row 0 at -y,
    # columns along x; the surface is size[2] * elevation above the shape's frame)
    hfield: tuple | None = None

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
class ContactPair:
    """Two shapes that may touch, as the robot file decides (MJCF: MuJoCo's filter rules and
    ``<pair>`` elements); ``geom1``/``geom2`` index ``Model.geoms``.  ``margin`` (m) offsets the
    surfaces (contact where their distance < margin), ``friction`` is the pair's sliding friction
    (None: the scene's ``mu``), ``explicit`` marks an MJCF ``<pair>`` (``name`` its name)."""

    geom1: int
    geom2: int
    margin: float = 0.0
    friction: float | None = None
    explicit: bool = False
    name: str = ""


@dataclass
class Frame:
    """A named frame rigidly attached to a body: every link of the robot file is one.

    Links merged through fixed joints keep their frame here; ``body = -1`` is the world.
    """

    name: str
    body: int
    R: np.ndarray
    p: np.ndarray
