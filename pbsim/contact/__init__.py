"""Contact: environment geometry, robot contact points, penetration depth/normal, force models."""
from __future__ import annotations

import numpy as np

from pbsim.contact.environment import (Box, Capsule, ContactInputError, Cylinder, Ellipsoid, EmptyMeshError,
                                       GridBudgetError, HeightField, MeshTerrain, OpenMeshError, Plane, Sphere,
                                       world_environment)
from pbsim.errors import check_options
from pbsim.contact.points import ContactPoints, sample_contact_points
from pbsim.contact.scene import KScene, Scene

# world geoms with an environment shape
WORLD_SHAPES = ("plane", "box", "sphere", "capsule", "mesh", "cylinder", "ellipsoid", "hfield")
BODY_SHAPES = ("box", "sphere", "capsule", "cylinder", "mesh", "ellipsoid")  # shapes on bodies with contact points

__all__ = ["Scene", "KScene", "Plane", "Sphere", "Box", "Capsule", "Cylinder", "Ellipsoid", "HeightField", "MeshTerrain", "ContactPoints",
           "sample_contact_points", "make_scene", "default_scene", "world_environment", "contact_query", "pair_contacts",
           "contact_diagnostics", "up_rotation",
           "ContactInputError", "EmptyMeshError", "OpenMeshError", "GridBudgetError"]


def up_rotation(model) -> np.ndarray:
    """Rotation taking world +z to the model's "up" (``-gravity``): terrain files are z-up, so a
    y-up robot (``gravity = (0, -9.81, 0)``) gets its terrain rotated with this."""
    g = np.asarray(model.gravity, float)
    ng = np.linalg.norm(g)
    up = -g / ng if ng > 0 else np.array([0.0, 0.0, 1.0])
    z = np.array([0.0, 0.0, 1.0])
    c = float(z @ up)
    if c > 1 - 1e-12:
        return np.eye(3)
    if c < -1 + 1e-12:
        return np.diag([1.0, -1.0, -1.0])
    a = np.cross(z, up)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + K + K @ K / (1 + c)


def make_scene(model, ground: str | None = "auto", terrain=None, mu: float = 0.8, stiffness: float | None = None,
               damping: float | None = None, friction_eps: float = 0.01, ground_height: float = 0.0,
               spacing: float = 0.02, padding: float = 0.2, max_bytes: int = 512 * 2**20,
               open_mesh: str = "height", terrain_offset=(0.0, 0.0, 0.0), exact_band: float | None = None,
               points: ContactPoints | None = None, environment=(), body_contact: bool = True,
               self_collision: bool = False, self_collision_parents: str = "exclude_parent", exclude=(),
               include=(), initial_overlaps: str = "exclude", friction: str = "scene", hfield_data=None,
               **point_options) -> Scene:
    """A contact scene for ``model``.

    ``ground``: "auto" (default: the model's world geometry -- MJCF worldbody geoms, see
    :func:`world_environment` -- when it has any, else the plane), "model" (world geometry only),
    "plane" (plane through ``ground_height`` along -gravity, so y-up models work once their
    gravity is set; world geometry ignored) or None (neither).  ``terrain``: a mesh file
    (STL/OBJ/OFF, z-up; rotated to the model's up and shifted by ``terrain_offset``) or a :class:`MeshTerrain`; ``spacing``,
    ``padding``, ``max_bytes``, ``open_mesh``, ``exact_band`` go to :meth:`MeshTerrain.from_mesh`;
    ``exact_band`` None -> ``max(0.1, largest contact-point radius + 2 spacing)``: grid distances
    are clamped at the band, so a sphere point of radius r > band would read a phantom contact.  ``points``:
    contact points (default :func:`sample_contact_points` with ``point_options``).
    ``environment``: extra shapes.

    Which shapes touch which (:mod:`pbsim.contact.filter`): the file's rules (MJCF: MuJoCo's
    filtering, ``<exclude>``, ``<pair>``), else pbsim's default (robot-environment; self-collision
    with ``self_collision=True``, its parent rule ``self_collision_parents``, shapes touching at the
    default configuration dropped unless ``initial_overlaps="keep"`` (named in ``Scene.notes``),
    body (link) name pairs ``exclude``/``include``); the shapes added here (plane, terrain, ``environment``) touch
    every collision shape; ``body_contact=False`` keeps the environment contacts only.
    ``friction``: "scene" (``mu`` everywhere, default) or "model" (body-body pairs take the file's
    friction, MuJoCo's ``max`` of the two geoms' or the ``<pair>``'s).  ``hfield_data``: ``{hfield
    name: (nrow, ncol) elevations}`` replacing the file's (MuJoCo's run-time data,
    :func:`pbsim.io.mjcf.load_mjcf`)."""
    from pbsim.contact.filter import ContactRules, contact_rules

    if point_options:  # the only keywords beyond make_scene's own: sample_contact_points' options
        import inspect

        own = [n for n in inspect.signature(make_scene).parameters if n not in ("model", "point_options")]
        pt = [n for n in inspect.signature(sample_contact_points).parameters if n not in ("model", "geoms")]
        check_options("make_scene", point_options, own + pt)
    if friction not in ("scene", "model"):
        raise ContactInputError(f"friction must be 'scene' or 'model', got {friction!r}")
    if ground not in (None, "plane", "none", "auto", "model"):
        raise ContactInputError(f"ground must be 'auto', 'model', 'plane' or None, got {ground!r}")
    rules = contact_rules(model, self_collision=self_collision, parents=self_collision_parents, exclude=exclude,
                          include=include, body_contact=body_contact, initial_overlaps=initial_overlaps)
    if rules.notes:
        import warnings

        from pbsim.errors import PbsimWarning

        for n in rules.notes:
            warnings.warn(f"model {model.name!r}: {n}", PbsimWarning, stacklevel=2)
    if friction == "scene":
        from dataclasses import replace

        rules.body_pairs = [replace(p, friction=None) for p in rules.body_pairs]
    R = up_rotation(model)
    world_geoms = [g for g in rules.world_geoms if model.geoms[g].shape in WORLD_SHAPES] \
        if ground in ("auto", "model") else []
    if ground == "auto" and not world_geoms:
        ground = "plane"
    adds = ground == "plane" or terrain is not None or len(environment) > 0
    # the shapes that carry environment contact points: every collision shape (pbsim's rules), or those
    # the file pairs with its world shapes, and, when the scene adds shapes of its own, every shape the
    # file lets collide at all (contype or conaffinity set: MuJoCo's default floor would touch it)
    geoms = None
    if rules.world_allowed is not None:
        geoms = {g for g, s in rules.world_allowed.items() if s}
        if adds:
            geoms |= {i for i, g in enumerate(model.geoms) if g.body >= 0 and g.shape in BODY_SHAPES
                      and (g.role == "collision" or g.contype or g.conaffinity)}
        geoms = sorted(geoms)
    pts = points if points is not None else sample_contact_points(model, geoms=geoms, **point_options)
    if exact_band is None:  # grid distances clamp at the band: keep it beyond every point's radius
        exact_band = max(0.1, (float(pts.radius.max()) if len(pts) else 0.0) + 2.0 * float(spacing))
    env = list(environment)
    src = []
    if world_geoms:
        world, _ = world_environment(model, spacing=spacing, padding=padding, max_bytes=max_bytes,
                                     open_mesh=open_mesh, exact_band=exact_band, geoms=world_geoms, sources=src,
                                     hfield_data=hfield_data)
        env.extend(world)
    world_index = {g: len(environment) + i for i, g in enumerate(src)}  # world geom -> its shape in env
    if ground == "plane":
        env.append(Plane(R[:, 2], ground_height))
    if terrain is not None:
        if isinstance(terrain, MeshTerrain):
            env.append(terrain)
        else:
            T = np.eye(4)
            T[:3, :3] = R
            T[:3, 3] = np.asarray(terrain_offset, float)
            env.append(MeshTerrain.from_file(terrain, spacing=spacing, padding=padding, max_bytes=max_bytes,
                                             open_mesh=open_mesh, transform=T, exact_band=exact_band))
    allowed = None  # robot geom -> the positions in env of the file's world shapes it may touch
    if rules.world_allowed is not None:
        allowed = {g: {world_index[rules.world_geoms[i]] for i in s if rules.world_geoms[i] in world_index}
                   for g, s in rules.world_allowed.items()}
    rules = ContactRules(src, allowed, rules.body_pairs, rules.notes)
    sc = dict(mu=mu, stiffness=stiffness, damping=damping, friction_eps=friction_eps, rules=rules,
              world_index=tuple(world_index.values()), body_contact=body_contact)
    if not env:  # nothing to touch: no contact points either (no contact kernels compiled or run)
        return Scene(**sc)
    return Scene(environment=env, points=pts, **sc)


def default_scene(model, ground: str | None = "model", **kw) -> Scene:
    """The scene a run gets when none is given: the one rule ``pbsim.rollout(scene=None)``, the
    CLI (``--ground model``, its default) and the viewer share.

    ``ground="model"``: the model's own world geometry (MJCF worldbody geoms: planes, boxes,
    spheres, capsules, meshes, hfields as heightfields), with contact points sampled on the robot;
    a model without world geometry gets no environment contact.  "plane" or "auto" (the world
    geometry, else a plane: the viewer's default) add a ground plane; None: no environment.  In
    every case the bodies touch each other as the contact rules say (:mod:`pbsim.contact.filter`;
    ``body_contact=False``: they do not).  ``kw`` go to :func:`make_scene`.  Built once per model
    for the default arguments."""
    if ground == "none":
        ground = None
    cache = model.__dict__.setdefault("_default_scenes", {})
    key = ground if not any(v is not None for v in kw.values()) else None
    if key is not None and key in cache:
        return cache[key]
    sc = make_scene(model, ground=ground, **kw)
    if key is not None:
        cache[key] = sc
    return sc


def contact_query(model, scene, q):
    """Batched query: dict of X (B, n, 3), d (B, n), n (B, n, 3), dd_dv (B, n, nv)."""
    from pbsim.contact.query import contact_query_batch
    from pbsim.dynamics.api import as_batch
    from pbsim.dynamics.workspace import work_for

    Q, _ = as_batch(q, model.nq, "q")
    ks = scene.kernel_arrays(model) if isinstance(scene, Scene) else scene
    B, n = Q.shape[0], ks.npts
    X, D, N, dD = np.zeros((B, n, 3)), np.zeros((B, n)), np.zeros((B, n, 3)), np.zeros((B, n, model.nv))
    contact_query_batch(model.k, ks, work_for(model, B), np.ascontiguousarray(Q), X, D, N, dD)
    return dict(X=X, d=D, n=N, dd_dv=dD)


def pair_contacts(model, scene, q) -> dict:
    """The touching body-body points at one configuration ``q`` (the viewer's contacts between
    bodies): ``x`` (n, 3) world points, ``depth`` (n,), ``normal`` (n, 3) out of the shape's body B,
    ``body_a`` / ``body_b`` (n,) the point's body and the shape's, ``radius`` (n,), ``k``, ``c``,
    ``mu`` (n,) the point's penalty parameters."""
    from pbsim.contact.query import pair_query_batch
    from pbsim.dynamics.api import as_batch
    from pbsim.dynamics.workspace import work_for

    Q, _ = as_batch(q, model.nq, "q")
    ks = scene.kernel_arrays(model) if isinstance(scene, Scene) else scene
    n = len(ks.pp_item) if ks.nitem else 0
    X, D, N = np.zeros((1, n, 3)), np.zeros((1, n)), np.zeros((1, n, 3))
    if n:
        pair_query_batch(model.k, ks, work_for(model, 1), np.ascontiguousarray(Q[:1]), X, D, N)
    on = np.flatnonzero(D[0] > 0)
    it = ks.pp_item[on] if n else np.zeros(0, np.int32)
    return dict(x=X[0, on], depth=D[0, on], normal=N[0, on], body_a=ks.it_a[it] if n else it,
                body_b=ks.it_b[it] if n else it, radius=ks.pp_radius[on] if n else np.zeros(0),
                k=ks.pp_k[on] if n else np.zeros(0), c=ks.pp_c[on] if n else np.zeros(0),
                mu=ks.pp_mu[on] if n else np.zeros(0))


def contact_diagnostics(model, scene, q) -> dict:
    """Per state: number of active contacts (d > 0) and max penetration depth (m)."""
    r = contact_query(model, scene, q)
    d = r["d"]
    return dict(active=(d > 0).sum(axis=1), max_penetration=d.max(axis=1) if d.shape[1] else np.zeros(len(d)))
