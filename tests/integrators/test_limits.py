"""Joint position limits in every integrator (issue #16 item 1): a pendulum driven into its
limits at 6 rad/s overshoots by at most 0.05 rad at dt = 1 ms and 20 ms (pbad also 50 ms)."""

from __future__ import annotations

import numpy as np
import pytest

import pbsim
from pbsim.model.limits import LIMIT_TIMECONST, subtree_axis_inertia

URDF = """<robot name="pend">
 <link name="base"/>
 <link name="arm"><inertial><origin xyz="0 0 -0.5"/><mass value="1"/>
  <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
 <joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
  <limit lower="-0.5" upper="0.5" effort="100" velocity="10"/></joint>
</robot>"""

LIMITED = [
    "euler",
    "explicit_euler",
    "rk2",
    "rk3",
    "rk4",
    "variational",
    "variational_newton",
    "variational_broyden",
    "pbad",
]


@pytest.fixture(scope="module")
def pendulum(tmp_path_factory):
    p = tmp_path_factory.mktemp("lim") / "pend.urdf"
    p.write_text(URDF)
    return pbsim.load(str(p), floating_base=False)


def test_without_limits_the_swing_goes_past(pendulum):
    import dataclasses

    free = dataclasses.replace(pendulum, lower=np.array([-np.inf]), upper=np.array([np.inf]))
    tr = pbsim.rollout(free, "euler", dt=1e-3, steps=1500, q0=np.array([0.4]), v0=np.array([6.0]))
    assert tr.q[:, 0].max() > 1.5  # the swing the limit has to stop


def test_default_gains_are_critically_damped_on_the_joint_inertia(pendulum):
    inertia = subtree_axis_inertia(pendulum)
    assert np.isclose(inertia[0], 0.01 + 1.0 * 0.5**2)  # about y through the hinge
    w = 2 * np.pi / LIMIT_TIMECONST
    kp, kd = pendulum.limit_gains()
    assert np.isclose(kp[0], inertia[0] * w * w) and np.isclose(kd[0], 2 * inertia[0] * w)


@pytest.mark.parametrize("name", LIMITED)
@pytest.mark.parametrize("dt", [1e-3, 2e-2])
def test_limit_overshoot(pendulum, name, dt):
    tr = pbsim.rollout(pendulum, name, dt=dt, steps=int(round(1.5 / dt)), q0=np.array([0.4]), v0=np.array([6.0]))
    q = tr.q[:, 0]
    assert np.isfinite(q).all()
    over = max(q.max() - 0.5, -0.5 - q.min(), 0.0)
    assert over <= 0.05, (name, dt, over)
    assert q.max() > 0.45  # it did reach the limit (the test is not vacuous)


def test_pbad_limit_at_50ms(pendulum):
    """pbad's limit is a term of its step objective: a 50 ms step cannot jump through it."""
    tr = pbsim.rollout(pendulum, "pbad", dt=0.05, steps=30, q0=np.array([0.4]), v0=np.array([6.0]))
    q = tr.q[:, 0]
    assert q.max() > 0.45 and max(q.max() - 0.5, -0.5 - q.min(), 0.0) <= 0.05, q


def test_limits_off_changes_nothing_inside_them(pendulum):
    """Far from its limits a joint moves exactly as without them (the limit term is inactive)."""
    import dataclasses

    wide = dataclasses.replace(pendulum, lower=np.array([-3.0]), upper=np.array([3.0]))
    none = dataclasses.replace(pendulum, lower=np.array([-np.inf]), upper=np.array([np.inf]))
    for name in ("euler", "rk4"):
        a = pbsim.rollout(wide, name, dt=1e-3, steps=300, q0=np.array([0.3]))
        b = pbsim.rollout(none, name, dt=1e-3, steps=300, q0=np.array([0.3]))
        assert np.array_equal(a.q, b.q)


def test_user_gains_override(pendulum):
    import dataclasses

    soft = dataclasses.replace(pendulum, limit_stiffness=np.array([10.0]), limit_damping=np.array([0.0]))
    tr = pbsim.rollout(soft, "euler", dt=1e-3, steps=1500, q0=np.array([0.4]), v0=np.array([6.0]))
    assert tr.q[:, 0].max() > 0.6  # a soft limit spring lets the swing through further


@pytest.mark.parametrize("name", ["pbad", "pbad3", "pbd_nmdp"])
def test_position_based_limit_is_damped_like_the_explicit_one(pendulum, name):
    """A joint released 0.4 rad outside its limit: the position-based step's limit has the explicit
    methods' damper (kd / (2 dt) d^2 while the limit acts), so it follows euler's trajectory; the
    spring alone (before) turned its 0.5 kp e^2 = 2 kJ into a swing through the whole range.  Measured
    largest difference to euler: pbad and pbd_nmdp below 0.02 rad, pbad3 0.021 (its damper acts
    at the nodes while past the limit, euler's while its prediction is)."""
    steps = 300
    ref = pbsim.rollout(pendulum, "euler", dt=1e-3, steps=steps, q0=np.array([0.9])).q[:, 0]
    q = pbsim.rollout(pendulum, name, dt=1e-3, steps=steps, q0=np.array([0.9])).q[:, 0]
    assert ref[50] < 0.55  # euler: back onto the limit within 50 ms (critically damped)
    assert np.abs(q - ref).max() < 0.03, (name, np.abs(q - ref).max())


def test_humanoid_released_outside_its_knee_limits_moves_as_in_mujoco():
    """The gymnasium humanoid's qpos0 has its knees and hips 2 degrees outside their ranges: in
    100 ms of free fall (contact off) MuJoCo (Euler, 1 ms) moves them onto the limits, 0.037 rad;
    pbad's limit damper does the same (without it: 0.59 rad, the legs flung by the limit springs)."""
    mujoco = pytest.importorskip("mujoco")
    from conftest import gymnasium_xml

    path = gymnasium_xml("humanoid.xml")
    mm = mujoco.MjModel.from_xml_path(path)
    mm.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    mm.opt.timestep = 1e-3
    mm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    d = mujoco.MjData(mm)
    for _ in range(100):
        mujoco.mj_step(mm, d)
    m = pbsim.load(path)
    q0 = np.array(m.default_configuration(), float)
    q = pbsim.rollout(m, "pbad", dt=1e-3, steps=100, q0=q0, scene=pbsim.Scene()).q[-1]
    ref = d.qpos[7:] - mm.qpos0[7:]
    assert np.abs(ref).max() > 0.03  # the limits did act
    assert np.abs((q[7:] - q0[7:]) - ref).max() < 3e-3, np.abs((q[7:] - q0[7:]) - ref).max()
