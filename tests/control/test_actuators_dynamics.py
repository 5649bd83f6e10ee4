"""Actuators with activation dynamics (issue 29): MuJoCo's ``dyntype`` integrator / filter /
filterexact, ``actrange``, ``actearly``, ``intvelocity``, on joints and on a tendon.  The
activations are ``State.act``, advanced by ``Integrator.step`` for every method as MuJoCo's Euler
does; the force uses them.  MuJoCo is the oracle: ``qfrc_actuator`` at random states and
activations, the activations after a step, trajectories, a keyframe's ``act``."""

import numpy as np
import pytest

import pbsim
from pbsim.control.actuators import act_advance, force_act

ARM = """<mujoco><option gravity="0 0 -9.81" timestep="0.001"/>
<default><geom contype="0" conaffinity="0"/></default>
<worldbody>
 <body name="l1" pos="0 0 1"><joint name="j1" axis="0 1 0" damping="0.2"/>
  <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1"/>
  <body name="l2" pos="0.3 0 0"><joint name="j2" axis="0 1 0" damping="0.2"/>
   <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.03" mass="0.7"/>
   <body name="l3" pos="0.25 0 0"><joint name="j3" type="slide" axis="1 0 0" damping="2"/>
    <geom type="box" size="0.03 0.03 0.03" mass="0.3"/></body></body></body>
</worldbody>
<tendon><fixed name="t"><joint joint="j1" coef="0.5"/><joint joint="j2" coef="1"/></fixed></tendon>
<actuator>
 <general name="filt" joint="j1" dyntype="filter" dynprm="0.05" gainprm="10"/>
 <general name="fexact" joint="j2" dyntype="filterexact" dynprm="0.1" gainprm="5" ctrlrange="-1 1"/>
 <intvelocity name="iv" joint="j3" kp="50" kv="5" actrange="-0.05 0.05"/>
 <general name="tfilt" tendon="t" dyntype="filter" dynprm="0.03" gainprm="20" biasprm="0 -20 -1"/>
 <general name="early" joint="j1" dyntype="filter" dynprm="0.05" actearly="true" gainprm="3"/>
 <motor name="plain" joint="j2" gear="2"/>
</actuator>
<keyframe><key name="spun" qpos="0.2 -0.3 0.01" qvel="0.5 0 0" ctrl="1 0.5 0.2 0.1 -1 0.3" act="0.4 -0.2 0.03 0.1 -0.5"/></keyframe>
</mujoco>"""


@pytest.fixture
def arm(tmp_path):
    import mujoco

    p = tmp_path / "arm.xml"
    p.write_text(ARM)
    return pbsim.load(str(p)), mujoco.MjModel.from_xml_path(str(p))


def actuator_torque(model, q, v, ctrl, act):
    """The actuators' generalized force as the explicit steps apply it (their PD terms at (q, v),
    the tendon actuators through pbsim.dynamics.tendon.tendon_forces)."""
    from pbsim.dynamics.tendon import tendon_forces
    from pbsim.dynamics.workspace import work_for

    kc = pbsim.Control(ctrl=ctrl, act=act).kernel_arrays(model, 1)
    dq = pbsim.difference(model, q, kc.q_ref[0]) if np.any(kc.kp) else np.zeros(model.nv)
    tau = kc.tau[0] + kc.kp[0] * dq + kc.kd[0] * (kc.v_ref[0] - v)
    tendon_forces(
        model.k,
        kc,
        work_for(model, 1),
        0,
        np.asarray(q, float),
        np.asarray(v, float),
        0.0,
        False,
        False,
        tau,
        np.zeros(model.nv),
    )
    return tau


def test_activations_imported(arm):
    m, mj = arm
    assert m.nu == 6 and m.na == 5 and not [n for n in m.notes if "actuator" in n or "keyframe" in n]
    assert list(m.actuators.dyntype) == [2, 3, 1, 2, 2, 0] and list(m.actuators.actadr) == [0, 1, 2, 3, 4, -1]
    np.testing.assert_allclose(m.keyframes["spun"].act, [0.4, -0.2, 0.03, 0.1, -0.5])
    assert "6 actuator(s), 5 with activation dynamics" in m.summary()


def test_force_with_activations_equals_mujocos_qfrc_actuator(arm):
    """At random states, inputs and activations (actearly: the force uses act+ of the step)."""
    import mujoco

    m, mj = arm
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(0)
    for _ in range(20):
        q, v = rng.uniform(-1, 1, m.nq) * [1, 1, 0.05], rng.normal(size=m.nv)
        u, a = rng.uniform(-2, 2, m.nu), rng.uniform(-1, 1, m.na) * [1, 1, 0.05, 1, 1]
        d.qpos[:], d.qvel[:], d.ctrl[:], d.act[:] = q, v, u, a
        mujoco.mj_forward(mj, d)
        a_force = force_act(m, a[None], act_advance(m, a, u, mj.opt.timestep, 1))[0]
        np.testing.assert_allclose(actuator_torque(m, q, v, u, a_force), d.qfrc_actuator, rtol=1e-9, atol=1e-9)


def test_activations_advance_as_mujocos_euler(arm):
    """act+ after one step equals MuJoCo's (Euler), actrange clamp included."""
    import mujoco

    m, mj = arm
    mj.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(1)
    for _ in range(10):
        u, a = rng.uniform(-2, 2, m.nu) * [1, 1, 40, 1, 1, 1], rng.uniform(-1, 1, m.na) * [1, 1, 0.05, 1, 1]
        mujoco.mj_resetData(mj, d)
        d.ctrl[:], d.act[:] = u, a
        mujoco.mj_step(mj, d)
        np.testing.assert_allclose(act_advance(m, a, u, mj.opt.timestep, 1)[0], d.act, rtol=0, atol=1e-14)


# the trajectory model: the intvelocity servo made a plain integrator motor (a joint servo runs
# as stable PD, implicit: it follows MuJoCo's explicit Euler to O(dt) only, measured 4e-3 rad)
ARM_EXPLICIT = ARM.replace(
    '<intvelocity name="iv" joint="j3" kp="50" kv="5" actrange="-0.05 0.05"/>',
    '<general name="iv" joint="j3" dyntype="integrator" gainprm="1" actrange="-0.05 0.05"/>',
)


@pytest.mark.parametrize("method", ["euler", "rk4"])
def test_filter_actuator_trajectory_follows_mujoco(tmp_path, method):
    """From the keyframe (its act honoured), 1 s at 1 ms: q within 1e-3 of MuJoCo's Euler, 2.5e-3 of
    its RK4 (which also integrates act by RK4 stages; pbsim advances act once per step for every
    method), and the activations equal MuJoCo's Euler update."""
    import mujoco

    p = tmp_path / "arm_explicit.xml"
    p.write_text(ARM_EXPLICIT)
    m, mj = pbsim.load(str(p)), mujoco.MjModel.from_xml_path(str(p))
    I = mujoco.mjtIntegrator
    mj.opt.integrator = I.mjINT_EULER if method == "euler" else I.mjINT_RK4
    d = mujoco.MjData(mj)
    mujoco.mj_resetDataKeyframe(mj, d, 0)
    key = m.keyframes["spun"]
    u = np.array(d.ctrl)
    ref = [d.qpos.copy()]
    for _ in range(1000):
        mujoco.mj_step(mj, d)
        ref.append(d.qpos.copy())
    tr = pbsim.rollout(
        m, method, dt=1e-3, steps=1000, q0=key.q, v0=key.v, act0=key.act, control=pbsim.Control(ctrl=key.ctrl)
    )
    err = np.abs(tr.q - np.array(ref)).max()
    # measured: euler 1.3e-15 (the same update); rk4 1.55e-3 (MuJoCo's RK4 moves act within the
    # step's stages, pbsim's force holds act_k over the step: first order in act)
    assert err < (1e-3 if method == "euler" else 2.5e-3), err
    integ = pbsim.integrators.make(method, m)
    st = pbsim.State.make(m, key.q, key.v, act=key.act)
    for _ in range(1000):
        st, _ = integ.step(st, pbsim.Control(ctrl=u), 1e-3)
    np.testing.assert_allclose(st.act[0], d.act, rtol=0, atol=1e-12 if method == "euler" else 2e-3)


@pytest.mark.parametrize("dt", [0.02, 0.05])
def test_position_based_methods_advance_activations(tmp_path, dt):
    """pbad at 20 and 50 ms takes the same act update: the arm, hanging on the tendon's filtered
    servo and the slider's intvelocity servo (act integrating to its actrange bound), follows
    MuJoCo's (RK4, 1 ms) to its state at 8 s (measured 1.9e-3 rad at 20 ms, 5.1e-3 at 50 ms),
    the activations equal."""
    import mujoco

    p = tmp_path / "arm_damped.xml"
    p.write_text(ARM.replace('damping="0.2"', 'damping="3"'))
    m, mj = pbsim.load(str(p)), mujoco.MjModel.from_xml_path(str(p))
    u = np.array([0.0, 0.0, 0.2, 0.1, 0.0, 0.0])
    mj.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    d = mujoco.MjData(mj)
    d.ctrl[:] = u
    for _ in range(8000):
        mujoco.mj_step(mj, d)
    integ = pbsim.integrators.make("pbad", m)
    st = pbsim.State.make(m)
    for _ in range(int(round(8.0 / dt))):
        st, _ = integ.step(st, pbsim.Control(ctrl=u), dt)
    assert np.abs(st.q[0] - d.qpos).max() < 1e-2, (st.q[0], d.qpos)
    np.testing.assert_allclose(st.act[0], d.act, atol=1e-9)
