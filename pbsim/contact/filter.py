"""Which shapes may touch which: the contact rules of a model (load time, Python).

Two sources, one result (:class:`ContactRules`):

- **The file decides** (``Model.contact_pairs`` is a list: MJCF, through MuJoCo's own rules --
  contype/conaffinity bitmasks, same-weld-body and parent-child filtering unless ``filterparent``
  is disabled, ``<exclude>``, ``<pair>``; :mod:`pbsim.io.mjcf_contact`).  A world shape (a geom on
  the world or on a body welded to it) is touched only by the geoms it is paired with; body geoms
  touch each other only in a listed pair.
- **pbsim's default rules** (``Model.contact_pairs is None``: URDF, generated models), pybullet's
  convention: every collision shape of the robot touches the environment; self-collision is off
  unless ``self_collision=True``, which pairs every two bodies except, by ``parents``,
  ``"exclude_parent"`` (default: a body and its parent, pybullet's ``URDF_USE_SELF_COLLISION``),
  ``"include_parent"`` (none dropped, pybullet's ``..._INCLUDE_PARENT``) or
  ``"exclude_all_parents"`` (a body and all its ancestors, ``..._EXCLUDE_ALL_PARENTS``).  Links
  merged by fixed joints are one body and never touch each other.  The parts of a combined model
  (:func:`pbsim.model.compose.combine`: a robot and the objects dropped on it) always touch each
  other.  ``exclude``/``include``: body
  (link) name pairs removed from / added to the result.

Shapes the scene adds (``ground="plane"``, terrain, ``environment=[...]``) touch every collision
shape, whatever the file says.  ``body_contact=False`` keeps only the environment contacts.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pbsim.contact.environment import ContactInputError
from pbsim.model.geometry import ContactPair

PARENT_RULES = ("exclude_parent", "include_parent", "exclude_all_parents")


@dataclass
class ContactRules:
    """``world_geoms``: indices into ``model.geoms`` of the shapes that become environment shapes
    (in this order); ``world_allowed``: for a robot geom, the set of positions in ``world_geoms``
    it may touch (``None``: every one, pbsim's default rules); ``body_pairs``: the pairs of geoms
    on two moving bodies; ``notes``: what a rule dropped, by name."""

    world_geoms: list = field(default_factory=list)
    world_allowed: dict | None = None
    body_pairs: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def world_geom_set(self, g: int) -> set | None:
        if self.world_allowed is None:
            return None
        return self.world_allowed.get(g, set())

    def touches_world(self, g: int) -> bool:
        return self.world_allowed is None or bool(self.world_allowed.get(g))


def _is_world_geom(g) -> bool:
    """A shape declared on the world itself (not a robot link welded to it by a fixed base)."""
    return g.body < 0 and (not g.link or g.link == "world")


def _ancestors(model, i: int) -> set:
    out = set()
    j = int(model.parent[i])
    while j >= 0:
        out.add(j)
        j = int(model.parent[j])
    return out


def contact_rules(model, self_collision: bool = False, parents: str = "exclude_parent", exclude=(), include=(),
                  body_contact: bool = True, initial_overlaps: str = "exclude") -> ContactRules:
    """The :class:`ContactRules` of ``model`` (module docstring).  ``initial_overlaps``: with
    pbsim's self-collision, "exclude" (default) drops the pairs of shapes that already touch at the
    model's default configuration (Genesis's ``enable_neutral_collision=False``: URDF collision
    meshes of neighbouring links often overlap where they are joined), naming them in
    ``ContactRules.notes``; "keep" keeps them."""
    if parents not in PARENT_RULES:
        raise ContactInputError(f"self-collision parent rule must be one of {PARENT_RULES}, got {parents!r}")
    if model.contact_disabled:
        return ContactRules([], {}, [], ["contact is disabled by the file (<flag contact='disable'/>)"])
    geoms = model.geoms
    if model.contact_pairs is not None:  # the file decides (MJCF)
        world, allowed, body = [], {}, []
        wpos = {}
        for p in model.contact_pairs:
            g1, g2 = geoms[p.geom1], geoms[p.geom2]
            if g1.body < 0 and g2.body < 0:
                continue  # static-static: never moves
            if g1.body >= 0 and g2.body >= 0:
                body.append(p)
                continue
            wg, rg = (p.geom1, p.geom2) if g1.body < 0 else (p.geom2, p.geom1)
            if wg not in wpos:
                wpos[wg] = len(world)
                world.append(wg)
            allowed.setdefault(rg, set()).add(wpos[wg])
        rules = ContactRules(world, allowed, body if body_contact else [])
    else:
        world = [i for i, g in enumerate(geoms) if _is_world_geom(g) and g.role == "collision"]
        rules = ContactRules(world, None, [])
        if body_contact:
            rules.body_pairs = _group_pairs(model)  # the parts of a combined model (robot-object, ...)
        if self_collision and body_contact:
            rules.body_pairs += _self_collision_pairs(model, parents)
            if initial_overlaps == "exclude":
                rules.body_pairs, dropped = drop_initial_overlaps(model, rules.body_pairs)
                if dropped:
                    rules.notes.append(f"self-collision: {len(dropped)} pair(s) of shapes already touching at the "
                                       f"default configuration are not simulated: {', '.join(dropped[:12])}"
                                       + (f", ... ({len(dropped)} in all)" if len(dropped) > 12 else ""))
            elif initial_overlaps != "keep":
                raise ContactInputError(f"initial_overlaps must be 'exclude' or 'keep', got {initial_overlaps!r}")
    if exclude or include:
        _apply_overrides(model, rules, exclude, include)
    return rules


def _group_pairs(model) -> list:
    """Every pair of collision geoms on bodies of different parts of a combined model
    (``Model.body_group``, :func:`pbsim.model.compose.combine`)."""
    grp = getattr(model, "body_group", None)
    if grp is None or len(set(int(x) for x in grp)) < 2:
        return []
    gs = [(gi, int(g.body)) for gi, g in enumerate(model.geoms)
          if g.role == "collision" and g.body >= 0 and g.shape != "plane"]
    return [ContactPair(a, b) for i, (a, ba) in enumerate(gs) for b, bb in gs[i + 1:] if grp[ba] != grp[bb]]


def _self_collision_pairs(model, parents: str) -> list:
    """pybullet's self-collision pairs (module docstring) between the bodies' collision geoms."""
    per_body: dict[int, list[int]] = {}
    for gi, g in enumerate(model.geoms):
        if g.role == "collision" and g.body >= 0 and g.shape != "plane":
            per_body.setdefault(int(g.body), []).append(gi)
    bodies = sorted(per_body)
    out = []
    for a_i, a in enumerate(bodies):
        anc_a = _ancestors(model, a)
        for b in bodies[a_i + 1:]:
            anc_b = _ancestors(model, b)
            if parents == "exclude_parent" and (int(model.parent[b]) == a or int(model.parent[a]) == b):
                continue
            if parents == "exclude_all_parents" and (a in anc_b or b in anc_a):
                continue
            for g1 in per_body[a]:
                for g2 in per_body[b]:
                    out.append(ContactPair(g1, g2))
    return out


def drop_initial_overlaps(model, pairs) -> tuple[list, list]:
    """``(kept, dropped names)``: ``pairs`` without those whose shapes touch (a point deeper than 0
    in the other shape, either way) at ``model.default_configuration()``."""
    import numpy as np

    from pbsim.contact.depth import item_depths
    from pbsim.contact.pairs import build_body_pairs
    from pbsim.contact.scene import make_kscene
    from pbsim.dynamics.api import forward_kinematics

    if not pairs:
        return pairs, []
    bp = build_body_pairs(model, pairs, 1.0, 0.0, 1.0, 0.0)
    ks = make_kscene(0, np.zeros(0, np.int32), np.zeros((0, 3)), np.zeros(0), np.zeros(0), np.zeros(0), 0.0, 0.01,
                     _EMPTY_ENV(), None, bp)
    X = forward_kinematics(model, model.default_configuration())
    d = np.zeros(ks.nitem)
    item_depths(ks, np.ascontiguousarray(X[:, :3, :3]), np.ascontiguousarray(X[:, :3, 3]), d)
    touching = {frozenset(g) for g, dd in zip(bp.item_geoms, d) if dd > 0.0}
    kept = [p for p in pairs if frozenset((p.geom1, p.geom2)) not in touching]
    names = [f"{model.geoms[p.geom1].name}-{model.geoms[p.geom2].name}" for p in pairs
             if frozenset((p.geom1, p.geom2)) in touching]
    return kept, names


def _EMPTY_ENV() -> dict:
    from pbsim.contact.environment import pack_environment

    return pack_environment([])


def _body_of(model, name) -> int:
    try:
        return model.body_index(name)
    except KeyError:
        raise ContactInputError(f"contact exclude/include: no body (link) named {name!r} in model "
                                f"{model.name!r}") from None


def _apply_overrides(model, rules: ContactRules, exclude, include):
    """Drop the geom pairs of the body pairs in ``exclude``; add every collision-geom pair of the
    body pairs in ``include``."""
    ex = {frozenset((_body_of(model, a), _body_of(model, b))) for a, b in exclude}
    geoms = model.geoms
    rules.body_pairs = [p for p in rules.body_pairs
                        if frozenset((geoms[p.geom1].body, geoms[p.geom2].body)) not in ex]
    have = {frozenset((p.geom1, p.geom2)) for p in rules.body_pairs}
    for a, b in include:
        ia, ib = _body_of(model, a), _body_of(model, b)
        ga = [i for i, g in enumerate(geoms) if g.body == ia and g.role == "collision"]
        gb = [i for i, g in enumerate(geoms) if g.body == ib and g.role == "collision"]
        for g1 in ga:
            for g2 in gb:
                if frozenset((g1, g2)) not in have:
                    rules.body_pairs.append(ContactPair(g1, g2))
                    have.add(frozenset((g1, g2)))
