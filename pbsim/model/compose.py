"""Several robots and objects in one simulation: :func:`combine` joins Models into one (their
kinematic trees side by side, a *group* each), :func:`free_object` makes a free rigid body with one
shape (a box to drop on a robot, a ball to grasp).

Contact between the parts (:mod:`pbsim.contact.filter`): bodies of different groups always may
touch (robot-object, object-object), as in pybullet, MuJoCo and Drake; within a group the part's
own rules hold (an MJCF's pairs; a URDF's self-collision only when asked).  When a part brings its
own pair list (MJCF), the combined model lists every pair explicitly: its pairs, the other parts'
collision shapes against all its shapes that may collide, and the other parts' shapes against its
world geometry (its floor).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from pbsim.errors import InputError
from pbsim.model.geometry import ContactPair, Geometry
from pbsim.model.model import Model

OBJECT_SHAPES = ("box", "sphere", "capsule", "cylinder")
# the Model's per-body and per-DOF (per-q: springref) arrays, concatenated part after part
PER_BODY_DOF = (
    "jtype",
    "axis",
    "tree_R",
    "tree_p",
    "mass",
    "com",
    "inertia_com",
    "lower",
    "upper",
    "effort_limit",
    "velocity_limit",
    "damping",
    "armature",
    "stiffness",
    "frictionloss",
    "springref",
    "gravcomp",
)


def free_object(
    shape: str = "box", size=(0.05, 0.05, 0.05), mass: float = 1.0, name: str = "object", rgba=(0.85, 0.45, 0.2, 1.0)
) -> Model:
    """A free rigid body of uniform density with one collision shape: box (half extents),
    sphere (radius), capsule or cylinder (radius, half length along z)."""
    from pbsim.model.builder import JointSpec, LinkSpec, ModelBuilder

    if shape not in OBJECT_SHAPES:
        raise InputError(f"free_object: shape must be one of {OBJECT_SHAPES}, got {shape!r}")
    s = np.atleast_1d(np.asarray(size, float))
    need = {"box": 3, "sphere": 1, "capsule": 2, "cylinder": 2}[shape]
    if s.shape != (need,) or not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise InputError(f"free_object: a {shape} needs {need} positive size(s), got {size!r}")
    mass = float(mass)
    if not (np.isfinite(mass) and mass > 0):
        raise InputError(f"free_object: mass must be a positive number, got {mass!r}")
    if shape == "box":
        x, y, z = 2 * s
        I = mass / 12.0 * np.diag([y * y + z * z, x * x + z * z, x * x + y * y])
    elif shape == "sphere":
        I = 0.4 * mass * s[0] ** 2 * np.eye(3)
    else:  # capsule/cylinder: a cylinder of the full length (close enough for a capsule's tips)
        r, h = s[0], 2 * s[1] + (2 * s[0] if shape == "capsule" else 0.0)
        I = np.diag([mass * (3 * r * r + h * h) / 12.0] * 2 + [0.5 * mass * r * r])
    b = ModelBuilder(name, "")
    b.world_links.add("world")
    g = Geometry(name, shape, -1, np.eye(3), np.zeros(3), s, "collision", rgba=np.asarray(rgba, float))
    b.add_link(LinkSpec(name, mass=mass, com=np.zeros(3), inertia=I, geoms=[g]))
    b.add_joint(JointSpec(f"{name}_free", "free", "world", name))
    return b.build(floating_base=True)


def _unique(names: list[str], taken: set, prefix: str) -> list[str]:
    out = []
    for n in names:
        m = n if n not in taken else f"{prefix}/{n}"
        k = 2
        while m in taken:
            m = f"{prefix}{k}/{n}"
            k += 1
        taken.add(m)
        out.append(m)
    return out


def _collides(g) -> bool:
    return g.shape != "plane" and (g.role == "collision" or bool(g.contype or g.conaffinity))


def combine(*parts, name: str | None = None) -> Model:
    """One Model of ``parts`` (Models, or ``(model, position)`` / ``(model, (x, y, z, qw, qx, qy,
    qz))`` to place a part whose root is free: its default configuration's root pose is replaced).
    Bodies, joints, q and v follow each other in the order given; a name that repeats gets its
    part's name as prefix.  The first part's gravity holds.  Actuators, equality constraints,
    tendons and keyframes: the first part's (a later part's are refused by name)."""
    items = []
    for p in parts:
        model, pose = p if isinstance(p, tuple) else (p, None)
        if not isinstance(model, Model):
            raise InputError(f"combine: expected pbsim Models (or (model, pose) pairs), got {type(model).__name__}")
        items.append((model, pose))
    if not items:
        raise InputError("combine: no models given")
    for model, _ in items[1:]:
        what = [
            k
            for k, n in (
                ("actuators", model.nu),
                ("equality constraints", len(model.equality)),
                ("tendons", model.ntendon),
            )
            if n
        ]
        if what:
            raise InputError(
                f"combine: the {' and '.join(what)} of {model.name!r} would be dropped; give the model with "
                f"them first (only the first part's actuators, equality constraints, tendons and keyframes are kept)"
            )
    body_names, joint_names, taken_b, taken_j = [], [], set(), set()
    arrays = {k: [] for k in ("parent",) + PER_BODY_DOF}
    geoms, frames, qdef, notes, groups, mimic = [], [], [], [], [], []
    lim_kp, lim_kd = [], []
    pairs: list | None = [] if any(m.contact_pairs is not None for m, _ in items) else None
    explicit = []  # per part: its pairs (shifted) or None
    geom_base, nb0 = [], 0
    for gi, (m, pose) in enumerate(items):
        body_names += _unique(list(m.body_names), taken_b, m.name)
        joint_names += _unique(list(m.joint_names), taken_j, m.name)
        arrays["parent"].append(np.where(m.parent >= 0, m.parent + nb0, -1))
        for k in PER_BODY_DOF:
            arrays[k].append(np.asarray(getattr(m, k)))
        kp, kd = m.limit_gains()
        lim_kp.append(kp)
        lim_kd.append(kd)
        q = m.default_configuration()
        if pose is not None:
            if not (m.nb and m.jtype[0] == 3 and m.parent[0] == -1):
                raise InputError(f"combine: {m.name!r} has no free root to place")
            pz = np.asarray(pose, float).reshape(-1)
            if pz.shape not in ((3,), (7,)) or not np.all(np.isfinite(pz)):
                raise InputError(f"combine: a pose is (x, y, z) or (x, y, z, qw, qx, qy, qz), got {pose!r}")
            q[:3] = pz[:3]
            if pz.shape == (7,):
                q[3:7] = pz[3:] / np.linalg.norm(pz[3:])
        qdef.append(q)
        geom_base.append(len(geoms))
        for g in m.geoms:
            geoms.append(dataclasses.replace(g, body=g.body + nb0 if g.body >= 0 else g.body))
        for f in m.frames:
            frames.append(dataclasses.replace(f, body=f.body + nb0 if f.body >= 0 else f.body))
        groups.append(np.full(m.nb, gi, np.int32))
        mimic += [(a, b, c, d) for a, b, c, d in m.mimic]
        notes += [f"{m.name}: {n}" for n in m.notes] if gi else list(m.notes)
        explicit.append(
            None
            if m.contact_pairs is None
            else [
                dataclasses.replace(p, geom1=p.geom1 + geom_base[-1], geom2=p.geom2 + geom_base[-1])
                for p in m.contact_pairs
            ]
        )
        nb0 += m.nb
    if pairs is not None:
        # every part's own pairs (a part without a list: its self-collision stays off), then across parts
        for ex in explicit:
            if ex is not None:
                pairs += ex
        rng = [(geom_base[i], geom_base[i + 1] if i + 1 < len(items) else len(geoms)) for i in range(len(items))]
        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                for a in range(*rng[i]):
                    for b in range(*rng[j]):
                        ga, gb = geoms[a], geoms[b]
                        if (ga.body < 0 and gb.body < 0) or not (_collides(ga) and _collides(gb)):
                            continue
                        pairs.append(
                            ContactPair(
                                a,
                                b,
                                ga.margin + gb.margin,
                                None if ga.friction is None or gb.friction is None else max(ga.friction, gb.friction),
                            )
                        )
        for p in pairs:  # a shape in a pair collides
            for gi_ in (p.geom1, p.geom2):
                if geoms[gi_].role != "collision":
                    geoms[gi_] = dataclasses.replace(geoms[gi_], role="collision")
    first = items[0][0]
    # the first part's bodies, joints, DOFs, frames and geoms keep their indices and names: its
    # actuators, equality constraints, tendons and keyframes hold as they are (keyframes: the other
    # parts at their default configuration, at rest)
    keyframes = {
        k: dataclasses.replace(
            kf,
            q=np.concatenate([kf.q] + qdef[1:]),
            v=np.concatenate([kf.v] + [np.zeros(m.nv) for m, _ in items[1:]]),
        )
        for k, kf in first.keyframes.items()
    }
    cat = {k: np.concatenate(v) for k, v in arrays.items()}
    springref = cat.pop("springref")
    out = Model(
        name or "+".join(m.name for m, _ in items),
        body_names,
        joint_names,
        **cat,
        gravity=first.gravity.copy(),
        frames=frames,
        geoms=geoms,
        q_default=np.concatenate(qdef),
        source=first.source,
        notes=notes,
        springref=springref,
        limit_stiffness=np.concatenate(lim_kp),
        limit_damping=np.concatenate(lim_kd),
        actuators=first.actuators,
        mimic=mimic,
        contact_pairs=pairs,
        contact_disabled=any(m.contact_disabled for m, _ in items),
        body_group=np.concatenate(groups),
        equality=[dataclasses.replace(e) for e in first.equality],
        tendons=first.tendons,
        keyframes=keyframes,
        fluid=_combined_fluid(items),
        soft_limits=_combined_soft_limits(items),
    )
    return out


def _combined_soft_limits(items):
    """The parts' MuJoCo limits side by side (DOFs renumbered; tendons are the first part's alone,
    as above); None where no part has any."""
    from pbsim.model.limits import SoftLimits

    nv0 = np.cumsum([0] + [m.nv for m, _ in items])
    have = [m.soft_limits.shifted(int(n0), 0) for n0, (m, _) in zip(nv0, items) if m.soft_limits is not None]
    return SoftLimits.concatenate(have) if have else None


def _combined_fluid(items):
    """The parts' fluid forces side by side (bodies renumbered); parts without a medium take none.
    Two parts in different media are refused."""
    from pbsim.model.fluid import Fluid

    have = [(m, nb0) for nb0, (m, _) in zip(np.cumsum([0] + [m.nb for m, _ in items]), items) if m.fluid is not None]
    if not have:
        return None
    f0 = have[0][0].fluid
    for m, _ in have[1:]:
        f = m.fluid
        if (f.density, f.viscosity) != (f0.density, f0.viscosity) or not np.array_equal(f.wind, f0.wind):
            raise InputError(f"combine: {have[0][0].name!r} and {m.name!r} are in different fluid media "
                             f"({f0.describe()}; {f.describe()})")
    return Fluid(density=f0.density, viscosity=f0.viscosity, wind=f0.wind,
                 body=np.concatenate([m.fluid.body + nb0 for m, nb0 in have]),
                 R=np.concatenate([m.fluid.R for m, _ in have]), p=np.concatenate([m.fluid.p for m, _ in have]),
                 box=np.concatenate([m.fluid.box for m, _ in have]), names=sum((m.fluid.names for m, _ in have), []))
