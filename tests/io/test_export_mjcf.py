"""Model -> MJCF: MuJoCo compiles every file we write, and its mass matrix and accelerations
(mj_fullM, mj_rne) match ours to 1e-9; with pbsim's MJCF reader, the round trip too."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

import pbsim
from pbsim.io.convert import dynamics_error, mujoco_dynamics_error
from pbsim.io.export_mjcf import write_mjcf
from tests.conftest import gymnasium_xml, pybullet_file, robosimian_urdf

mujoco = pytest.importorskip("mujoco")
TOL = 1e-9
PYBULLET = [
    ("kuka_iiwa/model.urdf", False),
    ("pendulum5.urdf", None),
    ("r2d2.urdf", None),
    ("quadruped/minitaur.urdf", None),
    ("laikago/laikago_toes_zup.urdf", None),
    ("a1/a1.urdf", None),
    ("humanoid/humanoid.urdf", True),
]
GENERATED = Path(__file__).resolve().parents[2] / "models" / "generated"
HAVE_MJCF_READER = importlib.util.find_spec("pbsim.io.mjcf") is not None


def _check(model, tmp_path, nstates=10):
    out = tmp_path / f"{model.name or 'robot'}.xml"
    write_mjcf(model, out)
    err = mujoco_dynamics_error(model, out, nstates=nstates)
    assert err < TOL, err
    if HAVE_MJCF_READER:
        back = pbsim.load(out)
        assert sorted(back.joint_names) == sorted(model.joint_names)
        assert dynamics_error(model, back, nstates=nstates) < TOL
    return out


@pytest.mark.parametrize("rel,floating", PYBULLET, ids=[p[0].split("/")[-1] for p in PYBULLET])
def test_pybullet_models_in_mujoco(rel, floating, tmp_path):
    _check(pbsim.load(pybullet_file(rel), floating_base=floating), tmp_path)


@pytest.mark.parametrize("name", ["chain10", "ball2chain10", "spherical", "snake36", "swimmer", "spider"])
def test_generated_models_in_mujoco(name, tmp_path):
    import pbsim_models as pm

    m = {
        "chain10": lambda: pm.chain(10),
        "ball2chain10": lambda: pm.chain(10, joint="ball2"),
        "spherical": lambda: pm.chain(4, joint="spherical"),
        "snake36": lambda: pm.snake(36),
        "swimmer": pm.swimmer,
        "spider": pm.spider,
    }[name]()
    m.damping = np.full(m.nv, 0.05)
    m.armature = np.full(m.nv, 0.01)
    if m.floating_base:  # MuJoCo's free-joint armature acts on world-frame velocity (reported)
        m.armature[:6] = 0.0
    out = _check(m, tmp_path)
    mj = mujoco.MjModel.from_xml_path(str(out))
    assert np.allclose(mj.dof_damping, 0.05) and np.allclose(mj.dof_armature, m.armature)
    assert np.allclose(mj.opt.gravity, m.gravity)


def test_mujoco_check_can_fail(tmp_path):
    """A changed inertia in the written file is detected."""
    import pbsim_models as pm

    m = pm.chain(4)
    out = tmp_path / "c.xml"
    write_mjcf(m, out)
    out.write_text(out.read_text().replace('mass="0.1"', 'mass="0.1000001"', 1))
    assert mujoco_dynamics_error(m, out, nstates=3) > 1e-8


def test_free_body_reference_pose_and_keyframe(tmp_path):
    import pbsim_models as pm

    m = pm.spider()  # q_default lifts the torso to z = 0.35
    out = tmp_path / "s.xml"
    write_mjcf(m, out)
    mj = mujoco.MjModel.from_xml_path(str(out))
    assert np.allclose(mj.qpos0, m.q_default)
    m.q_default[7] = 0.3  # a hinge reference angle goes to keyframe 'default'
    write_mjcf(m, out)
    mj = mujoco.MjModel.from_xml_path(str(out))
    assert mj.nkey == 1 and np.allclose(mj.key_qpos[0], m.q_default)


def test_robosimian_in_mujoco(tmp_path):
    """Through convert: ASCII STL meshes become binary STL so MuJoCo reads them."""
    from pbsim.io.convert import convert

    p = robosimian_urdf()
    out = tmp_path / "robosimian.xml"
    rep = convert(p, out)
    assert (tmp_path / "meshes").is_dir() and rep.meshes
    assert mujoco_dynamics_error(pbsim.load(p), out, nstates=5) < TOL


NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def same_up_to_rounding(a: str, b: str, rtol: float = 1e-12) -> bool:
    """The same text, numbers equal to ``rtol`` (the last digit of a float's shortest repr moves
    with the libm/numpy build: -2.356194490192345 vs -2.3561944901923453)."""
    if NUMBER.sub("#", a) != NUMBER.sub("#", b):
        return False
    x = np.array([float(t) for t in NUMBER.findall(a)])
    y = np.array([float(t) for t in NUMBER.findall(b)])
    return x.shape == y.shape and bool(np.all(np.abs(x - y) <= rtol * np.maximum(1.0, np.abs(y))))


def test_same_up_to_rounding():
    assert same_up_to_rounding('rpy="0 1.57 -2.356194490192345"', 'rpy="0 1.57 -2.3561944901923453"')
    assert not same_up_to_rounding('rpy="0 1.57 -2.3561"', 'rpy="0 1.57 -2.3562"')
    assert not same_up_to_rounding('<a x="1"/>', '<b x="1"/>')


def test_generated_files_compile_and_are_current(tmp_path):
    """Every committed MJCF compiles; the committed files are what the generators write now."""
    from pbsim_models.write import models, write_all

    if not GENERATED.is_dir():
        pytest.skip("models/generated missing")
    write_all(tmp_path, verbose=False)
    for stem, make in models():
        for ext in (".urdf", ".xml"):
            assert same_up_to_rounding(
                (GENERATED / f"{stem}{ext}").read_text(), (tmp_path / f"{stem}{ext}").read_text()
            ), f"models/generated/{stem}{ext} is stale: run python -m pbsim_models.write"
        mj = mujoco.MjModel.from_xml_path(str(GENERATED / f"{stem}.xml"))
        assert mj.nv == make().nv


@pytest.mark.parametrize("stem", ["chain40", "ball2chain10", "snake72", "spider"])
def test_generated_files_match_generators(stem):
    from pbsim_models.write import models

    make = dict(models())[stem]
    m = make()
    assert mujoco_dynamics_error(m, GENERATED / f"{stem}.xml", nstates=5) < TOL
    assert dynamics_error(m, pbsim.load(GENERATED / f"{stem}.urdf"), nstates=5) < TOL


@pytest.mark.parametrize("name", ["humanoid.xml", "ant.xml"])
def test_gymnasium_roundtrip(name, tmp_path):
    """No skip: pbsim.io.mjcf ships with pbsim (loading an MJCF file needs it), so a missing reader
    is a failure; only a missing gymnasium (or asset) skips, in gymnasium_xml."""
    from pbsim.io.export_urdf import write_urdf

    assert HAVE_MJCF_READER  # _check's MJCF round trip runs
    m = pbsim.load(gymnasium_xml(name))
    _check(m, tmp_path)
    out = tmp_path / "g.urdf"
    write_urdf(m, out)
    back = pbsim.load(out, floating_base=m.floating_base)
    assert dynamics_error(m, back, nstates=10, ignore_armature=True) < TOL
