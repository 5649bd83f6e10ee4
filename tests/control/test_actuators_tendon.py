"""Actuators with a tendon transmission (issue 29): the force acts along the tendon, ``gear f J^T``
(J the tendon's moment arms, :mod:`pbsim.dynamics.tendon`).  A tendon-driven two-finger gripper
written here: the generalized force equals MuJoCo's ``qfrc_actuator`` to 1e-9 at random states
and inputs (position servo, general with forcerange, motor with gear and ctrlrange on fixed
tendons, a motor on a spatial cable), and the gripper closes as MuJoCo's does."""

import numpy as np
import pytest

import pbsim

GRIPPER = """<mujoco><option gravity="0 0 -9.81" timestep="0.001"/>
<default><geom contype="0" conaffinity="0"/></default>
<worldbody>
 <site name="top" pos="0 0 0.3"/>
 <body name="palm" pos="0 0 0.1"><geom type="box" size="0.06 0.02 0.02" mass="0.5"/>
  <body name="left" pos="-0.03 0 -0.04"><joint name="fl" type="slide" axis="1 0 0" damping="2"/>
   <geom type="box" size="0.005 0.01 0.03" mass="0.05"/><site name="sl" pos="0 0 0.02"/></body>
  <body name="right" pos="0.03 0 -0.04"><joint name="fr" type="slide" axis="-1 0 0" damping="2"/>
   <geom type="box" size="0.005 0.01 0.03" mass="0.05"/></body>
  <body name="wrist" pos="0 0.05 0"><joint name="tilt" axis="1 0 0" damping="0.1"/>
   <geom type="capsule" fromto="0 0 0 0 0.1 0" size="0.01" mass="0.1"/><site name="sw" pos="0 0.1 0.01"/></body>
 </body>
</worldbody>
<tendon>
 <fixed name="split"><joint joint="fl" coef="0.5"/><joint joint="fr" coef="0.5"/></fixed>
 <fixed name="diff"><joint joint="fl" coef="1"/><joint joint="fr" coef="-1"/></fixed>
 <spatial name="cable"><site site="top"/><site site="sl"/><site site="sw"/></spatial>
</tendon>
<actuator>
 <position name="close" tendon="split" kp="200" kv="10" ctrlrange="-0.02 0.025"/>
 <general name="centre" tendon="diff" gainprm="50" biasprm="1 -50 -3" forcerange="-2 2"/>
 <motor name="squeeze" tendon="split" gear="2" ctrlrange="-1 1"/>
 <motor name="pull" tendon="cable" gear="3"/>
</actuator>
</mujoco>"""


def _load(tmp_path, xml=GRIPPER):
    import mujoco

    p = tmp_path / "gripper.xml"
    p.write_text(xml)
    return pbsim.load(str(p)), mujoco.MjModel.from_xml_path(str(p))


def actuator_torque(model, q, v, ctrl):
    """The actuators' generalized force as the explicit steps apply it: the joint actuators'
    arrays (none here) and the tendon actuators' J^T F (pbsim.dynamics.tendon.tendon_forces; the
    gripper's tendons have no passive force)."""
    from pbsim.dynamics.tendon import tendon_forces
    from pbsim.dynamics.workspace import work_for

    kc = pbsim.Control(ctrl=ctrl).kernel_arrays(model, 1)
    from pbsim.control.site_actuators import site_forces

    tau, arm = kc.tau[0].copy(), np.zeros(model.nv)
    q, v = np.asarray(q, float), np.asarray(v, float)
    tendon_forces(model.k, kc, work_for(model, 1), 0, q, v, 0.0, False, False, tau, arm)
    site_forces(model.k, kc, work_for(model, 1), 0, q, tau)
    return tau


def test_tendon_actuators_equal_mujocos_qfrc_actuator(tmp_path):
    import mujoco

    m, mj = _load(tmp_path)
    assert m.nu == 4 and list(m.actuators.tendon) == [0, 1, 0, 2] and not [n for n in m.notes if "actuator" in n]
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(0)
    clamped = 0
    for _ in range(30):
        q, v = rng.uniform(-0.05, 0.05, m.nq), rng.normal(size=m.nv)
        u = rng.uniform(-2, 2, m.nu) * np.array([0.03, 0.1, 1, 1])
        d.qpos[:], d.qvel[:], d.ctrl[:] = q, v, u
        mujoco.mj_forward(mj, d)
        clamped += abs(d.actuator_force[1]) == 2.0
        np.testing.assert_allclose(actuator_torque(m, q, v, u), d.qfrc_actuator, rtol=1e-9, atol=1e-9)
    assert 0 < clamped < 30  # the forcerange clamp was exercised


@pytest.mark.parametrize("method", ["euler", "rk4"])
def test_gripper_closes_as_mujocos(tmp_path, method):
    """From open, ``close`` drives the fingers' mean to 0.02 while ``centre`` keeps them level:
    1 s at 1 ms within 1e-3 m (rad) of MuJoCo's Euler / RK4."""
    import mujoco

    m, mj = _load(tmp_path)
    u = np.array([0.02, 0.0, 0.2, 0.0])
    q0 = np.array([-0.01, 0.005, 0.0])
    I = mujoco.mjtIntegrator
    mj.opt.integrator = I.mjINT_EULER if method == "euler" else I.mjINT_RK4
    d = mujoco.MjData(mj)
    d.qpos[:], d.ctrl[:] = q0, u
    ref = [d.qpos.copy()]
    for _ in range(1000):
        mujoco.mj_step(mj, d)
        ref.append(d.qpos.copy())
    ref = np.array(ref)
    tr = pbsim.rollout(m, method, dt=1e-3, steps=1000, q0=q0, control=pbsim.Control(ctrl=u))
    assert np.abs(tr.q - ref).max() < 1e-3, np.abs(tr.q - ref).max()
    assert abs(0.5 * (ref[-1, 0] + ref[-1, 1]) - 0.02) < 3e-3  # it did close (MuJoCo and pbsim)


@pytest.mark.parametrize("dt", [0.02, 0.05])
def test_gripper_closes_with_pbad_at_large_dt(tmp_path, dt):
    """Position-based: the fixed-tendon servos as potentials of the step; the fingers come to
    MuJoCo's resting opening (1 ms RK4) at 20 and 50 ms.  (The spatial cable's motor is dropped:
    pbad refuses a spatial tendon with an actuator.)"""
    xml = GRIPPER.replace('<motor name="pull" tendon="cable" gear="3"/>', "")
    m, mj = _load(tmp_path, xml)
    with pytest.raises(pbsim.InputError, match="spatial tendons"):
        pbsim.integrators.make("pbad", _load(tmp_path)[0])
    u, q0, ref = mujoco_rest(mj)
    tr = pbsim.rollout(m, "pbad", dt=dt, steps=int(round(2.0 / dt)), q0=q0, control=pbsim.Control(ctrl=u))
    assert np.abs(tr.q[-1, :2] - ref[:2]).max() < 1e-3, (tr.q[-1], ref)


def mujoco_rest(mj):
    """The closing gripper's ``ctrl``, start ``q0`` and MuJoCo's state after 2 s of 1 ms RK4 (the
    large-dt tests' reference; the gripper without the cable motor)."""
    import mujoco

    u = np.array([0.02, 0.0, 0.2])
    q0 = np.array([-0.01, 0.005, 0.0])
    mj.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    d = mujoco.MjData(mj)
    d.qpos[:], d.ctrl[:] = q0, u
    for _ in range(2000):
        mujoco.mj_step(mj, d)
    return u, q0, d.qpos.copy()


SITES = GRIPPER.replace(
    "</actuator>",
    '<general name="push" site="sl" gear="0 0.5 1 0.1 0 0.2" gainprm="2" biasprm="0.5 0 0" forcerange="-1 1"/>'
    '<motor name="twist" site="sw" gear="0 0 0 1 0 0"/></actuator>',
)


def test_site_actuators_equal_mujocos_qfrc_actuator(tmp_path):
    """Site transmissions (no refsite): a force and torque along the site's axes; with the tendon
    actuators, qfrc_actuator equals MuJoCo's to 1e-9 at random states (forcerange exercised);
    the position-based methods refuse them by name."""
    import mujoco

    m, mj = _load(tmp_path, SITES)
    assert m.nu == 6 and list(m.actuators.site >= 0) == [False] * 4 + [True, True]
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(5)
    clamped = 0
    for _ in range(30):
        q, v = rng.uniform(-0.05, 0.05, m.nq) + [0, 0, rng.uniform(-1.5, 1.5)], rng.normal(size=m.nv)
        u = rng.uniform(-2, 2, m.nu)
        d.qpos[:], d.qvel[:], d.ctrl[:] = q, v, u
        mujoco.mj_forward(mj, d)
        clamped += abs(d.actuator_force[4]) == 1.0
        np.testing.assert_allclose(actuator_torque(m, q, v, u), d.qfrc_actuator, rtol=1e-9, atol=1e-9)
    assert 0 < clamped < 30
    with pytest.raises(pbsim.InputError, match="site-transmission actuators.*push"):
        pbsim.integrators.make(
            "pbfd", _load(tmp_path, SITES.replace('<motor name="pull" tendon="cable" gear="3"/>', ""))[0]
        )
