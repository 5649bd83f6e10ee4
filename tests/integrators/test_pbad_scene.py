"""PBAD reads the same contact scene as the explicit integrators (pbsim.make_scene)."""

import numpy as np
import pytest

import pbsim
from pbsim.model import LinkSpec, ModelBuilder
from pbsim.model.geometry import Geometry


def box_model(half=(0.1, 0.1, 0.1), mass=1.0):
    b = ModelBuilder("box")
    hx, hy, hz = half
    link = LinkSpec(
        "box", mass, np.zeros(3), mass / 3 * np.diag([hy * hy + hz * hz, hx * hx + hz * hz, hx * hx + hy * hy])
    )
    link.geoms.append(Geometry("box_c", "box", -1, np.eye(3), np.zeros(3), np.array(half), "collision"))
    b.add_link(link)
    return b.build(floating_base=True)


def test_pbad_box_rests_on_scene_plane_like_euler():
    m = box_model()
    scene = pbsim.make_scene(m, ground="plane", mu=0.5)
    q0 = m.neutral()
    q0[2] = 0.15  # 5 cm above the ground
    big = pbsim.rollout(m, "pbad", dt=0.02, steps=100, q0=q0, scene=scene)
    small = pbsim.rollout(m, "euler", dt=1e-3, steps=2000, q0=q0, scene=scene)
    assert np.all(np.isfinite(big.q))
    z_pbad, z_euler = big.q[-1, 2], small.q[-1, 2]
    assert 0.08 < z_pbad < 0.1 + 1e-3 and 0.08 < z_euler < 0.1 + 1e-3  # resting on its face, shallow
    assert abs(z_pbad - z_euler) < 0.01
    assert np.linalg.norm(big.v[-1]) < 0.05


def test_pbad_without_contact_falls_through():
    m = box_model()
    q0 = m.neutral()
    q0[2] = 0.15
    dt, n, g = 0.02, 50, 9.81
    tr = pbsim.rollout(m, "pbad", dt=dt, steps=n, q0=q0)
    assert tr.q[-1, 2] < -1.0
    # PBAD order 2 in free fall is the first-order (semi-implicit-Euler-like) recursion
    # v_k+1 = v_k - g dt, z_k+1 = z_k + dt v_k+1: z_n = z_0 - g dt^2 n (n + 1) / 2 = -4.8531 exactly
    # (measured -4.8530999999983; the continuous -4.755 is O(g dt t / 2) = 0.098 away; half gravity
    # would give -2.35).
    z_discrete = q0[2] - g * dt * dt * n * (n + 1) / 2
    assert abs(tr.q[-1, 2] - z_discrete) < 1e-9, (tr.q[-1, 2], z_discrete)
    assert abs(tr.q[-1, 2] - (q0[2] - 0.5 * g * (n * dt) ** 2)) <= g * dt * (n * dt)  # O(dt) off the exact fall
    assert np.allclose(tr.v[-1], [0, 0, -g * n * dt, 0, 0, 0], atol=1e-9)  # v = -g t, no spin, no drift


def test_pbad_refuses_terrain_scene(tmp_path):
    import trimesh

    from pbsim.errors import InputError

    m = box_model()
    f = tmp_path / "t.stl"
    trimesh.creation.box(extents=(2, 2, 0.2)).export(f)
    scene = pbsim.make_scene(m, ground=None, terrain=str(f), spacing=0.05)
    with pytest.raises(InputError, match="pbad supports"):
        pbsim.integrators.make("pbad", m, scene)
