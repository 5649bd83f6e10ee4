"""Body-body contact items (load time, Python): the static candidate list the kernels walk.

An *item* is one direction of one geom pair (:func:`pbsim.contact.shapes.directions`): the points
of geom ``gA`` on body ``A`` (``it_start[i]:it_start[i + 1]`` of the ``pp_*`` point arrays)
against the shape ``it_shape[i]`` of geom ``gB`` on body ``B`` (``shp_*`` rows, queried in B's
frame).  Per item: both bodies, their lowest common ancestor ``it_lca`` (-1: the world; the
relative Jacobian ``J_A - J_B`` is zero on the DOFs above it), and the bounding spheres of A's
points and of B's shape in their body frames (``it_sphere = [cA (3), rA, cB (3), rB]``: the
broadphase, :func:`pbsim.contact.query.item_culled`).  Per point: its local position, radius (+
the pair's margin: a surface offset), penalty stiffness ``pp_k`` and damping ``pp_c`` (as the
environment's points: :class:`pbsim.contact.scene.Scene`, with the two bodies' reduced mass),
friction ``pp_mu`` and its item ``pp_item``.

Memory is static (a few KB for a humanoid); the kernels allocate nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pbsim.contact.shapes import directions, pair_points, shape_row, support_count


@dataclass
class BodyPairs:
    """The item arrays (module docstring) and, for people, the geom pair of every item."""

    it_a: np.ndarray
    it_b: np.ndarray
    it_lca: np.ndarray
    it_shape: np.ndarray
    it_start: np.ndarray
    it_sphere: np.ndarray
    pp_local: np.ndarray
    pp_radius: np.ndarray
    pp_item: np.ndarray
    pp_k: np.ndarray
    pp_c: np.ndarray
    pp_mu: np.ndarray
    shp_kind: np.ndarray
    shp_row: np.ndarray
    hull_plane: np.ndarray
    item_geoms: list = field(default_factory=list)  # (geom of the points, geom of the shape) per item

    @property
    def nitems(self) -> int:
        return len(self.it_a)

    @property
    def npoints(self) -> int:
        return len(self.pp_item)

    def kernel_fields(self) -> dict:
        return dict(nitem=self.nitems, it_a=self.it_a, it_b=self.it_b, it_lca=self.it_lca, it_shape=self.it_shape,
                    it_start=self.it_start, it_sphere=self.it_sphere, pp_local=self.pp_local,
                    pp_radius=self.pp_radius, pp_item=self.pp_item, pp_k=self.pp_k, pp_c=self.pp_c,
                    pp_mu=self.pp_mu, shp_kind=self.shp_kind, shp_row=self.shp_row, hull_plane=self.hull_plane)


def empty_pairs() -> BodyPairs:
    z = np.zeros
    return BodyPairs(z(0, np.int32), z(0, np.int32), z(0, np.int32), z(0, np.int32), z(1, np.int32), z((0, 8)),
                     z((0, 3)), z(0), z(0, np.int32), z(0), z(0), z(0), z(0, np.int32), z((0, 15)), z((0, 4)))


def lowest_common_ancestor(parent, a: int, b: int) -> int:
    """The deepest body on both chains (-1: the world); bodies are ordered parent < child."""
    while a != b:
        if a > b:
            a = int(parent[a])
        else:
            b = int(parent[b])
    return a


def subtree_masses(model) -> np.ndarray:
    sub = np.array(model.mass, float).copy()
    for i in range(model.nb - 1, -1, -1):
        if model.parent[i] >= 0:
            sub[model.parent[i]] += sub[i]
    return sub


def build_body_pairs(model, pairs, k: float, zeta: float, m_ref: float, mu: float, mesh_points: int = 32) -> BodyPairs:
    """The items of the geom pairs ``pairs`` (:class:`pbsim.model.geometry.ContactPair`, both geoms
    on bodies) with the scene's stiffness ``k`` and damping ratio ``zeta``: a point's damping is
    ``2 zeta sqrt(k m / n)`` with ``m`` the reduced mass of the two bodies' subtree masses, each
    capped at ``m_ref`` (the environment's rule, where the world's mass is infinite), shared by the
    ``n`` points that carry a body resting on its most populated side
    (:func:`pbsim.contact.shapes.support_count`: a box face has 12 of the 44 points; without the
    share the damping of a face contact was sqrt(12) times critical, and explicit Euler at 2 ms
    pumped energy into a 0.3 kg box landing on another).  ``mu``: the friction of pairs that do not
    give their own."""
    if not pairs:
        return empty_pairs()
    geoms = model.geoms
    sub = subtree_masses(model)
    shapes: dict[int, int] = {}  # geom -> shape row
    kinds, rows, spheres, hull = [], [], [], []
    pts_cache: dict[int, tuple] = {}
    it = dict(a=[], b=[], lca=[], shape=[], start=[0], sphere=[])
    pp = dict(local=[], radius=[], item=[], k=[], c=[], mu=[])
    item_geoms = []
    for p in pairs:
        gg = (p.geom1, p.geom2)
        for ia, ib in directions(geoms[p.geom1], geoms[p.geom2]):
            ga, gb = gg[ia], gg[ib]
            A, B = int(geoms[ga].body), int(geoms[gb].body)
            if gb not in shapes:
                kind, row, c, r = shape_row(geoms[gb], hull)
                shapes[gb] = len(kinds)
                kinds.append(kind)
                rows.append(row)
                spheres.append((c, r))
            if ga not in pts_cache:
                pts_cache[ga] = pair_points(geoms[ga], mesh_points)
            loc, rad = pts_cache[ga]
            rad = rad + float(p.margin)
            cA = 0.5 * (loc.min(0) + loc.max(0))
            rA = float((np.linalg.norm(loc - cA, axis=1) + rad).max())
            cB, rB = spheres[shapes[gb]]
            item = len(it["a"])
            it["a"].append(A)
            it["b"].append(B)
            it["lca"].append(lowest_common_ancestor(model.parent, A, B))
            it["shape"].append(shapes[gb])
            it["sphere"].append([*cA, rA, *cB, rB])
            it["start"].append(it["start"][-1] + len(loc))
            mA, mB = min(sub[A], m_ref), min(sub[B], m_ref)
            meff = max(mA * mB / max(mA + mB, 1e-12), 1e-6)
            n = len(loc)
            meff /= support_count(loc)  # the points that carry a resting body at once share its mass
            pp["local"].append(loc)
            pp["radius"].append(rad)
            pp["item"].append(np.full(n, item))
            pp["k"].append(np.full(n, k))
            pp["c"].append(np.full(n, 2.0 * zeta * np.sqrt(k * meff)))
            pp["mu"].append(np.full(n, mu if p.friction is None else float(p.friction)))
            item_geoms.append((ga, gb))

    def a(x, dt=np.float64):
        return np.ascontiguousarray(np.asarray(x, dt))

    return BodyPairs(a(it["a"], np.int32), a(it["b"], np.int32), a(it["lca"], np.int32), a(it["shape"], np.int32),
                     a(it["start"], np.int32), a(np.reshape(it["sphere"], (-1, 8))),
                     a(np.concatenate(pp["local"]).reshape(-1, 3)), a(np.concatenate(pp["radius"])),
                     a(np.concatenate(pp["item"]), np.int32), a(np.concatenate(pp["k"])), a(np.concatenate(pp["c"])),
                     a(np.concatenate(pp["mu"])), a(kinds, np.int32), a(np.reshape(rows, (-1, 15))),
                     a(np.concatenate(hull).reshape(-1, 4) if hull else np.zeros((0, 4))), item_geoms)
