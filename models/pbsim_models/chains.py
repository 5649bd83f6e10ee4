"""Fixed-base serial chains (papers 000 Fig. 2-4 and 004 Fig. 2-3)."""

from __future__ import annotations

import numpy as np

from pbsim.model import JointSpec, LinkSpec, ModelBuilder
from pbsim_models.parts import add_universal, capsule_link


def chain(
    n: int,
    joint: str = "revolute",
    link_length: float = 0.1,
    link_mass: float = 0.1,
    radius: float = 0.01,
    damping: float = 0.0,
):
    """``n`` uniform rods hanging from the world, laid out along +x at q = 0 (horizontal).

    ``joint``: "revolute" (1 DOF about y: swings in the x-z plane), "ball2" / "ball" meaning the
    papers' 2-DOF ball joint (hinges about y then z through one point), or "spherical"
    (3-DOF quaternion ball joint).  Gravity is -z.
    """
    if n < 1:
        raise ValueError("a chain needs at least one link")
    kind = {"revolute": "revolute", "ball": "ball2", "ball2": "ball2", "spherical": "spherical"}[joint]
    b = ModelBuilder(f"{'ball' if kind != 'revolute' else ''}chain{n}", source="")
    b.add_link(LinkSpec("world"))
    parent = "world"
    for i in range(n):
        name = f"link{i}"
        b.add_link(capsule_link(name, link_mass, link_length, radius))
        p = np.zeros(3) if i == 0 else np.array([link_length, 0, 0])
        if kind == "revolute":
            b.add_joint(
                JointSpec(f"joint{i}", "revolute", parent, name, p=p, axis=np.array([0, 1.0, 0]), damping=damping)
            )
        elif kind == "ball2":
            add_universal(b, f"joint{i}", parent, name, p)
        else:
            b.add_joint(JointSpec(f"joint{i}", "ball", parent, name, p=p, damping=damping))
        parent = name
    return b.build()


def chain_energy_scale(n: int, link_length: float = 0.1, link_mass: float = 0.1, g: float = 9.81) -> float:
    """m g L n^2 / 2: the potential energy a :func:`chain` of ``n`` links released horizontally
    (E0 = 0) has lost when it hangs straight down; the scale of its energy plots and bars."""
    return link_mass * g * link_length * n * n / 2
