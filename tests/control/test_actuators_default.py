"""A run given no control drives the file's actuators at ctrl = 0, as MuJoCo's ``mjData`` starts
(``pbsim.control.control.default_control``): position and velocity servos hold their joints, a
``general`` servo with an affine bias acts, activations relax; ``pbsim rollout --keyframe`` adds the
key's ctrl (``mj_resetDataKeyframe``).  Before, no control meant no actuator force at all: a
Menagerie-style robot driven by position servos fell limp (barkour: hips at their -1.2 rad limits
and the chassis 10 cm lower after 2 s, where MuJoCo's stands)."""

import subprocess
import sys

import numpy as np
import pytest

import pbsim
from pbsim.control.control import Control, default_control, idle_ctrl
from pbsim.integrators import make

mujoco = pytest.importorskip("mujoco")

ARM = """<mujoco><option timestep="0.001" integrator="Euler" gravity="0 0 -9.81"/>
<worldbody>
  <body name="upper" pos="0 0 1"><joint name="shoulder" type="hinge" axis="0 1 0" damping="0.1"/>
    <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1"/>
    <body name="fore" pos="0.3 0 0"><joint name="elbow" type="hinge" axis="0 1 0" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.025" mass="0.6"/>
      <body name="tip" pos="0.25 0 0"><joint name="wrist" type="hinge" axis="0 1 0"/>
        <geom type="sphere" size="0.03" mass="0.2"/></body></body></body>
</worldbody>
<actuator>
  <position name="p_shoulder" joint="shoulder" kp="60" kv="6"/>
  <general name="g_elbow" joint="elbow" gainprm="30" biasprm="0 -30 -3" biastype="affine"/>
  <velocity name="v_wrist" joint="wrist" kv="0.002"/>
</actuator></mujoco>"""

MOTORS = """<mujoco><worldbody><body><joint name="j" type="hinge" axis="0 1 0"/>
<geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1"/></body></worldbody>
<actuator><motor name="m" joint="j" gear="5" {rng}/></actuator></mujoco>"""


def _load(tmp_path, name, xml):
    p = tmp_path / name
    p.write_text(xml)
    return pbsim.load(str(p)), str(p)


def _mujoco_q(path, T, dt):
    m = mujoco.MjModel.from_xml_path(path)
    m.opt.timestep = dt
    d = mujoco.MjData(m)
    for _ in range(int(round(T / dt))):
        mujoco.mj_step(m, d)
    return d.qpos.copy()


def test_servos_hold_the_arm_as_in_mujoco_with_no_control_given(tmp_path):
    """The arm starts horizontal; its servos (position, general affine, velocity) at ctrl = 0 hold
    it near q = 0 against gravity.  pbsim given no control follows MuJoCo (ctrl = 0, Euler, 1 ms)
    within 1e-5 rad after 1 s with euler and rk4 (measured 1.1e-7, 1.5e-7), and pbad at 20 and 50 ms
    within 1e-3 rad (measured 2.0e-5, 2.5e-5); the same arm without its actuators falls (2 rad)."""
    m, path = _load(tmp_path, "arm.xml", ARM)
    ref = _mujoco_q(path, 1.0, 1e-3)
    assert np.abs(ref).max() < 0.3 and np.abs(ref).max() > 0.01  # held, sagging under gravity
    assert default_control(m).ctrl is not None
    for integ in ("euler", "rk4"):
        tr = pbsim.rollout(m, integ, dt=1e-3, steps=1000)
        assert np.abs(tr.q[-1] - ref).max() < 1e-5, (integ, tr.q[-1], ref)
    for dt in (0.02, 0.05):
        tr = pbsim.rollout(m, "pbad", dt=dt, steps=int(round(1.0 / dt)))
        assert np.abs(tr.q[-1] - ref).max() < 1e-3, (dt, tr.q[-1], ref)
    limp = pbsim.rollout(m, "euler", dt=1e-3, steps=1000, control=Control(mode="torque"))  # no actuator input
    assert np.abs(limp.q[-1, 0]) > 0.5  # what a run with no control did before


def test_no_control_is_ctrl_zero_bit_for_bit(tmp_path):
    """``control=None`` is ``Control(ctrl=0)`` to the bit, through rollout's compiled loop and
    through ``Integrator.step``."""
    m, _ = _load(tmp_path, "arm.xml", ARM)
    zero = Control(ctrl=np.zeros(m.nu))
    a = pbsim.rollout(m, "euler", dt=1e-3, steps=200)
    b = pbsim.rollout(m, "euler", dt=1e-3, steps=200, control=zero)
    np.testing.assert_array_equal(a.q, b.q)
    integ = make("pbad", m)
    s0 = pbsim.State.make(m, m.default_configuration())
    s1, _ = integ.step(s0, None, 0.02)
    s2, _ = integ.step(s0, zero, 0.02)
    np.testing.assert_array_equal(s1.q, s2.q)


def test_motors_at_zero_need_no_actuator_path(tmp_path):
    """Motors apply nothing at ctrl = 0: no actuator input is built (the plain kernels run); a
    ctrlrange that excludes 0 clamps it to a force, as in MuJoCo, and then the default drives it."""
    m, _ = _load(tmp_path, "m.xml", MOTORS.format(rng=""))
    assert idle_ctrl(m) is None and default_control(m).ctrl is None
    m2, path = _load(tmp_path, "m2.xml", MOTORS.format(rng='ctrlrange="0.2 1" ctrllimited="true"'))
    assert idle_ctrl(m2) is not None
    ref = _mujoco_q(path, 0.3, 1e-3)
    tr = pbsim.rollout(m2, "euler", dt=1e-3, steps=300)
    assert np.abs(ref).max() > 0.05 and np.abs(tr.q[-1] - ref).max() < 1e-6, (tr.q[-1], ref)


def test_cli_keyframe_drives_the_keys_ctrl(tmp_path):
    """``pbsim rollout --keyframe K`` starts from the key's state and drives its ctrl (a key sets
    ctrl as ``mj_resetDataKeyframe`` does): the arm moves to the key's targets as MuJoCo's does (0.5 s, euler, 1 ms)."""
    xml = ARM.replace("</actuator>", '</actuator><keyframe><key name="up" ctrl="-0.5 0.4 0"/></keyframe>')
    m, path = _load(tmp_path, "arm_key.xml", xml)
    mm = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(mm)
    mujoco.mj_resetDataKeyframe(mm, d, 0)
    for _ in range(500):
        mujoco.mj_step(mm, d)
    out = tmp_path / "t.npz"
    cmd = [sys.executable, "-m", "pbsim.cli", "rollout", path, "--integrator", "euler", "--dt", "0.001"]
    r = subprocess.run(
        cmd + ["--steps", "500", "--keyframe", "up", "--out", str(out), "--quiet"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    with np.load(out) as f:
        q = f["q"][-1].reshape(-1)
    assert np.abs(d.qpos).max() > 0.2  # the key's ctrl moved it
    assert np.abs(q - d.qpos).max() < 1e-3, (q, d.qpos)  # measured 8.8e-5 rad


def test_barkour_stands_on_its_servos_as_in_mujoco():
    """MJX's barkour_v0 (position servos, kp 35, on a random height field) from its qpos0 with no
    control: MuJoCo's stands (joints within 0.11 rad of 0, chassis 1 cm lower after 2 s); so does
    pbsim's with euler at 1 ms and pbad at 20 ms (measured: joints within 0.07 rad, chassis 1.5 cm
    higher, its feet pushed out of the field).  Limp, as before, its hips reached their -1.22 rad
    limits and the chassis sank 10 cm."""
    from conftest import mjx_test_data

    path = mjx_test_data("barkour_v0/assets/barkour_v0_mjx.xml")
    mm = mujoco.MjModel.from_xml_path(path)
    mm.opt.timestep = 1e-3
    d = mujoco.MjData(mm)
    for _ in range(2000):
        mujoco.mj_step(mm, d)
    assert np.abs(d.qpos[7:]).max() < 0.3 and d.qpos[2] > -0.02  # MuJoCo's barkour stands
    m = pbsim.load(path)
    for integ, dt in (("euler", 1e-3), ("pbad", 0.02)):
        tr = pbsim.rollout(m, integ, dt=dt, steps=int(round(2.0 / dt)))
        q = tr.q[-1]
        assert np.abs(q[7:]).max() < 0.3 and abs(q[2] - d.qpos[2]) < 0.03, (integ, q, d.qpos)


def test_cpu_batch_given_no_control_equals_rollout(tmp_path):
    """The batch driver given no control drives the servos at ctrl = 0 too: ``CpuBatch`` equals
    ``rollout`` bit for bit (euler, 200 steps of 1 ms, two rows)."""
    from pbsim.backends.cpu import CpuBatch

    m, _ = _load(tmp_path, "arm.xml", ARM)
    tr = pbsim.rollout(m, "euler", dt=1e-3, steps=200, scene=pbsim.Scene())
    cb = CpuBatch(m, "euler", batch=2)
    cb.set_state(np.tile(m.default_configuration(), (2, 1)))
    cb.advance(200, 1e-3)
    q, _ = cb.state()
    np.testing.assert_array_equal(q, np.tile(tr.q[-1], (2, 1)))
    assert np.abs(q[0]).max() < 0.1  # held by the servos (measured 0.077; limp: 0.56 rad in 0.2 s)
