"""Model -> URDF: round trip (load, write, load) keeps the mass matrix and ABA to 1e-9, and
Pinocchio parses every URDF we write."""

from __future__ import annotations

import numpy as np
import pytest

import pbsim
from pbsim.dynamics.joints import BALL
from pbsim.io.convert import dynamics_error
from pbsim.io.export_urdf import quat_to_rot, rot_to_quat, rot_to_rpy, write_urdf
from pbsim.io.urdf import rpy_to_rot
from tests.conftest import pybullet_file, robosimian_urdf

PYBULLET = [
    ("kuka_iiwa/model.urdf", False),
    ("pendulum5.urdf", None),
    ("r2d2.urdf", None),
    ("quadruped/minitaur.urdf", None),
    ("laikago/laikago_toes_zup.urdf", None),
    ("a1/a1.urdf", None),
    ("humanoid/humanoid.urdf", True),
]
TOL = 1e-9


def _pin_check(path, model):
    """Pinocchio parses the file; its DOF count matches (continuous joints: pin nq 2, nv 1)."""
    pin = pytest.importorskip("pinocchio")
    if np.any(model.jtype == BALL):
        return  # Pinocchio has no spherical URDF joint; our reader checks those files
    pm = (
        pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
        if model.floating_base
        else pin.buildModelFromUrdf(str(path))
    )
    assert pm.nv == model.nv
    assert abs(sum(pm.inertias[i].mass for i in range(pm.njoints)) - model.total_mass) < 1e-9 * model.total_mass


def _roundtrip(model, tmp_path, floating_base=None, nstates=10):
    out = tmp_path / f"{model.name or 'robot'}.urdf"
    write_urdf(model, out)
    back = pbsim.load(out, floating_base=floating_base)
    assert back.joint_names == model.joint_names
    assert back.nq == model.nq and back.nv == model.nv
    err = dynamics_error(model, back, nstates=nstates, ignore_armature=True)
    assert err < TOL, err
    return out, back


@pytest.mark.parametrize("rel,floating", PYBULLET, ids=[p[0].split("/")[-1] for p in PYBULLET])
def test_pybullet_roundtrip(rel, floating, tmp_path):
    m = pbsim.load(pybullet_file(rel), floating_base=floating)
    out, back = _roundtrip(m, tmp_path, floating)
    assert back.floating_base == m.floating_base
    # frames (links merged by fixed joints) and shapes survive
    assert {f.name for f in back.frames} >= {f.name for f in m.frames if f.body >= 0}
    assert len(back.geoms) >= len([g for g in m.geoms if g.body >= 0])
    _pin_check(out, m)


def test_robosimian_roundtrip(tmp_path):
    m = pbsim.load(robosimian_urdf())
    out, back = _roundtrip(m, tmp_path)
    _pin_check(out, m)
    # meshes are referenced where they are (relative paths from the output folder)
    assert sum(g.shape == "mesh" for g in back.geoms) == sum(g.shape == "mesh" for g in m.geoms)


@pytest.mark.parametrize("name", ["chain10", "ball2chain10", "spherical", "snake36", "swimmer", "spider"])
def test_generated_roundtrip(name, tmp_path):
    import pbsim_models as pm

    m = {
        "chain10": lambda: pm.chain(10),
        "ball2chain10": lambda: pm.chain(10, joint="ball2"),
        "spherical": lambda: pm.chain(4, joint="spherical"),
        "snake36": lambda: pm.snake(36),
        "swimmer": pm.swimmer,
        "spider": pm.spider,
    }[name]()
    if name == "swimmer":
        m.gravity = np.array([0.0, 0.0, -9.81])  # URDF has no gravity (reported)
    out, back = _roundtrip(m, tmp_path)
    _pin_check(out, m)


def test_roundtrip_detects_a_changed_inertia(tmp_path):
    """The check can fail: a 1e-6 change of one link mass is seen."""
    import pbsim_models as pm

    m = pm.chain(5)
    out = tmp_path / "c.urdf"
    write_urdf(m, out)
    text = out.read_text().replace('mass value="0.1"', 'mass value="0.1000001"', 1)
    out.write_text(text)
    assert dynamics_error(m, pbsim.load(out), nstates=3) > 1e-8


def test_report_lists_what_urdf_cannot_hold(tmp_path):
    import pbsim_models as pm

    m = pm.swimmer()  # zero gravity
    m.armature = np.full(m.nv, 0.01)
    m.q_default = m.neutral()
    m.q_default[0] = 1.0
    lost = write_urdf(m, tmp_path / "s.urdf")
    text = "\n".join(lost)
    assert "gravity" in text and "armature" in text and "reference configuration" in text
    lost = write_urdf(pm.chain(3, joint="spherical"), tmp_path / "b.urdf")
    assert any("spherical" in x for x in lost)
    assert 'type="spherical"' in (tmp_path / "b.urdf").read_text()


def test_fixed_base_has_world_link_and_floating_has_none(tmp_path):
    import pbsim_models as pm

    write_urdf(pm.chain(2), tmp_path / "c.urdf")
    write_urdf(pm.swimmer(), tmp_path / "s.urdf")
    c, s = (tmp_path / "c.urdf").read_text(), (tmp_path / "s.urdf").read_text()
    assert '<link name="world"/>' in c
    assert 'name="world"' not in s and "floating" not in s
    assert not pbsim.load(tmp_path / "c.urdf").floating_base
    assert pbsim.load(tmp_path / "s.urdf").floating_base


def test_free_joint_with_placement_becomes_floating_joint(tmp_path):
    """A free root placed away from the world origin keeps its placement (world + floating)."""
    import pbsim_models as pm

    m = pm.swimmer()
    m.gravity = np.array([0.0, 0.0, -9.81])
    m.tree_p[0] = [0.1, 0.2, 0.3]
    m.tree_R[0] = rpy_to_rot(0.3, -0.2, 0.5)
    m.__post_init__()
    out = tmp_path / "s.urdf"
    lost = write_urdf(m, out)
    assert 'type="floating"' in out.read_text() and any("floating" in x for x in lost)
    back = pbsim.load(out)
    assert np.allclose(back.tree_p[0], m.tree_p[0]) and np.allclose(back.tree_R[0], m.tree_R[0], atol=1e-15)
    assert dynamics_error(m, back, nstates=5) < TOL
    pin = pytest.importorskip("pinocchio")
    assert pin.buildModelFromUrdf(str(out)).nv == m.nv  # pin reads 'floating' as a free-flyer


def test_world_shapes_and_planes(tmp_path):
    """Shapes fixed to the world stay on the world link (fixed base); planes are dropped
    (reported) so that urdfdom/Pinocchio still parse the file."""
    import pbsim_models as pm
    from pbsim.model import Geometry

    m = pm.chain(2)
    m.geoms.append(Geometry("floor", "plane", -1, np.eye(3), np.zeros(3), np.zeros(2)))
    m.geoms.append(Geometry("post", "box", -1, np.eye(3), np.array([0, 0, -0.5]), np.array([0.1, 0.1, 0.5])))
    out = tmp_path / "c.urdf"
    lost = write_urdf(m, out)
    assert any("floor" in x and "dropped" in x for x in lost)
    back = pbsim.load(out)
    post = [g for g in back.geoms if g.name == "post"]
    assert len(post) == 1 and post[0].body == -1 and np.allclose(post[0].p, [0, 0, -0.5])
    _pin_check(out, m)


def test_capsules_as_cylinder_and_spheres(tmp_path, capfd):
    """ROS-compatible capsules: urdfdom parses every shape silently, dynamics unchanged."""
    import pbsim_models as pm

    m = pm.spider()
    out = tmp_path / "s.urdf"
    lost = write_urdf(m, out, capsules="cylinder+spheres")
    assert "<capsule" not in out.read_text() and any("cylinder plus two spheres" in x for x in lost)
    back = pbsim.load(out)
    caps = [g for g in m.geoms if g.shape == "capsule"]
    assert len(back.geoms) == len(m.geoms) + 2 * len(caps)
    top = next(g for g in back.geoms if g.name == caps[0].name + "_top")
    c = caps[0]
    assert np.allclose(top.p, c.p + c.size[1] * c.R[:, 2]) and np.isclose(top.size[0], c.size[0])
    assert dynamics_error(m, back, nstates=3) < TOL
    pin = pytest.importorskip("pinocchio")
    capfd.readouterr()
    pin.buildModelFromUrdf(str(out), pin.JointModelFreeFlyer())
    pin.buildGeomFromUrdf(
        pin.buildModelFromUrdf(str(out), pin.JointModelFreeFlyer()), str(out), pin.GeometryType.COLLISION
    )
    assert "Could not parse" not in capfd.readouterr().err
    with pytest.raises(ValueError, match="capsules"):
        write_urdf(m, out, capsules="cone")


def test_rpy_and_quaternion_conversions(rng):
    for _ in range(200):
        u = rng.normal(size=4)
        R = quat_to_rot(u / np.linalg.norm(u))
        assert np.allclose(rpy_to_rot(*rot_to_rpy(R)), R, atol=1e-14)
        assert np.allclose(quat_to_rot(rot_to_quat(R)), R, atol=1e-14)
    for pitch in (np.pi / 2, -np.pi / 2):  # gimbal lock
        R = rpy_to_rot(0.4, pitch, -1.1)
        assert np.allclose(rpy_to_rot(*rot_to_rpy(R)), R, atol=1e-12)


def test_model_tree():
    import pbsim_models as pm

    m = pm.spider()
    t = m.tree().splitlines()
    assert t[0] == "world" and len(t) == m.nb + 1
    # every body appears once, indented one level deeper than its parent
    depth = {}
    for line in t[1:]:
        name = line.split("-- ", 1)[1].split(" [")[0]
        depth[name] = (line.index("-- ") - 1) // 4
    for i in range(m.nb):
        par = m.parent[i]
        want = 0 if par < 0 else depth[m.body_names[par]] + 1
        assert depth[m.body_names[i]] == want, (m.body_names[i], t)
    assert "[free torso_root" in t[1] and "knee0" in m.tree()
