"""Collision shapes on bodies (load time, Python): the signed-distance rows a body's shape is queried
through (:func:`pbsim.contact.query.shape_sdf`, in the body's frame) and the points a shape is
sampled with when it touches another body's shape.

Kinds (``shp_kind``) and rows (``shp_row``, 15 wide; :mod:`pbsim.contact.sdf`):

| kind | row |
|---|---|
| ``SPHERE`` | ``[c (3), r]`` |
| ``CAPSULE`` | ``[a (3), b (3), r]`` |
| ``BOX`` | ``[R (9), p (3), half (3)]`` |
| ``CYLINDER`` | ``[R (9), p (3), r, h]`` |
| ``HULL`` | ``[first plane, number of planes]`` into ``hull_plane`` (n, d) rows: a mesh as its convex hull, as MuJoCo collides it |
| ``ELLIPSOID`` | ``[R (9), p (3), a, b, c]`` (the exact distance by Newton's method, :func:`pbsim.contact.sdf.sdf_ellipsoid`) |

Points for body-body contact (:func:`pair_points`), denser than the environment's
(:mod:`pbsim.contact.points`): a box gets its 8 corners, its 12 edge midpoints and 4 inset points
per face (at +-half/2: two equal boxes stacked face to face put their corners exactly on each
other's edges, where the box distance is 0 with a sideways normal; the inset points carry the
load); a capsule gets axis points at most a radius apart (so two crossing capsules are sensed
within 0.14 r of their true depth); a cylinder its two rims (8 points each) and the caps'
centres; an ellipsoid up to 25 inscribed spheres
(:func:`pbsim.contact.points.ellipsoid_points`); a mesh the vertices of its convex hull (at most ``mesh_points``, farthest-point
sampled); a sphere its centre.
"""
from __future__ import annotations

import numpy as np

from pbsim.contact.environment import ContactInputError
from pbsim.contact.points import ellipsoid_points, farthest_points

SPHERE, CAPSULE, BOX, CYLINDER, HULL, ELLIPSOID = 0, 1, 2, 3, 4, 5
KIND = {"sphere": SPHERE, "capsule": CAPSULE, "box": BOX, "cylinder": CYLINDER, "mesh": HULL, "ellipsoid": ELLIPSOID}
ROUND = ("sphere", "capsule")  # exact as points with a radius: touch the other shape one way only


def _hull(g):
    """Vertices and outward face planes (n, d) of a mesh geom's convex hull, in the body frame."""
    import trimesh

    try:
        mesh = g.load_mesh()
        hull = trimesh.Trimesh(np.asarray(mesh.vertices), np.asarray(mesh.faces), process=True).convex_hull
    except Exception as e:  # trimesh / qhull raise many kinds
        raise ContactInputError(f"geom {g.name!r}: its mesh has no convex hull to collide with: {e}") from e
    V = np.asarray(hull.vertices, float)
    N = np.asarray(hull.face_normals, float)
    d = np.einsum("ij,ij->i", N, V[np.asarray(hull.faces)[:, 0]])
    planes = np.unique(np.round(np.c_[N, d], 12), axis=0)  # coplanar triangles: one plane
    if len(V) < 4 or len(planes) < 4:
        raise ContactInputError(f"geom {g.name!r}: its mesh's convex hull is flat ({len(V)} vertices)")
    return V, planes


def shape_row(g, hull_planes: list) -> tuple[int, np.ndarray, np.ndarray, float]:
    """``(kind, row (15,), bounding-sphere centre (3,), radius)`` of geom ``g`` in its body's frame;
    a mesh appends its hull's planes to ``hull_planes``."""
    R, p, s = np.asarray(g.R, float), np.asarray(g.p, float), np.asarray(g.size, float)
    row = np.zeros(15)
    if g.shape == "sphere":
        row[:4] = [*p, s[0]]
        return SPHERE, row, p, float(s[0])
    if g.shape == "capsule":
        row[:7] = [*(p - s[1] * R[:, 2]), *(p + s[1] * R[:, 2]), s[0]]
        return CAPSULE, row, p, float(s[0] + s[1])
    if g.shape == "box":
        row[:] = [*R.reshape(-1), *p, *s[:3]]
        return BOX, row, p, float(np.linalg.norm(s[:3]))
    if g.shape == "cylinder":
        row[:14] = [*R.reshape(-1), *p, s[0], s[1]]
        return CYLINDER, row, p, float(np.hypot(s[0], s[1]))
    if g.shape == "ellipsoid":
        row[:] = [*R.reshape(-1), *p, *s[:3]]
        return ELLIPSOID, row, p, float(s[:3].max())
    if g.shape == "mesh":
        V, planes = _hull(g)
        row[:2] = [sum(len(h) for h in hull_planes), len(planes)]
        hull_planes.append(planes)
        c = 0.5 * (V.min(0) + V.max(0))
        return HULL, row, c, float(np.linalg.norm(V - c, axis=1).max())
    raise ContactInputError(f"geom {g.name!r}: a {g.shape} on a body cannot touch other bodies")


def support_count(loc: np.ndarray) -> int:
    """How many of the points ``loc`` touch a plane at once when the shape rests on
    its most populated side: the largest count of points within 1 % of the extent of the extreme
    along one of the six principal directions of the point cloud (a box face: 12, a capsule on its
    side: all of its points, a sphere: 1).  The per-point damping is sized by it
    (:func:`pbsim.contact.pairs.build_body_pairs`)."""
    if len(loc) <= 1:
        return max(len(loc), 1)
    c = loc - loc.mean(0)
    _, _, Vt = np.linalg.svd(c, full_matrices=False)
    tol = 0.01 * float(np.ptp(c, axis=0).max()) + 1e-12
    best = 1
    for ax in Vt:
        h = c @ ax
        for side in (h, -h):
            best = max(best, int((side >= side.max() - tol).sum()))
    return best


def pair_points(g, mesh_points: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """``(local (n, 3), radius (n,))``: the points of geom ``g`` (body frame) that meet another
    body's shape (module docstring)."""
    R, p, s = np.asarray(g.R, float), np.asarray(g.p, float), np.asarray(g.size, float)
    if g.shape == "sphere":
        return p[None].copy(), np.array([s[0]])
    if g.shape == "capsule":
        n = max(3, int(np.ceil(2.0 * s[1] / s[0])) + 1)
        loc = np.zeros((n, 3))
        loc[:, 2] = np.linspace(-s[1], s[1], n)
        return loc @ R.T + p, np.full(n, s[0])
    if g.shape == "box":
        h = s[:3]
        pts = [np.array([[a, b, c] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)], float) * h]
        for ax in range(3):
            o1, o2 = [a for a in range(3) if a != ax]
            for s1 in (-1, 1):
                for s2 in (-1, 1):
                    e = np.zeros(3)
                    e[o1], e[o2] = s1 * h[o1], s2 * h[o2]
                    pts.append(e[None])  # edge midpoint
            for sgn in (-1, 1):
                f = np.zeros((4, 3))
                f[:, ax] = sgn * h[ax]
                f[:, o1] = 0.5 * h[o1] * np.array([-1, -1, 1, 1])
                f[:, o2] = 0.5 * h[o2] * np.array([-1, 1, -1, 1])
                pts.append(f)  # inset face points
        loc = np.concatenate(pts)
        return loc @ R.T + p, np.zeros(len(loc))
    if g.shape == "cylinder":
        a = 2 * np.pi * np.arange(8) / 8
        ring = np.stack([s[0] * np.cos(a), s[0] * np.sin(a), np.zeros(8)], 1)
        top, bot = ring.copy(), ring.copy()
        top[:, 2], bot[:, 2] = s[1], -s[1]
        loc = np.concatenate([top, bot, [[0, 0, s[1]], [0, 0, -s[1]]]])
        return loc @ R.T + p, np.zeros(len(loc))
    if g.shape == "ellipsoid":
        loc, rad = ellipsoid_points(s)
        return loc @ R.T + p, rad
    if g.shape == "mesh":
        V, _ = _hull(g)
        V = V[farthest_points(V, int(mesh_points))]
        return V, np.zeros(len(V))
    raise ContactInputError(f"geom {g.name!r}: a {g.shape} on a body cannot touch other bodies")


def directions(g1, g2) -> list[tuple[int, int]]:
    """Which way(s) a geom pair is tested, as ``(points of, shape of)`` index pairs ``(0, 1)`` /
    ``(1, 0)``: a sphere's or capsule's points are exact with their radius, so such a pair is
    tested one way (the round shape's points against the other's shape; two round shapes: the
    one with fewer points against the other); boxes, cylinders and meshes are tested both ways
    (corners of each against the other: vertex-face from either side, edges through the edge
    points)."""
    r1, r2 = g1.shape in ROUND, g2.shape in ROUND
    if r1 and r2:
        return [(0, 1)] if (g1.shape == "sphere" or g2.shape != "sphere") else [(1, 0)]
    if r1:
        return [(0, 1)]
    if r2:
        return [(1, 0)]
    return [(0, 1), (1, 0)]
