"""A branchy 72-DOF quadruped ("dog") standing in for the dog of paper 001 (Table 1: n = 72).

Our own design, not Zhang et al.'s model: a free pelvis (6), a 3-segment spine of ball joints to
the chest (9), a 2-ball neck/head with a jaw hinge (7), a 3-ball tail with a hinged tip (10),
and four legs of a ball hip/shoulder, ball knee/elbow, ball ankle/wrist and a toe hinge (4 x 10):
6 + 9 + 7 + 10 + 40 = 72 DOF.  Deepest path (pelvis -> spine -> front toe): 6 + 9 + 10 =
25 DOF (the paper's dog: 24).  x forward, z up; about 30 kg.
"""

from __future__ import annotations

import numpy as np

from pbsim.model import JointSpec, ModelBuilder
from pbsim_models.parts import box_link, capsule_link

LEG_SEGMENTS = (
    ("upper", 0.22, 1.6, 0.035),
    ("lower", 0.22, 0.8, 0.025),
    ("foot", 0.10, 0.3, 0.02),
    ("toe", 0.05, 0.1, 0.015),
)


def dog():
    """The 72-DOF quadruped; ``q_default`` stands it with the feet about 1 cm above z = 0."""
    b = ModelBuilder("dog72", source="")
    b.add_link(box_link("pelvis", 5.0, (0.1, 0.09, 0.07), rgba=(0.6, 0.45, 0.3, 1)))
    seg = 0.14
    parent, p = "pelvis", np.array([0.1, 0, 0])
    for i in range(3):  # spine1, spine2, chest
        name = ("spine1", "spine2", "chest")[i]
        b.add_link(capsule_link(name, 4.0, seg, 0.08, direction=(1, 0, 0), rgba=(0.6, 0.45, 0.3, 1)))
        b.add_joint(JointSpec(f"{name}_joint", "ball", parent, name, p=p, effort=400.0))
        parent, p = name, np.array([seg, 0, 0])
    # neck and head (ball, ball) and a jaw hinge
    b.add_link(capsule_link("neck", 1.5, 0.16, 0.05, direction=(1, 0, 1), rgba=(0.6, 0.45, 0.3, 1)))
    b.add_joint(JointSpec("neck_joint", "ball", "chest", "neck", p=np.array([seg, 0, 0.04]), effort=200.0))
    b.add_link(capsule_link("head", 1.5, 0.18, 0.06, direction=(1, 0, -0.2), rgba=(0.6, 0.45, 0.3, 1)))
    b.add_joint(
        JointSpec("head_joint", "ball", "neck", "head", p=0.16 * np.array([1, 0, 1]) / np.sqrt(2), effort=100.0)
    )
    b.add_link(capsule_link("jaw", 0.3, 0.14, 0.025, direction=(1, 0, -0.3), rgba=(0.5, 0.35, 0.25, 1)))
    b.add_joint(
        JointSpec(
            "jaw_joint",
            "revolute",
            "head",
            "jaw",
            p=np.array([0.02, 0, -0.04]),
            axis=np.array([0, 1.0, 0]),
            lower=-0.1,
            upper=0.6,
            effort=20.0,
        )
    )
    # tail: 3 balls and a hinged tip
    parent, p = "pelvis", np.array([-0.1, 0, 0.04])
    for i in range(4):
        name = f"tail{i}"
        b.add_link(capsule_link(name, 0.15, 0.09, 0.015, direction=(-1, 0, 0.3), rgba=(0.5, 0.35, 0.25, 1)))
        b.add_joint(
            JointSpec(
                f"{name}_joint",
                "ball" if i < 3 else "revolute",
                parent,
                name,
                p=p,
                axis=np.array([0, 0, 1.0]),
                effort=10.0,
            )
        )
        parent, p = name, 0.09 * np.array([-1, 0, 0.3]) / np.linalg.norm([-1, 0, 0.3])
    # legs: right/left x front/hind; front legs hang from the chest, hind legs from the pelvis
    for fr, base, px in (("front", "chest", seg * 0.8), ("hind", "pelvis", 0.0)):
        for side, sy in (("right", -1.0), ("left", 1.0)):
            parent, p = base, np.array([px, sy * 0.09, -0.05])
            for k, (part, length, mass, radius) in enumerate(LEG_SEGMENTS):
                name = f"{side}_{fr}_{part}"
                d = (0, 0, -1) if part != "toe" else (1, 0, -0.3)
                b.add_link(capsule_link(name, mass, length, radius, direction=d, rgba=(0.55, 0.4, 0.28, 1)))
                jn = (
                    f"{side}_{fr}_"
                    + (
                        ("shoulder" if fr == "front" else "hip"),
                        ("elbow" if fr == "front" else "knee"),
                        ("wrist" if fr == "front" else "ankle"),
                        "toe",
                    )[k]
                )
                b.add_joint(
                    JointSpec(
                        jn,
                        "ball" if part != "toe" else "revolute",
                        parent,
                        name,
                        p=p,
                        axis=np.array([0, 1.0, 0]),
                        effort=300.0 if k < 2 else 100.0,
                    )
                )
                parent = name
                p = np.asarray(d, float) / np.linalg.norm(d) * length
    m = b.build(floating_base=True)
    m.q_default = m.neutral()
    m.q_default[2] = 0.05 + sum(s[1] for s in LEG_SEGMENTS[:3]) + 0.03  # hip offset + leg + toe
    return m
