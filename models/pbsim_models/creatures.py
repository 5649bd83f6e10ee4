"""Snakes (paper 001 Table 1), the 4-link swimmer and the 4-legged spider (paper 000 Sec. 6.2)."""

from __future__ import annotations

import numpy as np

from pbsim.model import JointSpec, ModelBuilder
from pbsim_models.parts import add_universal, box_link, capsule_link


def snake(ndof: int = 36, segment_length: float = 0.08, segment_mass: float = 0.2, radius: float = 0.025):
    """Free-floating snake with ``ndof`` DOF: a free head (6) and ``ndof - 6`` hinges alternating
    yaw (z) and pitch (y), so the tree is a chain whose DOF depth equals ``ndof`` (as in 001)."""
    if ndof < 7:
        raise ValueError("a snake needs at least 7 DOF (free head + one joint)")
    b = ModelBuilder(f"snake{ndof}")
    b.add_link(capsule_link("seg0", segment_mass, segment_length, radius, direction=(-1, 0, 0)))
    parent = "seg0"
    for i in range(1, ndof - 6 + 1):
        name = f"seg{i}"
        b.add_link(
            capsule_link(
                name,
                segment_mass,
                segment_length,
                radius,
                direction=(-1, 0, 0),
                rgba=(0.2, 0.6 + 0.3 * (i % 2), 0.2, 1),
            )
        )
        axis = np.array([0, 0, 1.0]) if i % 2 else np.array([0, 1.0, 0])
        b.add_joint(
            JointSpec(
                f"joint{i}",
                "revolute",
                parent,
                name,
                p=np.array([-segment_length, 0, 0]),
                axis=axis,
                lower=-1.2,
                upper=1.2,
                effort=50.0,
            )
        )
        parent = name
    m = b.build(floating_base=True)
    m.q_default = m.neutral()
    m.q_default[2] = radius
    return m


def swimmer(n_links: int = 4, link_length: float = 0.25, link_mass: float = 1.0, radius: float = 0.04):
    """The 4-link swimmer of paper 000: free base + 3 hinges about z (9 DOF)."""
    b = ModelBuilder("swimmer")
    b.add_link(capsule_link("link0", link_mass, link_length, radius, rgba=(0.2, 0.4, 0.9, 1)))
    for i in range(1, n_links):
        b.add_link(capsule_link(f"link{i}", link_mass, link_length, radius, rgba=(0.2, 0.4, 0.9, 1)))
        b.add_joint(
            JointSpec(
                f"joint{i}",
                "revolute",
                f"link{i - 1}",
                f"link{i}",
                p=np.array([link_length, 0, 0]),
                axis=np.array([0, 0, 1.0]),
                lower=-1.5,
                upper=1.5,
                effort=20.0,
            )
        )
    m = b.build(floating_base=True)
    m.gravity = np.zeros(3)  # neutrally buoyant
    return m


def spider(leg_length: float = 0.3, shin_length: float = 0.3, torso_half=(0.15, 0.15, 0.05)):
    """The 4-legged spider of paper 000: free torso, per leg a 2-DOF hip (hinges about the leg's
    horizontal normal, then z) and a knee hinge: 6 + 4 * (2 + 1) = 18 DOF."""
    b = ModelBuilder("spider")
    b.add_link(box_link("torso", 2.0, torso_half))
    for k, ang in enumerate(np.deg2rad([45, 135, 225, 315])):
        d = np.array([np.cos(ang), np.sin(ang), 0.0])
        hip = np.array([d[0] * torso_half[0], d[1] * torso_half[1], 0.0])
        thigh, shin = f"thigh{k}", f"shin{k}"
        b.add_link(capsule_link(thigh, 0.3, leg_length, 0.03, direction=d, rgba=(0.9, 0.3, 0.2, 1)))
        b.add_link(
            capsule_link(
                shin, 0.2, shin_length, 0.025, direction=(d[0] * 0.4, d[1] * 0.4, -1.0), rgba=(0.9, 0.6, 0.2, 1)
            )
        )
        normal = np.array([-d[1], d[0], 0.0])
        add_universal(b, f"hip{k}", "torso", thigh, hip, axes=(normal, (0, 0, 1.0)), lower=-1.2, upper=1.2)
        b.add_joint(
            JointSpec(
                f"knee{k}", "revolute", thigh, shin, p=d * leg_length, axis=normal, lower=-1.5, upper=1.5, effort=30.0
            )
        )
    m = b.build(floating_base=True)
    m.q_default = m.neutral()
    m.q_default[2] = 0.35
    return m


def spider_contact_points(model, torso_half=(0.15, 0.15, 0.05), foot_radius=0.025, knee_radius=0.03):
    """Contact sample points of :func:`spider` for penalty contact (paper 000 Eq. 9): per leg the
    foot (shin tip, a sphere of the shin's radius) and the knee (thigh tip), plus the 8 torso
    corners, so no body can sink through the ground unseen.  Returns the ``points`` dict of
    ``make("pbad", model, points=...)`` (add ``contact``, ``D1``, ``D2``)."""
    body, local, radius = [], [], []
    hx, hy, hz = torso_half
    for sx in (-1, 1):
        for sy in (-1, 1):
            for sz in (-1, 1):
                body.append(model.body_index("torso"))
                local.append((sx * hx, sy * hy, sz * hz))
                radius.append(0.0)
    for k in range(4):
        shin = model.body_index(f"shin{k}")
        # the shin link's capsule: from its origin along its axis, length 2 * half-length
        g = next(g for g in model.geoms if g.name == f"shin{k}_collision")
        body.append(shin)
        local.append(g.p * 2.0)  # the geom centre sits at half the rod
        radius.append(foot_radius)
        body.append(shin)  # the knee: the shin's origin (the thigh's tip)
        local.append((0.0, 0.0, 0.0))
        radius.append(knee_radius)
    return dict(
        points_body=np.array(body, np.int32), points_local=np.array(local, float), points_radius=np.array(radius, float)
    )


def spider_standing(model, foot_radius=0.025):
    """``q_default`` of :func:`spider` lowered so that the feet (shin tips, radius ``foot_radius``)
    just touch the ground plane z = 0: the spider starts standing, at rest."""
    from pbsim.dynamics.api import forward_kinematics

    q = np.array(model.q_default, float)
    pts = spider_contact_points(model)
    T = forward_kinematics(model, q)
    z = min(
        T[b][2, :3] @ p + T[b][2, 3] - r
        for b, p, r in zip(pts["points_body"], pts["points_local"], pts["points_radius"])
    )
    q[2] -= z
    return q


def spider_trot(model, q, t, freq=1.0, sweep=0.35, lift=0.35, knee=0.0, ramp=1.0):
    """Joint reference of a diagonal trot for :func:`spider` at time ``t`` (SPD target ``q_ref``;
    the free-joint entries are copied from ``q``).  Legs 0, 2 and legs 1, 3 (diagonal pairs) are
    half a period apart.  While ``sin(phase) > 0`` a leg swings: its hip pitch lifts it (a negative
    rotation about the leg's horizontal normal raises the foot) and it moves forward; while
    ``sin(phase) < 0`` it is on the ground and its hip yaw sweeps the foot backwards (-x), which
    pushes the torso towards +x; a negative knee angle (``-knee``) folds the swinging shin up.
    Left legs (0, 1; y > 0) sweep backwards by turning about +z, right legs (2, 3) about -z.
    The amplitudes ramp in linearly over ``ramp`` seconds."""
    qref = np.array(q, float).copy()
    a = min(1.0, t / ramp) if ramp > 0 else 1.0
    for k in range(4):
        ph = 2.0 * np.pi * freq * t + (0.0 if k in (0, 2) else np.pi)
        sgn = 1.0 if k in (0, 1) else -1.0
        qref[model.idx_q(f"hip{k}_0").start] = -a * lift * max(0.0, np.sin(ph))
        qref[model.idx_q(f"hip{k}_1").start] = a * sgn * sweep * np.cos(ph)
        qref[model.idx_q(f"knee{k}").start] = -a * knee * max(0.0, np.sin(ph))  # < 0 folds the shin up
    return qref
