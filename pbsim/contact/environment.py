"""Static environment geometry: planes, heightfields, boxes, spheres, capsules and triangle-mesh
terrain (signed-distance grid built at load time).

Every shape defines a signed distance ``phi`` (> 0 in free space, < 0 inside) and the outward
normal ``grad phi``; the environment is their union (min of phi).  The kernels are in
:mod:`pbsim.contact.query`; this module validates input and packs the arrays.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pbsim.errors import InputError


class ContactInputError(InputError):
    """Bad environment / contact input (names the value at fault)."""


class EmptyMeshError(ContactInputError):
    """A terrain mesh file holds no triangles."""


class OpenMeshError(ContactInputError):
    """An open (non-watertight) terrain mesh was refused (``open_mesh="error"``)."""


class GridBudgetError(ContactInputError, MemoryError):
    """A signed-distance grid would exceed the memory budget; ``.requested`` holds the bytes."""

    def __init__(self, msg, requested: int, budget: int):
        super().__init__(msg)
        self.requested = requested
        self.budget = budget


def _vec(x, n, what):
    a = np.asarray(x, dtype=np.float64).reshape(-1)
    if a.shape != (n,) or not np.all(np.isfinite(a)):
        raise ContactInputError(f"{what} must be {n} finite numbers, got {x!r}")
    return a


def _pos(x, what):
    x = float(x)
    if not (np.isfinite(x) and x > 0):
        raise ContactInputError(f"{what} must be a positive finite number, got {x!r}")
    return x


@dataclass
class Plane:
    """Half-space ``n . x <= offset`` is solid; ``phi = n . x - offset`` (n normalised)."""

    normal: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    offset: float = 0.0

    def __post_init__(self):
        n = _vec(self.normal, 3, "plane normal")
        ln = np.linalg.norm(n)
        if ln < 1e-12:
            raise ContactInputError(f"plane normal must be non-zero, got {self.normal!r}")
        self.normal = n / ln
        self.offset = float(self.offset)
        if not np.isfinite(self.offset):
            raise ContactInputError(f"plane offset must be finite, got {self.offset!r}")


@dataclass
class Sphere:
    center: np.ndarray
    radius: float

    def __post_init__(self):
        self.center = _vec(self.center, 3, "sphere center")
        self.radius = _pos(self.radius, "sphere radius")


@dataclass
class Box:
    """Box with half extents ``half``, pose ``(R, p)`` in the world."""

    half: np.ndarray
    R: np.ndarray = field(default_factory=lambda: np.eye(3))
    p: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def __post_init__(self):
        self.half = _vec(self.half, 3, "box half extents")
        if np.any(self.half <= 0):
            raise ContactInputError(f"box half extents must be > 0, got {self.half.tolist()}")
        R = np.asarray(self.R, np.float64)
        if R.shape != (3, 3) or not np.allclose(R.T @ R, np.eye(3), atol=1e-9):
            raise ContactInputError("box rotation R must be a 3x3 rotation matrix")
        self.R = R
        self.p = _vec(self.p, 3, "box position")


@dataclass
class Capsule:
    """Segment ``a``-``b`` swept by a sphere of ``radius``."""

    a: np.ndarray
    b: np.ndarray
    radius: float

    def __post_init__(self):
        self.a = _vec(self.a, 3, "capsule end a")
        self.b = _vec(self.b, 3, "capsule end b")
        self.radius = _pos(self.radius, "capsule radius")


def _rotation(R, what):
    R = np.asarray(R, np.float64)
    if R.shape != (3, 3) or not np.all(np.isfinite(R)) or not np.allclose(R.T @ R, np.eye(3), atol=1e-9) \
            or np.linalg.det(R) < 0:
        raise ContactInputError(f"{what} rotation R must be a 3x3 rotation matrix, got {np.asarray(R).tolist()}")
    return np.ascontiguousarray(R)


@dataclass
class Cylinder:
    """Solid cylinder of ``radius``, half height ``half_height`` along its frame's z, pose ``(R, p)``
    in the world (MuJoCo's cylinder geom)."""

    radius: float
    half_height: float
    R: np.ndarray = field(default_factory=lambda: np.eye(3))
    p: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def __post_init__(self):
        self.radius = _pos(self.radius, "cylinder radius")
        self.half_height = _pos(self.half_height, "cylinder half height")
        self.R = _rotation(self.R, "cylinder")
        self.p = _vec(self.p, 3, "cylinder position")


@dataclass
class Ellipsoid:
    """Solid ellipsoid of semi-axes ``radii`` along its frame's x, y, z, pose ``(R, p)`` in the world
    (MuJoCo's ellipsoid geom); its exact distance by Newton's method (:mod:`pbsim.contact.sdf`)."""

    radii: np.ndarray
    R: np.ndarray = field(default_factory=lambda: np.eye(3))
    p: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def __post_init__(self):
        self.radii = _vec(self.radii, 3, "ellipsoid semi-axes")
        if np.any(self.radii <= 0):
            raise ContactInputError(f"ellipsoid semi-axes must be > 0, got {self.radii.tolist()}")
        self.R = _rotation(self.R, "ellipsoid")
        self.p = _vec(self.p, 3, "ellipsoid position")


@dataclass
class HeightField:
    """``heights[i, j]`` is the ground height at ``(x0 + i dx, y0 + j dy)`` over ``extents =
    (x0, x1, y0, y1)``; bilinear in between, edge values extended outside.

    ``phi = (z - h(x, y)) / sqrt(1 + |grad h|^2)``: the vertical gap projected on the normal
    ``(-h_x, -h_y, 1)/norm`` (exact on planar patches; first order elsewhere).

    ``R``, ``p``: the pose of the frame the heights and extents are given in (None: the world's);
    ``bounded``: no contact outside the x-y extents (MuJoCo's hfield) instead of the edge heights
    extended; ``triangles``: each cell two triangles (MuJoCo's hfield surface: planar pieces, phi
    exact on them) instead of bilinear.  MJCF ``<hfield>`` geoms: :meth:`from_mjcf`."""

    heights: np.ndarray
    extents: tuple = (0.0, 1.0, 0.0, 1.0)
    R: np.ndarray | None = None
    p: np.ndarray | None = None
    bounded: bool = False
    triangles: bool = False

    def __post_init__(self):
        H = np.asarray(self.heights, np.float64)
        if H.ndim != 2 or H.shape[0] < 2 or H.shape[1] < 2 or not np.all(np.isfinite(H)):
            raise ContactInputError(f"heightfield must be a finite 2-D array of at least 2x2, got shape "
                                    f"{np.shape(self.heights)}")
        ext = _vec(self.extents, 4, "heightfield extents (x0, x1, y0, y1)")
        if not (ext[1] > ext[0] and ext[3] > ext[2]):
            raise ContactInputError(f"heightfield extents need x1 > x0 and y1 > y0, got {ext.tolist()}")
        self.heights = np.ascontiguousarray(H)
        self.extents = tuple(ext)
        if self.R is not None or self.p is not None:
            self.R = _rotation(np.eye(3) if self.R is None else self.R, "heightfield")
            self.p = _vec(np.zeros(3) if self.p is None else self.p, 3, "heightfield position")
        self.bounded = bool(self.bounded)
        self.triangles = bool(self.triangles)

    @classmethod
    def from_mjcf(cls, size, data, R=None, p=None) -> "HeightField":
        """MuJoCo's hfield: ``size = (radius_x, radius_y, elevation_z, base_z)``, ``data`` (nrow, ncol)
        elevations (row 0 at ``y = -radius_y``, columns along x), the surface ``elevation_z * data``
        above the geom frame ``(R, p)``; bounded to its rectangle; each cell MuJoCo's two
        triangles.  MuJoCo's solid ends ``base_z`` under the frame, pbsim's does not."""
        size = _vec(size, 4, "hfield size (radius_x, radius_y, elevation_z, base_z)")
        if np.any(size[:2] <= 0) or size[2] < 0:
            raise ContactInputError(f"hfield size needs radius_x, radius_y > 0 and elevation_z >= 0, got "
                                    f"{size.tolist()}")
        D = np.asarray(data, np.float64)
        if D.ndim != 2:
            raise ContactInputError(f"hfield data must be a 2-D (nrow, ncol) array, got shape {D.shape}")
        H = size[2] * D.T  # heights[i, j] at (x_i, y_j)
        ext = (-size[0], size[0], -size[1], size[1])
        R = np.eye(3) if R is None else np.asarray(R, np.float64)
        p = np.zeros(3) if p is None else np.asarray(p, np.float64)
        if np.array_equal(R, np.eye(3)):  # axis-aligned: shift, no pose
            return cls(H + p[2], (ext[0] + p[0], ext[1] + p[0], ext[2] + p[1], ext[3] + p[1]), bounded=True,
                       triangles=True)
        return cls(H, ext, R, p, bounded=True, triangles=True)

    @classmethod
    def from_image(cls, path, extents, z_scale: float = 1.0, z_offset: float = 0.0) -> "HeightField":
        """Grayscale image -> heights ``z_offset + z_scale * gray`` (gray in [0, 1]); image rows
        run along -y (top row = y1), columns along +x."""
        from PIL import Image

        p = Path(path)
        if not p.is_file():
            raise ContactInputError(f"heightfield image {str(path)!r} does not exist")
        img = np.asarray(Image.open(p).convert("F"), np.float64)
        img = img / 255.0
        return cls(z_offset + z_scale * img[::-1].T, extents)


@dataclass
class MeshTerrain:
    """Triangle mesh turned into a signed-distance grid (see :mod:`pbsim.contact.sdf_grid`)."""

    phi: np.ndarray  # (nx, ny, nz) float32
    origin: np.ndarray  # (3,) position of node (0, 0, 0)
    spacing: float
    closed: bool
    source: str = ""
    ntri: int = 0
    band: float = 0.0  # distances are exact up to this, clamped beyond

    @property
    def nbytes(self) -> int:
        return int(self.phi.nbytes)

    @property
    def bound(self) -> float:
        """Interpolation error bound of the grid: ``(sqrt(3)/2) * spacing``."""
        return 0.5 * math.sqrt(3.0) * self.spacing

    @classmethod
    def from_file(cls, path, **kw) -> "MeshTerrain":
        import trimesh

        p = Path(path)
        if not p.is_file():
            raise ContactInputError(f"terrain mesh {str(path)!r} does not exist")
        try:
            mesh = trimesh.load(str(p), force="mesh", process=True)
        except Exception as e:  # trimesh raises many kinds
            raise ContactInputError(f"terrain mesh {str(path)!r} could not be read: {e}") from e
        return cls.from_mesh(mesh, source=str(path), **kw)

    @classmethod
    def from_mesh(cls, mesh, spacing: float = 0.02, padding: float = 0.2, exact_band: float = 0.1,
                  max_bytes: int = 512 * 2**20, open_mesh: str = "height", transform=None,
                  source: str = "<mesh>") -> "MeshTerrain":
        """``spacing`` grid step (m); ``padding`` margin around the mesh bounds (m); distances are
        exact up to ``exact_band`` (m, rounded up to whole cells) and clamped to it beyond; ``max_bytes`` budget for the build (8 bytes per node);
        ``open_mesh``: "height" (an open mesh is a height surface: solid below its highest
        crossing of each vertical line) or "error" (raise :class:`OpenMeshError`).  ``transform``
        (4x4) places the mesh; "vertical" is the mesh file's own +z when its rotation is a signed
        axis permutation (z-up terrain under a y-up robot), world +z otherwise."""
        from pbsim.contact.sdf_grid import build_sdf_grid

        spacing = _pos(spacing, "terrain grid spacing")
        padding = float(padding)
        if not (np.isfinite(padding) and padding >= 0):
            raise ContactInputError(f"terrain padding must be >= 0, got {padding!r}")
        if open_mesh not in ("height", "error"):
            raise ContactInputError(f"open_mesh must be 'height' or 'error', got {open_mesh!r}")
        V = np.asarray(getattr(mesh, "vertices", np.zeros((0, 3))), np.float64)
        F = np.asarray(getattr(mesh, "faces", np.zeros((0, 3))), np.int64)
        if len(F) == 0 or len(V) == 0:
            raise EmptyMeshError(f"terrain mesh {source!r} has no triangles")
        if not np.all(np.isfinite(V)):
            raise ContactInputError(f"terrain mesh {source!r} has non-finite vertices")
        perm = None
        if transform is not None:
            T = np.asarray(transform, np.float64)
            A = np.abs(T[:3, :3])
            if np.allclose(A.sum(0), 1.0, atol=1e-12) and np.allclose(A.sum(1), 1.0, atol=1e-12) and \
                    np.allclose(A.max(1), 1.0, atol=1e-12):
                # signed axis permutation (e.g. z-up file -> y-up model): build the grid in the
                # mesh's own frame, so the open-mesh height rule runs along the FILE's +z, then
                # permute the grid's axes (exact: nodes map onto nodes)
                perm = (np.argmax(A, axis=1), np.sign(T[np.arange(3), np.argmax(A, axis=1)]), T[:3, 3].copy())
            else:
                V = V @ T[:3, :3].T + T[:3, 3]
        closed = bool(mesh.is_watertight) and bool(mesh.is_winding_consistent)
        if not closed and open_mesh == "error":
            raise OpenMeshError(f"terrain mesh {source!r} is not watertight (open_mesh='error')")
        if not closed:
            F = envelope_faces(V, F)
        lo = V.min(axis=0) - padding
        hi = V.max(axis=0) + padding
        shape = tuple(int(math.ceil((hi[i] - lo[i]) / spacing)) + 1 for i in range(3))
        shape = tuple(max(s, 2) for s in shape)
        nodes = shape[0] * shape[1] * shape[2]
        need = 8 * nodes
        if need > max_bytes:
            raise GridBudgetError(
                f"terrain {source!r}: SDF grid {shape[0]}x{shape[1]}x{shape[2]} at spacing {spacing} m needs "
                f"{need / 2**20:.1f} MiB, over the budget of {max_bytes / 2**20:.1f} MiB "
                f"(raise max_bytes or the spacing)", need, max_bytes)
        band = max(2, int(math.ceil(float(exact_band) / spacing)))
        phi = build_sdf_grid(V, F, lo, spacing, shape, closed, band)
        if perm is not None:
            col, sgn, t = perm
            phi = phi.transpose(tuple(int(c) for c in col))
            org = np.zeros(3)
            for a in range(3):
                n_a = phi.shape[a]
                if sgn[a] > 0:
                    org[a] = lo[col[a]] + t[a]
                else:
                    org[a] = -(lo[col[a]] + (n_a - 1) * spacing) + t[a]
                    phi = np.flip(phi, axis=a)
            phi, lo = np.ascontiguousarray(phi), org
        return cls(phi, lo, spacing, closed, source, len(F), band * spacing)


def envelope_faces(V, F, tol: float = 1e-6, eps: float = 1e-4):
    """Faces of an open mesh that bound its height solid: faces whose centroid is the highest
    crossing of its vertical line (within ``tol``), and near-vertical faces (walls, |n_z| < 0.05)
    that rise above the top of at least one of the two columns beside them (``eps`` either side
    of the centroid, along the face normal).  Hidden faces are dropped -- the underside of a
    terrain slab, and walls buried under the top surface (drc_rough_terrain.stl has block sides
    continuing below the ground top: kept, they gave inside points wrong normals up to 111 deg) --
    so inside distances are distances to the height solid's own boundary."""
    import trimesh

    mesh = trimesh.Trimesh(V, F, process=False)
    C = V[F].mean(axis=1)
    N = mesh.face_normals
    nz = np.abs(N[:, 2])
    zup = V[:, 2].max() + 1.0

    def top_of(P):
        t = np.full(len(P), -np.inf)
        locs, ri, _ = mesh.ray.intersects_location(np.c_[P[:, :2], np.full(len(P), zup)],
                                                   np.tile([0.0, 0.0, -1.0], (len(P), 1)), multiple_hits=False)
        t[ri] = locs[:, 2]
        return t

    keep = C[:, 2] >= top_of(C) - tol
    wall = np.where(nz < 0.05)[0]
    if len(wall):
        nh = N[wall].copy()
        nh[:, 2] = 0.0
        nh /= np.maximum(np.linalg.norm(nh, axis=1), 1e-12)[:, None]
        zt = V[F[wall]][:, :, 2].max(axis=1)
        above = (zt > top_of(C[wall] + eps * nh) + tol) | (zt > top_of(C[wall] - eps * nh) + tol)
        keep[wall[above]] = True
    return F[keep]


SHAPES_ENV = (Plane, Sphere, Box, Capsule, HeightField, MeshTerrain, Cylinder, Ellipsoid)


def pack_environment(items) -> dict:
    """Arrays for :class:`pbsim.contact.scene.KScene` from a list of environment shapes."""
    pl, sp, bx, cp, hfm, hfg, hfd, grm, grg, grd = [], [], [], [], [], [], [], [], [], []
    cy, el = [], []
    hoff = goff = 0
    for it in items:
        if isinstance(it, Plane):
            pl.append([*it.normal, it.offset])
        elif isinstance(it, Sphere):
            sp.append([*it.center, it.radius])
        elif isinstance(it, Box):
            bx.append([*it.R.reshape(-1), *it.p, *it.half])
        elif isinstance(it, Capsule):
            cp.append([*it.a, *it.b, it.radius])
        elif isinstance(it, HeightField):
            nx, ny = it.heights.shape
            x0, x1, y0, y1 = it.extents
            posed = it.R is not None
            hfm.append([hoff, nx, ny, (1 if posed else 0) | (2 if it.bounded else 0) | (4 if it.triangles else 0)])
            hfg.append([x0, y0, (x1 - x0) / (nx - 1), (y1 - y0) / (ny - 1),
                        *(it.R.reshape(-1) if posed else np.zeros(9)), *(it.p if posed else np.zeros(3))])
            hfd.append(it.heights.reshape(-1))
            hoff += nx * ny
        elif isinstance(it, MeshTerrain):
            nx, ny, nz = it.phi.shape
            grm.append([goff, nx, ny, nz])
            grg.append([*it.origin, it.spacing])
            grd.append(it.phi.reshape(-1))
            goff += nx * ny * nz
        elif isinstance(it, Cylinder):
            cy.append([*it.R.reshape(-1), *it.p, it.radius, it.half_height])
        elif isinstance(it, Ellipsoid):
            el.append([*it.R.reshape(-1), *it.p, *it.radii])
        else:
            raise ContactInputError(f"unknown environment item {it!r}; expected one of "
                                    f"{[c.__name__ for c in SHAPES_ENV]}")

    def arr(x, w, dt=np.float64):
        return np.ascontiguousarray(np.array(x, dt).reshape(-1, w))

    return dict(
        env_plane=arr(pl, 4), env_sphere=arr(sp, 4), env_box=arr(bx, 15), env_capsule=arr(cp, 7),
        hf_meta=arr(hfm, 4, np.int64), hf_geom=arr(hfg, 16),
        hf_data=np.concatenate(hfd) if hfd else np.zeros(1),
        gr_meta=arr(grm, 4, np.int64), gr_geom=arr(grg, 4),
        gr_data=(grd[0] if len(grd) == 1 else np.concatenate(grd).astype(np.float32)) if grd
        else np.zeros(1, np.float32),
        env_cylinder=arr(cy, 14), env_ellipsoid=arr(el, 15))


_PACK_KINDS = ("env_plane", "env_sphere", "env_box", "env_capsule", "hf_meta", "gr_meta", "env_cylinder",
               "env_ellipsoid")


def packed_order(items) -> list[int]:
    """The position of each of ``items`` in :func:`pack_environment`'s order (planes, spheres,
    boxes, capsules, heightfields, grids, cylinders, ellipsoids; list order within a kind): the bit
    of an environment mask (:func:`pbsim.contact.query.env_sdf`)."""
    kinds = SHAPES_ENV
    kind = [next(i for i, c in enumerate(kinds) if isinstance(it, c)) for it in items]
    order = sorted(range(len(items)), key=lambda i: (kind[i], i))
    pos = [0] * len(items)
    for p, i in enumerate(order):
        pos[i] = p
    return pos


def environment_size(packed: dict) -> int:
    """Number of shapes in the arrays of :func:`pack_environment`."""
    return sum(int(packed[k].shape[0]) for k in _PACK_KINDS)


def world_environment(model, spacing: float = 0.02, padding: float = 0.2, max_bytes: int = 512 * 2**20,
                      open_mesh: str = "height", exact_band: float = 0.1,
                      roles=("collision",), geoms=None, sources: list | None = None,
                      hfield_data=None) -> tuple[list, list]:
    """Environment shapes from the model's world geometry (``model.geoms`` with ``body < 0`` declared
    on the world itself, e.g. MJCF worldbody geoms; shapes of robot links welded to the world by a
    fixed base are not environment), placed by their ``(R, p)`` in world coordinates.

    plane -> infinite :class:`Plane` through ``p`` with normal ``R[:, 2]`` (MuJoCo planes collide
    as infinite planes; their size is only for rendering); box -> :class:`Box`; sphere ->
    :class:`Sphere`; capsule (radius, half length along local z) -> :class:`Capsule`; mesh ->
    :class:`MeshTerrain` (signed-distance grid, ``spacing``/``padding``/``max_bytes``/``open_mesh``
    ``exact_band`` as :meth:`MeshTerrain.from_mesh`); cylinder -> :class:`Cylinder`; ellipsoid ->
    :class:`Ellipsoid`; hfield -> :meth:`HeightField.from_mjcf` (its data replaced by
    ``hfield_data[asset name]`` when given: MuJoCo's run-time data, :func:`pbsim.io.mjcf.load_mjcf`).
    Returns ``(shapes, skipped)`` with ``skipped`` naming the geoms that have no environment
    counterpart.  ``geoms``: the indices in ``model.geoms`` to turn into shapes, in this order,
    instead of the rule above (the contact rules' world geoms: :mod:`pbsim.contact.filter`);
    ``sources``: a list that gets the geom index of every shape made."""
    import trimesh

    env, skipped = [], []
    picked = geoms is not None
    given = {}
    if hfield_data is not None:
        if not isinstance(hfield_data, dict):
            raise ContactInputError(f"hfield_data must be a dict {{hfield name: elevations}}, got {hfield_data!r}")
        known = {g.hfield[0] for g in model.geoms if g.shape == "hfield" and g.hfield is not None}
        for k, v in hfield_data.items():
            if k not in known:
                raise ContactInputError(f"hfield_data names hfield {k!r}; model {model.name!r} has "
                                        f"{sorted(known) or 'none'}")
            try:
                given[k] = np.asarray(v, np.float64)
            except (TypeError, ValueError):
                raise ContactInputError(f"hfield_data[{k!r}] is not an array of numbers") from None
        for k, v in list(given.items()):
            shp = next(g.hfield[1].shape for g in model.geoms if g.shape == "hfield" and g.hfield
                       and g.hfield[0] == k)
            if v.size == shp[0] * shp[1] and v.ndim == 1:
                given[k] = v.reshape(shp)
    for gi in (geoms if picked else range(len(model.geoms))):
        g = model.geoms[gi]
        if not picked and (g.body >= 0 or g.role not in roles):
            continue
        if not picked and g.link and g.link != "world":  # a robot link welded to the world (fixed base) stays robot
            continue
        n_before = len(env)
        R = np.asarray(g.R, float)
        p = np.asarray(g.p, float)
        s = np.asarray(g.size, float)
        if g.shape == "plane":
            env.append(Plane(R[:, 2], float(R[:, 2] @ p)))
        elif g.shape == "box":
            env.append(Box(s[:3], R, p))
        elif g.shape == "sphere":
            env.append(Sphere(p, s[0]))
        elif g.shape == "capsule":
            env.append(Capsule(p - s[1] * R[:, 2], p + s[1] * R[:, 2], s[0]))
        elif g.shape == "cylinder":
            env.append(Cylinder(s[0], s[1], R, p))
        elif g.shape == "ellipsoid":
            env.append(Ellipsoid(s[:3], R, p))
        elif g.shape == "hfield" and g.hfield is not None:
            name, data = g.hfield
            if name in given:
                data = given[name]
                if np.shape(data) != np.shape(g.hfield[1]) or not np.all(np.isfinite(data)):
                    raise ContactInputError(f"hfield_data[{name!r}] must be {np.shape(g.hfield[1])} finite numbers "
                                            f"(nrow, ncol), got shape {np.shape(data)}")
            env.append(HeightField.from_mjcf(s, data, R, p))
        elif g.shape == "mesh":
            try:
                mesh = g.load_mesh()  # placed by (R, p): world coordinates for a world geom
            except Exception as e:
                raise ContactInputError(f"world geom {g.name!r}: mesh could not be read: {e}") from e
            mesh = trimesh.Trimesh(np.asarray(mesh.vertices), np.asarray(mesh.faces), process=True)
            env.append(MeshTerrain.from_mesh(mesh, spacing=spacing, padding=padding, max_bytes=max_bytes,
                                             open_mesh=open_mesh, exact_band=exact_band,
                                             source=f"world geom {g.name!r}"))
        else:
            skipped.append(f"{g.name} ({g.shape})")
        if sources is not None and len(env) > n_before:
            sources.append(gi)
    return env, skipped
