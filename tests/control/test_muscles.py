"""MuJoCo's muscles (``<muscle>`` on a tendon, :mod:`pbsim.dynamics.muscle`) against MuJoCo: the
generalized force equals ``qfrc_actuator`` at random states and activations (a spatial and a
fixed tendon, a peak force given and one scaled from ``acc0``, lengths across the whole
force-length and passive curves, velocities across the force-velocity curve); the activation
advances as MuJoCo's (with and without ``tausmooth``); an arm written here follows MuJoCo's Euler
over 1 s; MJX's muscle arm (``arm21.xml``) is imported and its force law is MuJoCo's; the position-based methods refuse a
muscle by name.  Before, muscles were not imported (named in ``pbsim info``)."""

import numpy as np
import pytest

import pbsim
from conftest import mjcf_pair, mjx_test_data
from pbsim.control.actuators import act_advance
from pbsim.errors import InputError

mujoco = pytest.importorskip("mujoco")

ARM = """<mujoco><option timestep="0.001" integrator="Euler"/>
<default><geom contype="0" conaffinity="0"/></default>
<worldbody>
 <site name="s0" pos="0 0 0.15"/><site name="s3" pos="0 0 -0.1"/>
 <body name="upper"><joint name="shoulder" axis="0 1 0" damping="0.05"/>
  <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1"/><site name="s1" pos="0.15 0 0.04"/>
  <body name="fore" pos="0.3 0 0"><joint name="elbow" axis="0 1 0" damping="0.05"/>
   <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.025" mass="0.6"/><site name="s2" pos="0.1 0 0.03"/>
  </body>
 </body>
</worldbody>
<tendon>
 <spatial name="biceps"><site site="s0"/><site site="s1"/><site site="s2"/></spatial>
 <fixed name="triceps"><joint joint="shoulder" coef="-0.04"/><joint joint="elbow" coef="-0.03"/></fixed>
</tendon>
<actuator>
 <muscle name="flex" tendon="biceps" force="60" lengthrange="0.2 0.5" tausmooth="0.2"/>
 <muscle name="ext" tendon="triceps" scale="80" range="0.7 1.2" lmin="0.4" lmax="1.7" vmax="2" fpmax="1.5"
   fvmax="1.6" timeconst="0.02 0.05" lengthrange="-0.12 0.12"/>
</actuator>
</mujoco>"""


def actuator_torque(model, q, v, ctrl, act):
    """The actuators' generalized force as the explicit steps apply it (the tendons' J^T F)."""
    from pbsim.dynamics.tendon import tendon_forces
    from pbsim.dynamics.workspace import work_for

    kc = pbsim.Control(ctrl=ctrl, act=act).kernel_arrays(model, 1)
    tau, arm = kc.tau[0].copy(), np.zeros(model.nv)
    tendon_forces(
        model.k, kc, work_for(model, 1), 0, np.asarray(q, float), np.asarray(v, float), 0.0, False, False, tau, arm
    )
    return tau


def assert_qfrc_actuator_is_mujocos(m, mj, seed, span, vscale, n=60):
    """The actuators' generalized force equals MuJoCo's ``qfrc_actuator`` (1e-10) at ``n`` random
    states (q uniform in +-span, v normal) and controls and activations uniform in [0, 1]; returns
    MuJoCo's actuator lengths there (n, nu)."""
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(seed)
    L = []
    for _ in range(n):
        q, v = rng.uniform(-span, span, m.nq), rng.normal(scale=vscale, size=m.nv)
        u, a = rng.uniform(0, 1, m.nu), rng.uniform(0, 1, m.na)
        d.qpos[:], d.qvel[:], d.ctrl[:], d.act[:] = q, v, u, a
        mujoco.mj_forward(mj, d)
        L.append(d.actuator_length.copy())
        np.testing.assert_allclose(actuator_torque(m, q, v, u, a), d.qfrc_actuator, rtol=1e-10, atol=1e-10)
    return np.array(L)


def test_muscle_force_equals_mujocos_qfrc_actuator(tmp_path):
    m, mj = mjcf_pair(tmp_path, "arm.xml", ARM)
    assert m.nu == 2 and m.na == 2 and not [n for n in m.notes if "actuator" in n], m.notes
    assert m.actuators.muscle[1, 3] == pytest.approx(80.0 / mj.actuator_acc0[1])  # F0 = scale / acc0
    L = assert_qfrc_actuator_is_mujocos(m, mj, seed=0, span=2.5, vscale=4.0)
    assert np.ptp(L[:, 0]) > 0.1 and np.ptp(L[:, 1]) > 0.1  # across the curves, not one point


def test_activation_advances_as_mujocos(tmp_path):
    m, mj = mjcf_pair(tmp_path, "arm.xml", ARM)
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(1)
    for _ in range(40):
        u, a = rng.uniform(-0.2, 1.2, m.nu), rng.uniform(0, 1, m.na)
        mujoco.mj_resetData(mj, d)
        d.ctrl[:], d.act[:] = u, a
        mujoco.mj_step(mj, d)
        np.testing.assert_allclose(act_advance(m, a, u, mj.opt.timestep, 1)[0], d.act, rtol=0, atol=1e-14)


def test_muscle_arm_follows_mujocos_euler(tmp_path):
    m, mj = mjcf_pair(tmp_path, "arm.xml", ARM)
    d = mujoco.MjData(mj)
    u = np.array([0.8, 0.3])
    d.ctrl[:] = u
    for _ in range(1000):
        mujoco.mj_step(mj, d)
    tr = pbsim.rollout(m, "euler", dt=1e-3, steps=1000, control=pbsim.Control(ctrl=u), record_every=1000)
    assert np.abs(tr.q[-1] - d.qpos).max() < 1e-9, (tr.q[-1], d.qpos)
    assert np.abs(d.qpos - mj.qpos0).max() > 0.1  # the muscles moved it


def test_mjx_muscle_arm_is_imported():
    """MJX's ``arm21.xml``: its muscle (on a cable between two points of one rigid assembly, so no
    joint force) is imported with MuJoCo's computed length range, and its force law (active and
    passive, by ``pbsim.dynamics.muscle``) gives MuJoCo's ``actuator_force``."""
    from pbsim.dynamics.muscle import muscle_force

    path = mjx_test_data("actuator/arm21.xml")
    m, mj = pbsim.load(path), mujoco.MjModel.from_xml_path(path)
    assert not [n for n in m.notes if "actuator" in n], m.notes
    p = m.actuators.muscle[0]
    assert p[0] == 1 and np.array_equal(p[9:], mj.actuator_lengthrange[0])
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(2)
    for _ in range(20):
        d.qpos[:], d.qvel[:], d.act[:] = rng.normal(size=mj.nq), rng.normal(size=mj.nv), rng.uniform(0, 1, mj.na)
        mujoco.mj_forward(mj, d)
        f = muscle_force(p, d.act[0], d.actuator_length[0], d.actuator_velocity[0])
        assert abs(f - d.actuator_force[0]) < 1e-12 * max(1.0, abs(d.actuator_force[0]))


def test_position_based_methods_refuse_muscles(tmp_path):
    m, _ = mjcf_pair(tmp_path, "arm.xml", ARM)
    with pytest.raises(InputError, match=r"pbad .* muscle.*'flex', 'ext'"):
        pbsim.integrators.make("pbad", m)


JOINT_ARM = """<mujoco><option timestep="0.001" integrator="Euler"/>
<default><geom contype="0" conaffinity="0"/></default>
<worldbody>
 <body name="upper"><joint name="shoulder" axis="0 1 0" damping="0.05"/>
  <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1"/>
  <body name="fore" pos="0.3 0 0"><joint name="elbow" axis="0 1 0" ref="25" damping="0.05"/>
   <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.025" mass="0.6"/>
   <body name="hand" pos="0.25 0 0"><joint name="wrist" type="slide" axis="1 0 0" damping="0.5"/>
    <geom type="sphere" size="0.03" mass="0.2"/></body>
  </body>
 </body>
</worldbody>
<actuator>
 <muscle name="sh_flex" joint="shoulder" gear="0.05" force="40" lengthrange="-0.08 0.08"/>
 <muscle name="sh_ext" joint="shoulder" gear="-0.04" scale="60" lengthrange="-0.07 0.07" tausmooth="0.1"/>
 <muscle name="el_flex" joint="elbow" gear="0.03" force="25" range="0.6 1.3" lengthrange="-0.02 0.06"/>
 <muscle name="wr" joint="wrist" gear="2" force="15" lengthrange="-0.1 0.1"/>
</actuator>
</mujoco>"""


def test_muscles_on_joints_equal_mujocos_qfrc_actuator_and_trajectory(tmp_path):
    """Muscles on hinge and slide joint transmissions (antagonists on one joint, a negative gear, a
    joint with ``ref``: the length is ``gear qpos``, and pbsim's q is MuJoCo's qpos):
    ``qfrc_actuator`` at random states and activations, and 1 s under constant commands against
    MuJoCo's Euler, from the file's qpos0.  They were not imported before ("a muscle on a joint
    transmission")."""
    m, mj = mjcf_pair(tmp_path, "jarm.xml", JOINT_ARM)
    assert m.nu == 4 and m.na == 4 and not [n for n in m.notes if "actuator" in n], m.notes
    L = assert_qfrc_actuator_is_mujocos(m, mj, seed=3, span=1.5, vscale=3.0)
    assert np.ptp(L, axis=0).min() > 0.05  # across the curves, not one point
    d = mujoco.MjData(mj)
    u = np.array([0.9, 0.2, 0.7, 0.5])
    d.ctrl[:] = u
    for _ in range(1000):
        mujoco.mj_step(mj, d)
    tr = pbsim.rollout(m, "euler", dt=1e-3, steps=1000, control=pbsim.Control(ctrl=u), record_every=1000)
    assert np.abs(tr.q[0] - mj.qpos0).max() == 0.0  # the same start
    assert np.abs(tr.q[-1] - d.qpos).max() < 1e-9, (tr.q[-1], d.qpos)
    assert np.abs(d.qpos - mj.qpos0).max() > 0.1  # the muscles moved it
