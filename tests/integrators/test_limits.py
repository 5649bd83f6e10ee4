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
