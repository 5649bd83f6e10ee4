"""Robot contact points sampled per body from the Model's collision geometry (body coordinates).

A contact point is ``(body, local position, radius)``: its surface is the sphere of ``radius``
around the point (0 for a plain point), so spheres and capsules are exact offset surfaces.

Sampling rules (``role == "collision"`` shapes; visual shapes only when a body has no collision
shape and ``use_visual_meshes``):
- box: 8 corners, plus ``box_edge_points`` evenly spaced interior points per edge;
- sphere: its centre with its radius;
- capsule: ``capsule_points`` centres evenly spaced on the axis segment, with its radius;
- cylinder: ``cylinder_rim`` points on each of the two rim circles (radius 0);
- ellipsoid: up to 25 inscribed spheres centred on its focal disc (:func:`ellipsoid_points`; a
  sphere-shaped ellipsoid is its centre with its radius, exact);
- mesh: vertices of the convex hull (all vertices if that fails), farthest-point subsampled;
then each body keeps at most ``max_per_body`` points (farthest-point sampling).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pbsim.contact.environment import ContactInputError


@dataclass
class ContactPoints:
    body: np.ndarray  # (n,) int32
    local: np.ndarray  # (n, 3)
    radius: np.ndarray  # (n,)
    geom: np.ndarray | None = None  # (n,) int: the index in model.geoms each point was sampled on (-1: given)

    def __len__(self):
        return len(self.body)

    def for_body(self, i):
        sel = self.body == i
        return self.local[sel], self.radius[sel]


def farthest_points(P: np.ndarray, k: int) -> np.ndarray:
    """Indices of ``k`` points of P picked by farthest-point sampling (deterministic)."""
    n = len(P)
    if n <= k:
        return np.arange(n)
    c = P.mean(axis=0)
    idx = [int(np.argmax(((P - c) ** 2).sum(1)))]
    dmin = ((P - P[idx[0]]) ** 2).sum(1)
    for _ in range(k - 1):
        j = int(np.argmax(dmin))
        idx.append(j)
        dmin = np.minimum(dmin, ((P - P[j]) ** 2).sum(1))
    return np.array(sorted(idx))


def ellipsoid_points(s) -> tuple[np.ndarray, np.ndarray]:
    """``(local (n, 3), radius (n,))``: spheres inscribed in the ellipsoid of semi-axes ``s`` (its own
    frame) whose union approximates it from inside.  An ellipsoid ``a >= b >= c`` is exactly the
    union of the spheres centred on its focal disc (the ellipse of semi-axes ``(a^2 - c^2) / a``,
    ``(b^2 - c^2) / b`` in the a-b plane) of radius ``c sqrt(1 - x^2 / (a^2 - c^2) - y^2 / (b^2 -
    c^2))``; these are its centre and rings of 4, 8 and 12 at a third, two thirds and the whole of
    the disc (25 spheres; a prolate ellipsoid's disc is a segment: 7; a sphere: 1).  Exact on the
    semi-axis poles and wherever a sampled sphere touches; elsewhere the support is short by at most
    3.6 % of the largest semi-axis (the edge of a flat disc between the outer ring's spheres; a
    prolate ellipsoid: 0.8 %; measured in ``tests/contact/test_geoms29.py``)."""
    s = np.asarray(s, float)[:3]
    order = np.argsort(-s, kind="stable")
    a, b, c = s[order]
    fa, fb = (a * a - c * c) / a, (b * b - c * c) / b
    P = [[0.0, 0.0]]
    for rho, n in ((1 / 3, 4), (2 / 3, 8), (1.0, 12)):
        t = 2 * np.pi * np.arange(n) / n
        P += np.c_[rho * fa * np.cos(t), rho * fb * np.sin(t)].tolist()
    P = np.unique(np.round(np.array(P), 15), axis=0)
    r2 = np.ones(len(P)) - (P[:, 0] ** 2 / (a * a - c * c) if a > c else 0.0) - (P[:, 1] ** 2 / (b * b - c * c) if b > c else 0.0)
    loc = np.zeros((len(P), 3))
    loc[:, order[0]], loc[:, order[1]] = P[:, 0], P[:, 1]
    return loc, c * np.sqrt(np.clip(r2, 0.0, 1.0))


def _geom_points(g, box_edge_points, capsule_points, cylinder_rim, mesh_budget):
    R, p, s = np.asarray(g.R, float), np.asarray(g.p, float), np.asarray(g.size, float)
    if g.shape == "box":
        signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
        pts = [signs * s]
        if box_edge_points > 0:
            t = np.arange(1, box_edge_points + 1) / (box_edge_points + 1) * 2 - 1
            for ax in range(3):
                o1, o2 = [a for a in range(3) if a != ax]
                for s1 in (-1, 1):
                    for s2 in (-1, 1):
                        e = np.zeros((len(t), 3))
                        e[:, ax] = t * s[ax]
                        e[:, o1] = s1 * s[o1]
                        e[:, o2] = s2 * s[o2]
                        pts.append(e)
        loc = np.concatenate(pts)
        rad = np.zeros(len(loc))
    elif g.shape == "sphere":
        loc, rad = np.zeros((1, 3)), np.array([s[0]])
    elif g.shape == "capsule":
        n = max(2, int(capsule_points))
        loc = np.zeros((n, 3))
        loc[:, 2] = np.linspace(-s[1], s[1], n)
        rad = np.full(n, s[0])
    elif g.shape == "cylinder":
        n = max(3, int(cylinder_rim))
        a = 2 * np.pi * np.arange(n) / n
        ring = np.stack([s[0] * np.cos(a), s[0] * np.sin(a), np.zeros(n)], 1)
        top, bot = ring.copy(), ring.copy()
        top[:, 2], bot[:, 2] = s[1], -s[1]
        loc = np.concatenate([top, bot])
        rad = np.zeros(len(loc))
    elif g.shape == "ellipsoid":
        loc, rad = ellipsoid_points(s)
    elif g.shape == "mesh":
        mesh = g.load_mesh()  # already in the body frame
        try:
            V = np.asarray(mesh.convex_hull.vertices)
        except Exception:
            V = np.asarray(mesh.vertices)
        V = V[farthest_points(V, mesh_budget)]
        return V, np.zeros(len(V))
    else:  # planes on bodies are not contact geometry
        return np.zeros((0, 3)), np.zeros(0)
    return loc @ R.T + p, rad


def sample_contact_points(model, max_per_body: int = 32, box_edge_points: int = 1, capsule_points: int = 3,
                          cylinder_rim: int = 8, mesh_points: int = 32, bodies=None, explicit=None,
                          use_visual_meshes: bool = False, geoms=None) -> ContactPoints:
    """Contact points of ``model``.  ``bodies``: body names/indices to sample (default all);
    ``explicit``: {body name or index: (n, 3) points or (n, 4) points + radius} replaces sampling
    for those bodies; ``geoms``: the indices in ``model.geoms`` that carry points, whatever their
    role (default: every collision shape; the contact rules pass the shapes that may touch the
    environment).
    See the module docstring for the rules."""
    if int(max_per_body) < 1:
        raise ContactInputError(f"max_per_body must be >= 1, got {max_per_body!r}")

    def bidx(key):
        if isinstance(key, (int, np.integer)):
            if not 0 <= key < model.nb:
                raise ContactInputError(f"body index {key} out of range 0..{model.nb - 1}")
            return int(key)
        try:
            return model.body_index(key)
        except Exception as e:
            raise ContactInputError(f"unknown body {key!r} for contact points") from e

    wanted = set(range(model.nb)) if bodies is None else {bidx(k) for k in bodies}
    expl = {bidx(k): v for k, v in (explicit or {}).items()}
    allowed = None if geoms is None else set(int(g) for g in geoms)
    out_b, out_l, out_r, out_g = [], [], [], []
    for i in range(model.nb):
        if i in expl:
            a = np.asarray(expl[i], float)
            if a.ndim != 2 or a.shape[1] not in (3, 4) or not np.all(np.isfinite(a)):
                raise ContactInputError(f"explicit contact points for body {i} must be (n, 3) or (n, 4) "
                                        f"finite, got shape {a.shape}")
            loc, rad = a[:, :3], (a[:, 3] if a.shape[1] == 4 else np.zeros(len(a)))
            src = np.full(len(loc), -1)
        elif i in wanted:
            gs = [gi for gi, g in enumerate(model.geoms) if g.body == i
                  and (gi in allowed if allowed is not None else g.role == "collision")]
            if not gs and use_visual_meshes:
                gs = [gi for gi, g in enumerate(model.geoms) if g.body == i and g.shape == "mesh"]
            if not gs:
                continue
            parts = [_geom_points(model.geoms[gi], box_edge_points, capsule_points, cylinder_rim, mesh_points)
                     for gi in gs]
            loc = np.concatenate([p[0] for p in parts])
            rad = np.concatenate([p[1] for p in parts])
            src = np.concatenate([np.full(len(p[0]), gi) for gi, p in zip(gs, parts)])
            if len(loc) > max_per_body:
                # keep spread: sample on the offset surface extremes (position + radius weight)
                keep = farthest_points(loc, int(max_per_body))
                loc, rad, src = loc[keep], rad[keep], src[keep]
        else:
            continue
        out_b.append(np.full(len(loc), i, np.int32))
        out_l.append(loc)
        out_r.append(rad)
        out_g.append(src)
    if not out_b:
        return ContactPoints(np.zeros(0, np.int32), np.zeros((0, 3)), np.zeros(0), np.zeros(0, np.int64))
    return ContactPoints(np.concatenate(out_b), np.concatenate(out_l), np.concatenate(out_r),
                         np.concatenate(out_g).astype(np.int64))
