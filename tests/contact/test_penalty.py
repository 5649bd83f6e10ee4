"""Penalty contact with semi-implicit Euler: rest, rolling without tunnelling, sliding distance,
robots dropped on plane and terrain (short versions; scripts/checks/drop_robots.py runs 10 s)."""

import numpy as np
import pytest

import pbsim
from _models import free_body
from conftest import pybullet_file, robosimian_urdf, terrain_file
from pbsim.contact import Plane, Scene, contact_diagnostics, contact_query, make_scene, sample_contact_points
from pbsim.rollout import rollout


def test_box_drop_comes_to_rest():
    m = free_body("box", [0.1, 0.1, 0.1])
    sc = make_scene(m, mu=0.5)
    q0 = m.neutral()
    q0[2] = 0.3
    tr = rollout(m, "euler", 1e-3, 1500, q0=q0, scene=sc)
    dg = contact_diagnostics(m, sc, tr.q[-1])
    assert np.abs(tr.v[-1]).max() < 1e-3
    # 8 bottom points (4 corners + 4 edge midpoints) share the weight: d = delta_ref * 4 / 8
    assert dg["active"][0] == 8
    assert abs(dg["max_penetration"][0] - 0.0025) < 1e-4


def test_dd_dv_matches_finite_difference(rng):
    m = free_body("box", [0.1, 0.2, 0.05])
    sc = make_scene(m)
    q = m.neutral()
    q[2] = 0.03
    q[3:7] = [0.98, 0.1, 0.15, 0.05]
    q[3:7] /= np.linalg.norm(q[3:7])
    from pbsim.dynamics.api import integrate

    r = contact_query(m, sc, q)
    act = r["d"][0] > 0
    assert act.sum() >= 1
    for j in range(m.nv):
        e = np.zeros(m.nv)
        e[j] = 1e-6
        dp = contact_query(m, sc, integrate(m, q, e))["d"][0]
        dm = contact_query(m, sc, integrate(m, q, -e))["d"][0]
        assert np.allclose(((dp - dm) / 2e-6)[act], r["dd_dv"][0][act, j], atol=1e-6)


def test_sphere_rolls_down_slope_without_tunnelling():
    m = free_body("sphere", [0.1])
    a = np.radians(20)
    n = np.array([-np.sin(a), 0, np.cos(a)])
    sc = Scene(environment=[Plane(n, 0.0)], points=sample_contact_points(m), mu=0.8)
    q0 = m.neutral()
    q0[:3] = n * (0.1 - 0.001)
    tr = rollout(m, "euler", 1e-3, 1000, q0=q0, scene=sc)
    gap = tr.q[:, :3] @ n - 0.1
    assert gap.min() > -1.5 * 4 * 0.005  # one point carries the weight: static d = 4 delta_ref cos20
    down = -(tr.q[-1, :3] - q0[:3]) @ np.array([np.cos(a), 0, np.sin(a)])
    want = 0.5 * (5 / 7) * 9.81 * np.sin(a) * 1.0**2  # rolling: a = 5/7 g sin(alpha)
    assert abs(down - want) < 0.05 * want
    assert np.abs(tr.v[-1, 4]) > 1.0  # it rolls (angular velocity about y)


@pytest.mark.parametrize("mu", [0.2, 0.5, 1.0])
def test_sliding_box_stopping_distance(mu):
    m = free_body("box", [0.2, 0.2, 0.05])
    sc = make_scene(m, mu=mu)
    q0 = m.neutral()
    q0[2] = 0.05 - 0.0025  # static penetration
    v0 = np.zeros(6)
    v0[0] = 1.0
    tr = rollout(m, "euler", 1e-3, 700, q0=q0, v0=v0, scene=sc)
    want = 1.0 / (2 * mu * 9.81)
    assert abs(tr.q[-1, 0] - want) < 0.05 * want
    assert abs(tr.v[-1, 0]) < 1e-3


def _drop(m, sc, up, lift=0.05, steps=500, xy=None, top=None):
    q0 = m.neutral()
    base = q0[:3].copy()
    if xy is not None:
        base[:2] = xy
    q0[:3] = base
    r = contact_query(m, sc, q0)
    X, rad = r["X"][0], sc.points.radius
    from pbsim.contact.query import env_sdf_points

    out = np.zeros((len(X), 4))
    env_sdf_points(sc.kernel_arrays(m), X, out)
    if top is None:  # plane: exact phi
        q0[:3] += up * (lift - (out[:, 0] - rad).min())
    else:  # terrain: the grid clamps |phi| beyond its band, so place the lowest point above ``top``
        q0[:3] += up * (top + lift - ((X @ up) - rad).min())
    tr = rollout(m, "euler", 1e-3, steps, q0=q0, scene=sc, record_every=50)
    assert np.isfinite(tr.q).all() and np.isfinite(tr.v).all()
    return tr, contact_diagnostics(m, sc, tr.q[-1])


def test_humanoid_drop_on_plane():
    m = pbsim.load(pybullet_file("humanoid/humanoid.urdf"), floating_base=True)
    m.gravity[:] = [0.0, -9.81, 0.0]  # DeepMimic humanoid is y-up; the plane normal follows -gravity
    sc = make_scene(m, ground="plane", mu=0.8)
    tr, dg = _drop(m, sc, np.array([0, 1.0, 0]), steps=700)
    assert dg["active"][0] > 0 and dg["max_penetration"][0] < 0.05


def test_robosimian_drop_on_terrain():
    m = pbsim.load(str(robosimian_urdf()), floating_base=True)
    sc = make_scene(m, ground=None, terrain=terrain_file("drc_rough_terrain.stl"), spacing=0.04, mu=0.8)
    tr, dg = _drop(m, sc, np.array([0, 0, 1.0]), steps=700, xy=(3.0, 1.2), top=0.2)
    assert dg["active"][0] > 0 and dg["max_penetration"][0] < 0.05
