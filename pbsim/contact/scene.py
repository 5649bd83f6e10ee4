"""Scene: the environment and the contact parameters of one simulation.

The kernels read a :class:`KScene` namedtuple (environment arrays packed by
:func:`pbsim.contact.environment.pack_environment`, contact points, penalty parameters).

Penalty parameters (see :mod:`pbsim.contact.penalty`):
- ``stiffness`` k (N/m, per contact point).  Default scale: ``k = M g / (n_ref * delta_ref)``
  with M the robot mass, g = |gravity|, ``n_ref = 4`` and ``delta_ref`` (default 5 mm): with n
  points sharing the weight at rest, the mean static penetration is ``delta_ref * n_ref / n``.
- ``damping`` c (N s/m, per point).  Default ``c_i = 2 zeta sqrt(k m_i)`` with ``zeta = 0.5`` and
  ``m_i = min(mass of the subtree of the point's body, M / n_ref)``.
- ``mu`` Coulomb coefficient, ``friction_eps`` (m/s) regularization velocity.
"""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, field

import numpy as np

from pbsim.contact.environment import ContactInputError, Plane, pack_environment, packed_order
from pbsim.contact.points import ContactPoints

KScene = namedtuple(
    "KScene",
    "npts pt_body pt_local pt_radius pt_k pt_c mu friction_eps "
    "env_plane env_sphere env_box env_capsule hf_meta hf_geom hf_data gr_meta gr_geom gr_data env_cylinder env_ellipsoid "
    # which environment shapes each point may touch (pbsim.contact.filter; query.env_sdf's mask)
    "pt_envmask env_all "
    # body-body contact items, their points and the shapes on bodies (pbsim.contact.pairs)
    "nitem it_a it_b it_lca it_shape it_start it_sphere pp_local pp_radius pp_item pp_k pp_c pp_mu "
    "shp_kind shp_row hull_plane")


def env_words(nenv: int) -> int:
    """int64 words of an environment mask for ``nenv`` shapes (at least one)."""
    return max(1, (int(nenv) + 63) // 64)


def make_kscene(npts, pt_body, pt_local, pt_radius, pt_k, pt_c, mu, friction_eps, env: dict, pt_envmask=None,
                pairs=None) -> KScene:
    """A :class:`KScene` from the point arrays, the packed environment ``env``
    (:func:`pbsim.contact.environment.pack_environment`), the points' environment masks (None:
    every shape) and the body-body items ``pairs`` (:class:`pbsim.contact.pairs.BodyPairs`; None:
    none)."""
    from pbsim.contact.environment import environment_size
    from pbsim.contact.pairs import empty_pairs

    W = env_words(environment_size(env))
    if pt_envmask is None:
        pt_envmask = np.full((max(int(npts), 0), W), -1, np.int64)
    pt_envmask = np.ascontiguousarray(np.asarray(pt_envmask, np.int64).reshape(-1, W))
    return KScene(int(npts), pt_body, pt_local, pt_radius, pt_k, pt_c, float(mu), float(friction_eps), **env,
                  pt_envmask=pt_envmask, env_all=np.full(W, -1, np.int64),
                  **(pairs if pairs is not None else empty_pairs()).kernel_fields())

N_REF = 4
DELTA_REF = 0.005
ZETA = 0.5


@dataclass
class Scene:
    """Environment + penalty-contact parameters.  ``Scene()`` is empty space (no contact).

    ``environment``: list of :mod:`pbsim.contact.environment` shapes.  ``points``: robot contact
    points (:class:`ContactPoints`).  ``ground=True`` (with ``plane_normal``/``plane_offset``)
    adds a plane; ``points_body``/``points_local``/``points_radius`` give points explicitly
    (older stub API).  ``stiffness``/``damping`` None -> the documented defaults."""

    environment: list = field(default_factory=list)
    points: ContactPoints | None = None
    stiffness: float | None = None
    damping: float | None = None
    mu: float = 0.8
    friction_eps: float = 0.01
    delta_ref: float = DELTA_REF
    zeta: float = ZETA
    max_penetration: float = 0.05  # [m] deeper than this a state is flagged (pbsim.contact.depth)
    ground: bool = False
    plane_normal: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    plane_offset: float = 0.0
    points_body: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    points_local: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    points_radius: np.ndarray = field(default_factory=lambda: np.zeros(0))
    # which shapes touch which (pbsim.contact.filter.ContactRules; make_scene fills it): None, every
    # contact point touches every environment shape and no body touches another
    rules: object = None
    world_index: tuple = ()  # the positions in `environment` of the file's world shapes (rules.world_geoms)
    body_contact: bool = True  # False: contact with the environment only

    def __post_init__(self):
        for nm in ("mu", "friction_eps", "delta_ref", "zeta", "max_penetration"):
            v = float(getattr(self, nm))
            if not (np.isfinite(v) and v >= 0):
                raise ContactInputError(f"scene {nm} must be a finite number >= 0, got {v!r}")
        if self.friction_eps <= 0 or self.delta_ref <= 0:
            raise ContactInputError("scene friction_eps and delta_ref must be > 0")
        for nm in ("stiffness", "damping"):
            v = getattr(self, nm)
            if v is not None and not (np.isfinite(float(v)) and float(v) >= 0):
                raise ContactInputError(f"scene {nm} must be a finite number >= 0, got {v!r}")

    @property
    def notes(self) -> list:
        """What the contact rules dropped, by name (e.g. self-collision pairs touching at rest)."""
        return list(self.rules.notes) if self.rules is not None else []

    def all_environment(self) -> list:
        env = list(self.environment)
        if self.ground:
            env.append(Plane(self.plane_normal, self.plane_offset))
        return env

    def contact_points(self) -> ContactPoints:
        if self.points is not None:
            return self.points
        return ContactPoints(np.asarray(self.points_body, np.int32).reshape(-1),
                             np.asarray(self.points_local, np.float64).reshape(-1, 3),
                             np.asarray(self.points_radius, np.float64).reshape(-1))

    def default_stiffness(self, model) -> float:
        g = float(np.linalg.norm(model.gravity)) or 9.81
        return max(model.total_mass, 1e-6) * g / (N_REF * self.delta_ref)

    def point_parameters(self, model, pts: ContactPoints):
        """Per-point stiffness and damping arrays."""
        n = len(pts)
        k = float(self.stiffness) if self.stiffness is not None else self.default_stiffness(model)
        if self.damping is not None:
            return np.full(n, k), np.full(n, float(self.damping))
        sub = np.array(model.mass, float).copy()  # subtree masses
        for i in range(model.nb - 1, -1, -1):
            if model.parent[i] >= 0:
                sub[model.parent[i]] += sub[i]
        mref = max(model.total_mass, 1e-6) / N_REF
        mi = np.minimum(sub[pts.body], mref) if n else np.zeros(0)
        return np.full(n, k), 2.0 * self.zeta * np.sqrt(k * np.maximum(mi, 1e-6))

    def env_masks(self, pts: ContactPoints, env: list) -> np.ndarray | None:
        """(npts, W) int64: the environment shapes (bits in packed order) each point may touch by
        the contact rules; None when every point touches every shape."""
        rules = self.rules
        if rules is None or rules.world_allowed is None or pts.geom is None:
            return None
        order = packed_order(env)
        M = np.zeros((len(pts), env_words(len(env))), np.int64)
        own = set(self.world_index)
        added = [order[i] for i in range(len(env)) if i not in own]  # the scene's own shapes: everyone

        def word(bits, w):  # the 64 bits of word w as an int64
            v = sum(1 << (e & 63) for e in set(bits) if e >> 6 == w)
            return v - (1 << 64) if v >= 1 << 63 else v

        for k, g in enumerate(pts.geom):
            bits = list(order) if g < 0 else added + [order[i] for i in rules.world_geom_set(int(g))]
            M[k] = [word(bits, w) for w in range(M.shape[1])]
        return M

    def body_pairs(self, model):
        """The body-body items of this scene (:class:`pbsim.contact.pairs.BodyPairs`), built once per
        model; None when no body touches another."""
        if self.rules is None or not self.body_contact or not self.rules.body_pairs:
            return None
        cache = self.__dict__.setdefault("_pairs", {})
        if id(model) not in cache:
            from pbsim.contact.pairs import build_body_pairs

            k = float(self.stiffness) if self.stiffness is not None else self.default_stiffness(model)
            cache[id(model)] = (model, build_body_pairs(model, self.rules.body_pairs, k, self.zeta,
                                                        max(model.total_mass, 1e-6) / N_REF, float(self.mu)))
        return cache[id(model)][1]

    def kernel_arrays(self, model) -> KScene:
        env = self.all_environment()
        pts = self.contact_points()
        if len(pts) and (pts.body.min() < 0 or pts.body.max() >= model.nb):
            raise ContactInputError(f"contact point body indices must be in 0..{model.nb - 1}")
        n = len(pts) if env else 0
        k, c = self.point_parameters(model, pts)
        packed = pack_environment(env)
        masks = self.env_masks(pts, env) if n else None
        return make_kscene(n, np.ascontiguousarray(pts.body, np.int32), np.ascontiguousarray(pts.local, np.float64),
                           np.ascontiguousarray(pts.radius, np.float64), np.ascontiguousarray(k),
                           np.ascontiguousarray(c), self.mu, self.friction_eps, packed, masks,
                           self.body_pairs(model))
