"""MuJoCo's affine actuators (issue 29): ``general`` servos (Menagerie's arms: gainprm kp, biasprm
0 -kp -kd), ``position`` with ``kv``, ``velocity``, motors with a force offset, joint and
jointinparent transmissions: the generalized force equals MuJoCo's ``qfrc_actuator`` at random
states and inputs; a Menagerie-style arm holds its ``home`` keyframe with the key's ctrl."""

import numpy as np
import pytest

import pbsim

ARM = """<mujoco><compiler angle="radian"/><option gravity="0 0 -9.81"/>
<default><general gaintype="fixed" biastype="affine" gainprm="2000" biasprm="0 -2000 -400" ctrlrange="-3 3"/>
  <geom contype="0" conaffinity="0"/></default>
<worldbody><body name="base" pos="0 0 0.1"><geom type="cylinder" size="0.06 0.05" mass="2"/>
  <body name="l1" pos="0 0 0.05"><joint name="j1" axis="0 0 1" range="-3 3" damping="0.5"/>
    <geom type="capsule" fromto="0 0 0 0 0 0.3" size="0.04" mass="2"/>
    <body name="l2" pos="0 0 0.3"><joint name="j2" axis="0 1 0" range="-2 2" damping="0.5"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.035" mass="1.5"/>
      <body name="l3" pos="0.3 0 0"><joint name="j3" axis="0 1 0" range="-2.5 2.5" damping="0.5"/>
        <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.03" mass="1"/>
        <body name="l4" pos="0.25 0 0"><joint name="j4" type="slide" axis="1 0 0" range="-0.05 0.05"/>
          <geom type="box" size="0.03 0.03 0.03" mass="0.3"/></body></body></body></body></body>
</worldbody>
<actuator>
  <general name="a1" joint="j1"/>
  <general name="a2" joint="j2" gainprm="3000" biasprm="0 -3000 -500" gear="2"/>
  <position name="a3" joint="j3" kp="800" kv="60" ctrlrange="-2 2"/>
  <general name="a4" jointinparent="j4" gainprm="1" biasprm="5 0 0" ctrlrange="-20 20" forcerange="-10 10"/>
  <velocity name="a5" joint="j2" kv="30"/>
  <motor name="a6" joint="j3" gear="3" ctrlrange="-1 1"/>
</actuator>
<keyframe><key name="home" qpos="0.3 -0.6 1.2 0.02" ctrl="0.3 -0.3 1.2 0 0 0"/></keyframe>
</mujoco>"""


@pytest.fixture
def arm(tmp_path):
    p = tmp_path / "arm.xml"
    p.write_text(ARM)
    return str(p)


def _explicit_torque(model, q, v, ctrl):
    """The actuators' generalized force at (q, v) from the arrays the integrators get (their PD
    terms evaluated explicitly, as MuJoCo does)."""
    from pbsim.control.actuators import actuator_targets

    tau, kp, kd, q_ref, v_ref, *_ = actuator_targets(model, ctrl, 1)
    dq = pbsim.difference(model, q, q_ref[0]) if np.any(kp) else np.zeros(model.nv)
    return tau[0] + kp[0] * dq + kd[0] * (v_ref[0] - v)


def test_affine_actuators_equal_mujocos_qfrc_actuator(arm):
    import mujoco

    m = pbsim.load(arm)
    assert m.nu == 6 and not [n for n in m.notes if "actuator" in n]
    mj = mujoco.MjModel.from_xml_path(arm)
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = m.random_configuration(rng)
        v = rng.normal(size=m.nv)
        u = rng.uniform(-4, 4, size=m.nu) * np.array([1, 1, 1, 8, 1, 1])
        d.qpos[:], d.qvel[:], d.ctrl[:] = q, v, u
        mujoco.mj_forward(mj, d)
        np.testing.assert_allclose(_explicit_torque(m, q, v, u), d.qfrc_actuator, rtol=1e-9, atol=1e-9)


def test_menagerie_style_arm_holds_its_home_keyframe(arm):
    """With the keyframe's ctrl, the servos hold the arm at home against gravity (before: 'n
    actuator(s) not imported', ctrl did nothing and the arm fell), at 1 ms with euler and at
    20 ms with pbad; as MuJoCo does (implicitfast, 2 ms)."""
    import mujoco

    m = pbsim.load(arm)
    key = m.keyframes["home"]
    ctrl = pbsim.Control(ctrl=key.ctrl)
    mj = mujoco.MjModel.from_xml_path(arm)
    mj.opt.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    d = mujoco.MjData(mj)
    mujoco.mj_resetDataKeyframe(mj, d, 0)
    while d.time < 2.0:
        mujoco.mj_step(mj, d)
    for integ, dt in (("euler", 1e-3), ("pbad", 0.02)):
        tr = pbsim.rollout(m, integ, dt=dt, steps=int(round(2.0 / dt)), q0=key.q, control=ctrl)
        np.testing.assert_allclose(tr.q[-1], d.qpos, atol=0.02)
        free = pbsim.rollout(m, integ, dt=dt, steps=int(round(2.0 / dt)), q0=key.q)
        assert np.abs(free.q[-1] - key.q).max() > 0.3  # without ctrl it falls


SATURATED = """<mujoco><option gravity="0 0 -9.81" timestep="0.001" integrator="Euler"/>
<default><geom contype="0" conaffinity="0"/></default>
<worldbody>
  <body name="l1"><joint name="j1" axis="0 -1 0" damping="0.5" actuatorfrcrange="-3 3"/>
    <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.03" mass="2"/></body>
  <body name="l2" pos="0 1 0"><joint name="j2" axis="0 -1 0" damping="0.2"/>
    <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1"/></body>
</worldbody>
<actuator>
  <position name="s1" joint="j1" kp="400" kv="20" ctrlrange="-3 3"/>
  <general name="s2" joint="j2" biastype="affine" gainprm="300" biasprm="0 -300 -15" forcerange="-1 1"/>
</actuator>
</mujoco>"""


def test_servo_forces_are_clamped_as_mujocos(tmp_path):
    """A servo's forcerange and its joint's actuatorfrcrange bound the force as in MuJoCo: two
    links told to rise to 1.2 rad above the horizontal, whose weight needs more than the bounds
    (3 N m against 3.92, 1 N m against 1.47), sink to where the bound holds the weight,
    ``cos q = bound / (m g c)``, as MuJoCo's do (Euler, 1 ms, 3 s; the explicit methods and the
    velocity-level ones clamp, through the same effort clamping as ``Control(clamp=True)``
    (tests/control/test_spd.py); the others warn).  Unclamped (before) the servos lifted them."""
    import mujoco

    from pbsim.control.control import servo_effort

    p = tmp_path / "sat.xml"
    p.write_text(SATURATED)
    m, mj = pbsim.load(str(p)), mujoco.MjModel.from_xml_path(str(p))
    np.testing.assert_array_equal(servo_effort(m), [3.0, 1.0])
    d = mujoco.MjData(mj)
    u = np.array([1.2, 1.2])
    d.ctrl[:] = u
    for _ in range(3000):
        mujoco.mj_step(mj, d)
    rest = -np.arccos([3.0 / (2 * 9.81 * 0.2), 1.0 / (1 * 9.81 * 0.15)])
    np.testing.assert_allclose(d.qpos, rest, atol=1e-3)  # MuJoCo's rest: the bound holds the weight
    tr = pbsim.rollout(m, "euler", dt=1e-3, steps=3000, control=pbsim.Control(ctrl=u), scene=pbsim.Scene())
    assert np.abs(tr.q[-1] - d.qpos).max() < 1e-3, (tr.q[-1], d.qpos)  # measured 1.4e-15 (ne_dry 1.1e-15)
    p.write_text(SATURATED.replace(' actuatorfrcrange="-3 3"', "").replace(' forcerange="-1 1"', ""))
    free = pbsim.rollout(pbsim.load(str(p)), "euler", dt=1e-3, steps=3000, control=pbsim.Control(ctrl=u))
    assert (free.q[-1] > 1.1).all()  # unbounded servos lift them
    with pytest.warns(pbsim.errors.PbsimWarning, match=r"pbad does not clamp actuator forces.*\['j1', 'j2'\]"):
        pbsim.integrators.make("pbad", m)
