"""Actuators from MJCF (issue #16 item 2): Control(ctrl=u) drives them like MuJoCo does."""

from __future__ import annotations

import os

import numpy as np
import pytest

import pbsim

mujoco = pytest.importorskip("mujoco")


def _gym(name):
    gym = pytest.importorskip("gymnasium")
    p = os.path.join(os.path.dirname(gym.__file__), "envs", "mujoco", "assets", name)
    if not os.path.isfile(p):
        pytest.skip(f"gymnasium has no {name}")
    return p


def _mj(path, dt):
    mj = mujoco.MjModel.from_xml_path(path)
    mj.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    mj.opt.timestep = dt
    mj.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    return mj, mujoco.MjData(mj)


def test_gymnasium_actuators_are_read():
    m = pbsim.load(_gym("ant.xml"))
    assert m.nu == 8 and len(m.actuator_names) == 8
    assert np.allclose(m.actuators.gear, 150.0) and np.allclose(m.actuators.ctrlrange, [-1.0, 1.0])
    assert not any("actuator" in n for n in m.notes)  # nothing dropped


def test_motor_forces_and_accelerations_equal_mujoco_with_clamping():
    path = _gym("reacher.xml")
    m = pbsim.load(path)
    mj, d = _mj(path, 1e-3)
    rng = np.random.default_rng(0)
    for _ in range(3):
        d.qpos[:] = rng.uniform(-0.2, 0.2, mj.nq)  # inside every joint range: no limit acts
        d.qvel[:] = rng.uniform(-1, 1, mj.nv)
        u = rng.uniform(-2.0, 2.0, mj.nu)  # beyond ctrlrange (+-1): clamped
        d.ctrl[:] = u
        mujoco.mj_forward(mj, d)
        k = pbsim.Control(ctrl=u).kernel_arrays(m, 1)
        assert np.allclose(k.tau[0], d.qfrc_actuator, rtol=0, atol=1e-9)
        qdd = pbsim.aba(m, d.qpos, d.qvel, k.tau[0] - m.damping * d.qvel)
        assert np.allclose(qdd, d.qacc, rtol=0, atol=1e-9)


def test_gymnasium_model_follows_its_own_actuators_like_mujoco():
    """Reacher driven through its two motors for 0.5 s at dt = 1 ms (semi-implicit Euler in both,
    no contact, torques small enough that no joint reaches a limit): within 1e-3 rad."""
    path = _gym("reacher.xml")
    m = pbsim.load(path)
    mj, d = _mj(path, 1e-3)
    rng = np.random.default_rng(1)
    d.qpos[:] = rng.uniform(-0.2, 0.2, mj.nq)
    d.qvel[:] = rng.uniform(-0.5, 0.5, mj.nv)
    s = pbsim.State.make(m, d.qpos.copy(), d.qvel.copy())
    integ = pbsim.integrators.make("euler", m)
    err = 0.0
    for t in range(500):
        u = 0.3 * np.array([np.sin(10e-3 * t), np.cos(7e-3 * t)])
        d.ctrl[:] = u
        mujoco.mj_step(mj, d)
        s, _ = integ.step(s, pbsim.Control(ctrl=u), 1e-3)
        err = max(err, float(np.abs(s.q[0] - d.qpos).max()))
    assert abs(d.qpos[1]) < 2.9  # never at joint1's +-3 rad limit
    assert err < 1e-3, err


XML = """<mujoco><option timestep="1e-4" integrator="Euler" gravity="0 0 -9.81"/>
<worldbody><body name="arm"><joint name="hinge" type="hinge" axis="0 1 0" damping="0.1"/>
 <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.03" mass="1"/></body></worldbody>
<actuator>{act}</actuator></mujoco>"""


@pytest.mark.parametrize(
    "act, u",
    [
        ('<position joint="hinge" kp="40" ctrlrange="-1 1"/>', 0.6),
        ('<velocity joint="hinge" kv="5"/>', 2.0),
        ('<position joint="hinge" kp="40" gear="2"/>', 0.6),
    ],
)
def test_position_and_velocity_actuators_match_mujoco_at_small_dt(tmp_path, act, u):
    p = tmp_path / "act.xml"
    p.write_text(XML.format(act=act))
    m = pbsim.load(str(p))
    assert m.nu == 1 and m.actuators.kind[0] in (1, 2)
    errs = []
    for dt in (1e-4, 2.5e-5):
        mj = mujoco.MjModel.from_xml_path(str(p))
        mj.opt.timestep = dt
        d = mujoco.MjData(mj)
        d.ctrl[:] = u
        integ = pbsim.integrators.make("euler", m)
        s = pbsim.State.make(m)
        c = pbsim.Control(ctrl=np.array([u]))
        for _ in range(int(round(0.5 / dt))):
            mujoco.mj_step(mj, d)
            s, _ = integ.step(s, c, dt)
        errs.append(abs(s.q[0, 0] - d.qpos[0]))
        assert abs(d.qpos[0]) > 0.05  # the actuator moved it
    # stable PD (implicit in the new velocity) vs MuJoCo's explicit actuator: the same dynamics, O(dt)
    # apart (measured 3e-4 .. 9e-3 rad at 1e-4 s, 4x less at 2.5e-5 s)
    assert errs[0] < 1e-2 and errs[1] < 3e-3 and errs[1] < 0.4 * errs[0], errs


def test_bad_ctrl_is_named(tmp_path):
    m = pbsim.load(_gym("reacher.xml"))
    with pytest.raises(pbsim.PbsimError, match="ctrl must have shape"):
        pbsim.Control(ctrl=np.zeros(3)).kernel_arrays(m, 1)
    with pytest.raises(pbsim.PbsimError, match="NaN"):
        pbsim.Control(ctrl=np.array([np.nan, 0.0])).kernel_arrays(m, 1)
    with pytest.raises(pbsim.PbsimError, match="cannot be combined"):
        pbsim.Control(ctrl=np.zeros(2), mode="spd").kernel_arrays(m, 1)
    p = tmp_path / "bad.xml"
    p.write_text(XML.format(act='<motor joint="nope"/>'))
    with pytest.raises(pbsim.PbsimError, match="nope"):
        pbsim.load(str(p))
    k = pbsim.Control(ctrl=np.zeros((3, 2))).kernel_arrays(m, 3)  # batched ctrl
    assert k.tau.shape == (3, m.nv)


def test_cli_ctrl_file_and_values(tmp_path, capsys):
    from pbsim.cli import main
    from pbsim.control.schedule import CtrlSchedule

    path = _gym("reacher.xml")
    m = pbsim.load(path)
    sched = CtrlSchedule.from_arg(m, "0.5,-0.5")
    assert np.allclose(sched(0.3).ctrl, [0.5, -0.5])
    csvp = tmp_path / "u.csv"
    csvp.write_text("t," + ",".join(m.actuator_names) + "\n0,0.1,0.2\n0.05,0.3,0.4\n")
    s = CtrlSchedule.from_arg(m, str(csvp))
    assert np.allclose(s(0.01).ctrl, [0.1, 0.2]) and np.allclose(s(0.07).ctrl, [0.3, 0.4])
    out = tmp_path / "r.npz"
    assert (
        main(
            [
                "rollout",
                path,
                "--integrator",
                "euler",
                "--steps",
                "100",
                "--ctrl",
                str(csvp),
                "--quiet",
                "--out",
                str(out),
                "--ground",
                "none",
            ]
        )
        == 0
    )
    z = np.load(out)
    u = pbsim.rollout(m, "euler", steps=100, control=s, scene=pbsim.Scene())
    assert np.allclose(z["q"], u.q)
    assert main(["rollout", path, "--steps", "2", "--ctrl", "1,2,3", "--quiet"]) == 2
    assert "2 actuators" in capsys.readouterr().err


def test_urdf_joint_motors_on_request():
    import pybullet_data

    path = os.path.join(pybullet_data.getDataPath(), "kuka_iiwa", "model.urdf")
    assert pbsim.load(path).nu == 0  # a URDF has no actuators of its own
    m = pbsim.load(path, actuators="joints")
    assert m.nu == 7 and set(m.actuator_names) <= set(m.joint_names)
    assert np.array_equal(m.actuators.dof, np.arange(7))  # kuka loads fixed: its 7 revolute DOFs
    u = np.full(7, 1e4)  # far above every effort limit: clamped to it
    k = pbsim.Control(ctrl=u).kernel_arrays(m, 1)
    dofs = m.actuators.dof
    assert np.allclose(k.tau[0, dofs], np.abs(m.effort_limit[dofs]))
    with pytest.raises(pbsim.PbsimError, match="actuators"):
        pbsim.load(path, actuators="all")
