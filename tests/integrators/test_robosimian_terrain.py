"""Robosimian standing on the DRC rough terrain with pbfd at dt 0.05 (scripts/examples/robosimian_walk.py's
world, cropped): 1 s under SPD, feet and torso as contact points."""

from __future__ import annotations

import numpy as np
import pytest

import pbsim
from pbsim.contact import Scene, sample_contact_points
from pbsim.contact.environment import MeshTerrain
from pbsim.control.targets import Reference
from pbsim.integrators import State, make
from pbsim_models.poses import standing_pose
from tests.conftest import robosimian_urdf, terrain_file


def _terrain(x0=2.3, x1=5.0):
    trimesh = pytest.importorskip("trimesh")
    m = trimesh.load(str(terrain_file("drc_rough_terrain.stl")), force="mesh")
    tri = np.asarray(m.vertices)[np.asarray(m.faces)]
    keep = (tri[:, :, 0].max(axis=1) >= x0) & (tri[:, :, 0].min(axis=1) <= x1)
    return trimesh.Trimesh(m.vertices, np.asarray(m.faces)[keep], process=True), tri[keep]


def test_robosimian_stands_on_rough_terrain_pbfd_dt005():
    model = pbsim.load(robosimian_urdf(active=False), floating_base=True)
    mesh, tris = _terrain()
    terr = MeshTerrain.from_mesh(mesh, spacing=0.02)
    pts = sample_contact_points(model, bodies=["torso"] + [f"limb{k}_link7" for k in range(1, 5)])
    scene = Scene(environment=[terr], points=pts, mu=0.8)
    q0 = standing_pose(model)
    q0[:3] = [3.66, 1.22, 0.0]  # over the ramps 20 % along the terrain
    X = pbsim.contact_query(model, scene, q0)["X"][0]
    sel = (
        (tris[:, :, 0].max(1) >= X[:, 0].min())
        & (tris[:, :, 0].min(1) <= X[:, 0].max())
        & (tris[:, :, 1].max(1) >= X[:, 1].min())
        & (tris[:, :, 1].min(1) <= X[:, 1].max())
    )
    top = float(tris[sel][:, :, 2].max())
    q0[2] = top + 0.01 - float(X[:, 2].min())  # lowest point 1 cm above the highest terrain under the robot
    M = float(model.total_mass)
    ref = Reference(model, q=q0, kp=30 * M, kd=M, mode="spd", root="passive")
    integ = make("pbfd", model, scene)
    s = State.make(model, q0)
    pen, z = 0.0, []
    for _ in range(20):  # 1 s
        s, d = integ.step(s, ref(s.t, s), 0.05)
        assert not d.nan[0] and np.isfinite(s.q).all()
        assert d.converged[0]
        pen = max(pen, float(d.penetration[0]))
        z.append(float(s.q[0, 2]))
    assert pen <= 0.02, pen
    # the torso settles a few cm (contact depth, leg sag, feet finding the uneven ground), it neither
    # falls through nor bounces up; it stays upright and in place
    assert q0[2] - 0.08 < min(z) and max(z) < q0[2] + 0.01, (q0[2], min(z), max(z))
    R = pbsim.forward_kinematics(model, s.q[0])[0, :3, :3]
    assert R[2, 2] > np.cos(np.radians(10))
    assert np.linalg.norm(s.q[0, :2] - q0[:2]) < 0.05
    assert np.abs(s.v[0, :6]).max() < 0.5
