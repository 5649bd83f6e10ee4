"""Small helpers shared by the generators: capsule links and universal (2-DOF ball) joints."""

from __future__ import annotations

import numpy as np

from pbsim.model import Geometry, JointSpec, LinkSpec


def rot_to_axis(axis) -> np.ndarray:
    """A rotation taking local +z to ``axis``."""
    z = np.asarray(axis, float) / np.linalg.norm(axis)
    a = np.array([1.0, 0, 0]) if abs(z[0]) < 0.9 else np.array([0, 1.0, 0])
    x = np.cross(a, z)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def capsule_link(name, mass, length, radius, direction=(1.0, 0.0, 0.0), rgba=(0.8, 0.5, 0.2, 1.0)) -> LinkSpec:
    """A solid rod from the link origin along ``direction`` (capsule shape, cylinder inertia)."""
    d = np.asarray(direction, float)
    d /= np.linalg.norm(d)
    Iaxial = 0.5 * mass * radius**2
    Iperp = mass * (3 * radius**2 + length**2) / 12.0
    R = rot_to_axis(d)
    I = R @ np.diag([Iperp, Iperp, Iaxial]) @ R.T
    link = LinkSpec(name, mass=mass, com=d * length / 2, inertia=I)
    for role in ("visual", "collision"):
        link.geoms.append(
            Geometry(
                f"{name}_{role}",
                "capsule",
                -1,
                R,
                d * length / 2,
                np.array([radius, length / 2]),
                role,
                rgba=np.array(rgba),
            )
        )
    return link


def box_link(name, mass, half, rgba=(0.3, 0.5, 0.8, 1.0)) -> LinkSpec:
    hx, hy, hz = half
    I = mass / 3.0 * np.diag([hy * hy + hz * hz, hx * hx + hz * hz, hx * hx + hy * hy])
    link = LinkSpec(name, mass=mass, inertia=I)
    for role in ("visual", "collision"):
        link.geoms.append(
            Geometry(
                f"{name}_{role}", "box", -1, np.eye(3), np.zeros(3), np.array(half, float), role, rgba=np.array(rgba)
            )
        )
    return link


def free_box(half=(0.2, 0.2, 0.05), mass=1.0):
    """A floating solid box of half extents ``half`` (one body, one box geometry): the benchmarks'
    and tests' sliding block (paper 002's B-T3 incline box by default: 0.4 x 0.4 x 0.1 m, 1 kg)."""
    from pbsim.model.builder import ModelBuilder

    a, b, c = 2 * np.asarray(half, float)
    I = mass / 12 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    mb = ModelBuilder("box")
    mb.add_link(LinkSpec("body", mass, np.zeros(3), I, [Geometry("g", "box", 0, np.eye(3), np.zeros(3), half)]))
    return mb.build(floating_base=True)


def floating_chain(n=10, link_length=0.1, link_mass=0.1, radius=0.01):
    """``n`` capsules joined by the papers' 2-DOF joints (:func:`add_universal`) on a free base: the
    floating chain of paper 003 Fig. 6."""
    from pbsim.model.builder import ModelBuilder

    b = ModelBuilder(f"floating_chain{n}")
    for i in range(n):
        b.add_link(capsule_link(f"link{i}", link_mass, link_length, radius))
        if i:
            add_universal(b, f"joint{i}", f"link{i - 1}", f"link{i}", [link_length, 0, 0])
    return b.build(floating_base=True)


def add_universal(b, name, parent, child_link, p, axes=((0, 1.0, 0), (0, 0, 1.0)), lower=-np.inf, upper=np.inf):
    """A 2-DOF 'ball' joint (the papers' chains and spider): two hinges through one point,
    with a massless link between them."""
    mid = f"{name}_cross"
    b.add_link(LinkSpec(mid))
    b.add_joint(
        JointSpec(
            f"{name}_0",
            "revolute",
            parent,
            mid,
            p=np.asarray(p, float),
            axis=np.array(axes[0]),
            lower=lower,
            upper=upper,
        )
    )
    b.add_joint(JointSpec(f"{name}_1", "revolute", mid, child_link, axis=np.array(axes[1]), lower=lower, upper=upper))
