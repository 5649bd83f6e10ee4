"""Exact dynamics against Pinocchio (URDF) and MuJoCo (MJCF) at 20 random states per model."""

import numpy as np
import pytest

import pbsim
from conftest import gymnasium_xml, pybullet_file, robosimian_urdf
from oracles import MujocoOracle, PinOracle, rel_err

URDFS = [
    ("kuka_iiwa/model.urdf", False),
    ("quadruped/minitaur.urdf", True),
    ("pendulum5.urdf", None),
    ("laikago/laikago_toes_zup.urdf", True),
    ("a1/a1.urdf", True),
    ("r2d2.urdf", True),
]
TOL = 1e-9
N_STATES = 20


def _urdf_path(name):
    return str(robosimian_urdf()) if name == "robosimian" else pybullet_file(name)


@pytest.mark.parametrize("name,floating", URDFS + [("robosimian", True)])
def test_pinocchio_urdf(name, floating):
    pytest.importorskip("pinocchio")
    path = _urdf_path(name)
    model = pbsim.load(path, floating_base=floating)
    pin = PinOracle(model, path)
    rng = np.random.default_rng(0)
    Q = np.array([model.random_configuration(rng) for _ in range(N_STATES)])
    V = rng.normal(size=(N_STATES, model.nv))
    TAU = rng.normal(size=(N_STATES, model.nv)) * 10
    A = rng.normal(size=(N_STATES, model.nv))
    M, H, QDD = pbsim.crba(model, Q), pbsim.rnea(model, Q, V, A), pbsim.aba(model, Q, V, TAU)
    T = pbsim.forward_kinematics(model, Q)
    for k in range(N_STATES):
        assert rel_err(M[k], pin.crba(Q[k])) < TOL
        assert rel_err(H[k], pin.rnea(Q[k], V[k], A[k])) < TOL
        assert rel_err(QDD[k], pin.aba(Q[k], V[k], TAU[k])) < TOL
        poses = pbsim.frame_poses(model, Q[k])
        ref = pin.frame_poses(Q[k])
        for f in model.frames:
            if f.name in ref:
                assert np.abs(poses[f.name] - ref[f.name]).max() < 1e-9, f.name
        assert np.allclose(T[k, 0], poses[model.frames[[fr.body for fr in model.frames].index(0)].name], atol=1e-12)


@pytest.mark.parametrize("xml", ["humanoid.xml", "ant.xml"])
def test_mujoco_mjcf(xml):
    pytest.importorskip("mujoco")
    path = gymnasium_xml(xml)
    model = pbsim.load(path)
    mj = MujocoOracle(model, path)
    rng = np.random.default_rng(1)
    for _ in range(N_STATES):
        q = model.random_configuration(rng)
        v = rng.normal(size=model.nv)
        tau = rng.normal(size=model.nv)
        M, h, qdd, passive, poses = mj.evaluate(q, v, tau)
        assert rel_err(pbsim.crba(model, q), M) < TOL
        assert rel_err(pbsim.rnea(model, q, v, np.zeros(model.nv)), h) < TOL
        assert rel_err(pbsim.aba(model, q, v, tau + passive), qdd) < TOL
        ours = pbsim.frame_poses(model, q)
        for name, P in poses.items():
            assert np.abs(ours[name] - P).max() < 1e-9, name


def _deepmimic_reference():
    """The DeepMimic humanoid built programmatically from its published numbers, independently
    of the URDF reader: the same bodies, joints, inertias."""
    from pbsim.model import JointSpec, LinkSpec, ModelBuilder

    import xml.etree.ElementTree as ET

    path = pybullet_file("humanoid/humanoid.urdf")
    raw = open(path, "rb").read()
    raw = raw[: raw.rfind(b"</robot>") + 8]
    root = ET.fromstring(raw)
    b = ModelBuilder("deepmimic-reference")
    for link in root.findall("link"):
        ine = link.find("inertial")
        m = float(ine.find("mass").get("value"))
        com = np.array([float(x) for x in ine.find("origin").get("xyz").split()])
        I = ine.find("inertia")
        b.add_link(LinkSpec(link.get("name"), m, com, np.diag([float(I.get(k)) for k in ("ixx", "iyy", "izz")])))
    for j in root.findall("joint"):
        xyz = np.array([float(x) for x in j.find("origin").get("xyz").split()])
        t = {"spherical": "ball", "revolute": "revolute", "fixed": "fixed"}[j.get("type")]
        ax = j.find("axis")
        axis = np.array([float(x) for x in ax.get("xyz").split()]) if ax is not None else np.array([1.0, 0, 0])
        b.add_joint(
            JointSpec(j.get("name"), t, j.find("parent").get("link"), j.find("child").get("link"), p=xyz, axis=axis)
        )
    return b.build(floating_base=True)


def test_deepmimic_humanoid_against_programmatic_model():
    """Pinocchio cannot parse the pybullet dialect (spherical joints, capsules): compare with an
    equivalent model built in code, and check the analytic invariants M = M^T > 0."""
    model = pbsim.load(pybullet_file("humanoid/humanoid.urdf"), floating_base=True)
    ref = _deepmimic_reference()
    assert (model.nq, model.nv) == (43, 34) and ref.nv == 34  # free + 8 ball + 2 revolute
    rng = np.random.default_rng(2)
    for _ in range(N_STATES):
        q = model.random_configuration(rng)
        v = rng.normal(size=model.nv)
        tau = rng.normal(size=model.nv)
        M = pbsim.crba(model, q)
        assert rel_err(M, pbsim.crba(ref, q)) < TOL
        assert rel_err(pbsim.aba(model, q, v, tau), pbsim.aba(ref, q, v, tau)) < TOL
        assert np.allclose(M, M.T, atol=1e-12) and np.linalg.eigvalsh(M).min() > 0
