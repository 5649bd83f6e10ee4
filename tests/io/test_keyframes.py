"""MJCF keyframes (issue 29): ``Model.keyframes`` as MuJoCo's ``mj_resetDataKeyframe`` sets the state,
in pbsim's coordinates; ``pbsim rollout --keyframe``, the viewer session's keyframe list; URDF none."""

import subprocess
import sys

import numpy as np
import pytest

import pbsim

XML = """<mujoco><worldbody><geom name="floor" type="plane" size="5 5 0.1"/>
<body name="torso" pos="0 0 1"><freejoint name="root"/><geom type="box" size="0.1 0.1 0.1" mass="1"/>
  <body name="arm" pos="0.1 0 0"><joint name="shoulder" type="hinge" axis="0 1 0" range="-2 2"/>
    <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.5"/>
    <body name="hand" pos="0.3 0 0"><joint name="wrist" type="ball"/>
      <geom type="sphere" size="0.04" mass="0.2"/></body></body></body>
</worldbody>
<actuator><motor name="m_shoulder" joint="shoulder" gear="10"/></actuator>
<keyframe>
  <key name="home" qpos="0.1 0.2 0.8 0.9238795 0 0.3826834 0  0.5  0.7071068 0 0.7071068 0"
       qvel="0.3 -0.2 0.1  0.5 0.4 -0.3  1.5  0.2 0.1 0.0" ctrl="0.25" time="1.5"/>
  <key name="rest" qpos="0 0 0.11 1 0 0 0  -1  1 0 0 0"/>
</keyframe></mujoco>"""


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "keys.xml"
    p.write_text(XML)
    return str(p)


def test_keyframes_are_mujocos_states_in_pbsims_coordinates(path):
    import mujoco

    m = pbsim.load(path)
    assert list(m.keyframes) == ["home", "rest"]
    mj = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(mj)
    for k, name in enumerate(["home", "rest"]):
        mujoco.mj_resetDataKeyframe(mj, d, k)
        key = m.keyframes[name]
        np.testing.assert_array_equal(key.q, d.qpos)  # q == qpos
        R = np.zeros(9)
        mujoco.mju_quat2Mat(R, d.qpos[3:7])
        v = d.qvel.copy()
        v[:3] = R.reshape(3, 3).T @ v[:3]  # pbsim: a free joint's linear velocity in its body frame
        np.testing.assert_allclose(key.v, v, atol=1e-12)
        assert key.time == d.time
        np.testing.assert_array_equal(key.ctrl, d.ctrl)
        # the same state: the world pose of every body agrees
        mujoco.mj_kinematics(mj, d)
        X = pbsim.forward_kinematics(m, key.q)
        for b in range(1, mj.nbody):
            np.testing.assert_allclose(X[m.body_index(mujoco.mj_id2name(mj, 1, b)), :3, 3], d.xpos[b], atol=1e-12)
    # the world velocity of the hand is MuJoCo's (the free joint's velocity convention)
    key = m.keyframes["home"]
    assert np.abs(key.v[:3] - mj.key_qvel[0, :3]).max() > 0.05  # the rotation is not the identity


def test_rollout_and_the_viewer_start_from_a_keyframe(path, tmp_path):
    m = pbsim.load(path)
    tr = pbsim.rollout(m, "euler", dt=0.002, steps=5, q0=m.keyframes["rest"].q)
    assert abs(tr.q[0, 7] + 1.0) < 1e-12
    out = tmp_path / "t.npz"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pbsim.cli",
            "rollout",
            path,
            "--integrator",
            "euler",
            "--dt",
            "0.002",
            "--steps",
            "3",
            "--keyframe",
            "home",
            "--out",
            str(out),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    with np.load(out) as f:
        np.testing.assert_allclose(f["q"][0], m.keyframes["home"].q, atol=1e-12)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pbsim.cli",
            "rollout",
            path,
            "--integrator",
            "euler",
            "--dt",
            "0.002",
            "--steps",
            "3",
            "--keyframe",
            "nope",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode != 0 and "'home', 'rest'" in r.stderr and "Traceback" not in r.stderr
    from pbsim_viewer.session import Session

    s = Session(m, dt=0.002)
    s.load_model_keyframe("home")
    np.testing.assert_array_equal(s.q, m.keyframes["home"].q)
    assert s.ctrl[0] == 0.25


def test_urdf_has_no_keyframes():
    from conftest import pybullet_file

    assert pbsim.load(pybullet_file("r2d2.urdf")).keyframes == {}
