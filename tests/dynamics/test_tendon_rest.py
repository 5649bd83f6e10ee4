"""Tendons (issue 29) in pbfd, pbd_nmdp and variational: the damped arm comes to rest at MuJoCo's
equilibrium (models and check in test_tendon.py; a file of its own so that these step kernels
compile on another test worker than pbad's and the explicit ones).  Issue 29's large-dt bar for the
tendon-driven gripper (tests/control/test_actuators_tendon.py) with NMDP's position-based form: here,
beside the other pbd_nmdp run, so that the one pbd_nmdp step kernel is compiled once."""

import numpy as np
import pytest
from test_tendon import rests_where_mujoco_does

import pbsim
from tests.control.test_actuators_tendon import GRIPPER, _load, mujoco_rest


@pytest.mark.parametrize("method,dt", [("pbfd", 0.02), ("pbd_nmdp", 0.02), ("variational", 0.01)])
def test_position_based_step_rests_where_mujoco_does(tmp_path, method, dt):
    rests_where_mujoco_does(tmp_path, method, dt)


@pytest.mark.parametrize("dt", [0.02, 0.05])
def test_gripper_closes_with_pbd_nmdp_at_large_dt(tmp_path, dt):
    """The fingers' joints after 2 s within 1e-3 m of MuJoCo's 1 ms RK4 run (which rests them at
    0.0145 / 0.0295 m); the wrist swings freely under gravity and is not compared (MuJoCo's own
    wrist angle depends on its integrator)."""
    xml = GRIPPER.replace('<motor name="pull" tendon="cable" gear="3"/>', "")
    m, mj = _load(tmp_path, xml)
    u, q0, ref = mujoco_rest(mj)
    tr = pbsim.rollout(m, "pbd_nmdp", dt=dt, steps=int(round(2.0 / dt)), q0=q0, control=pbsim.Control(ctrl=u))
    assert np.abs(tr.q[-1, :2] - ref[:2]).max() < 1e-3, (tr.q[-1], ref)
    assert abs(0.5 * (tr.q[-1, 0] + tr.q[-1, 1]) - 0.5 * (q0[0] + q0[1])) > 0.015  # it moved: closed by 2 cm


def test_explicit_tendon_servo_beyond_its_bound_is_named(tmp_path):
    """nmdp applies a tendon servo explicitly (only the position-based methods hold it in the
    step): at 50 ms the gripper's ``close`` servo (kp 200, kv 10 on 0.05 kg fingers through the
    0.5/0.5 tendon) is past semi-implicit Euler's bound, and nmdp then oscillates without
    diverging; the run is named with a warning, the bound being the one where the step matrix's
    spectral radius crosses 1."""
    from pbsim.dynamics.tendon import explicit_servo_limits

    xml = GRIPPER.replace('<motor name="pull" tendon="cable" gear="3"/>', "")
    m, _ = _load(tmp_path, xml)
    q0 = np.array([-0.01, 0.005, 0.0])
    ((name, tendon, h),) = explicit_servo_limits(m, q0)  # "centre" has biastype none: no servo
    assert (name, tendon) == ("close", "split")
    k, d = 200 * 10.0, 10 * 10.0  # per unit of J M^-1 J^T = 0.25 / 0.05 * 2 = 10

    def radius(h):  # semi-implicit Euler on x'' = -k x - d x'
        A = np.array([[1 - h * d, -h * k], [h * (1 - h * d), 1 - h * h * k]])
        return max(abs(np.linalg.eigvals(A)))

    assert radius(0.99 * h) < 1 < radius(1.01 * h)
    ctrl = pbsim.Control(ctrl=np.array([0.02, 0.0, 0.2]))
    with pytest.warns(pbsim.PbsimWarning, match=r"'close' \(on tendon 'split'\) explicitly.*dt < 0.01708"):
        pbsim.integrators.make("nmdp", m).warn_explicit_servos(q0, 0.05, ctrl)
    # no control given: the servo acts at ctrl = 0 (MuJoCo's), so a step is named the same way
    st = pbsim.State.make(m, q0)
    with pytest.warns(pbsim.PbsimWarning, match=r"'close' \(on tendon 'split'\) explicitly"):
        pbsim.integrators.make("euler", m).step(st, None, 0.05)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pbsim.integrators.make("nmdp", m).warn_explicit_servos(q0, 0.01, ctrl)  # below the bound
        pbsim.integrators.make("pbd_nmdp", m).warn_explicit_servos(q0, 0.05, ctrl)  # held in the step
