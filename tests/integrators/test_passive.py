"""Passive joint forces from the files (issue #16 item 3): MJCF joint springs (stiffness toward
springref) and dry friction (frictionloss, smoothed)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import pbsim

mujoco = pytest.importorskip("mujoco")


def _cheetah():
    gym = pytest.importorskip("gymnasium")
    p = os.path.join(os.path.dirname(gym.__file__), "envs", "mujoco", "assets", "half_cheetah.xml")
    if not os.path.isfile(p):
        pytest.skip("gymnasium has no half_cheetah.xml")
    return p


def test_joint_springs_follow_mujoco_rk4():
    """half_cheetah (joint stiffness 240 ... 60 N m/rad, damping, armature), no contact and no limit
    reached: pbsim's rk4 against MuJoCo's RK4 over 0.2 s at dt = 1 ms."""
    path = _cheetah()
    m = pbsim.load(path)
    assert m.stiffness.max() > 0
    mj = mujoco.MjModel.from_xml_path(path)
    mj.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    mj.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    mj.opt.timestep = 1e-3
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(0)
    d.qpos[:] = m.default_configuration() + np.r_[0, 0, 0, rng.uniform(-0.1, 0.1, mj.nq - 3)]
    d.qvel[:] = rng.uniform(-1, 1, mj.nv)
    tr = pbsim.rollout(m, "rk4", dt=1e-3, steps=200, q0=d.qpos.copy(), v0=d.qvel.copy(), scene=pbsim.Scene())
    for _ in range(200):
        mujoco.mj_step(mj, d)
    assert np.all(tr.q[-1] > m.lower - 1e-9) and np.all(tr.q[-1] < m.upper + 1e-9)
    assert np.abs(tr.q[-1] - d.qpos).max() < 1e-6, np.abs(tr.q[-1] - d.qpos).max()
    sprung = tr.q[-1, 3:] - m.springref[3:]
    assert np.abs(sprung).max() > 1e-3  # the springs moved the joints (not a trivial match)


XML = """<mujoco><option gravity="0 0 0"/><worldbody><body name="wheel">
<joint name="axle" type="hinge" axis="0 0 1" frictionloss="1.0"/>
<geom type="cylinder" size="0.2 0.05" mass="2"/></body></worldbody></mujoco>"""


@pytest.mark.parametrize("name", ["euler", "rk4", "variational", "pbad", "pbad3"])
def test_dry_friction_holds_below_and_slips_above(tmp_path, name):
    p = tmp_path / "wheel.xml"
    p.write_text(XML)
    m = pbsim.load(str(p))
    assert m.frictionloss[0] == 1.0
    inertia = 0.5 * 2 * 0.2**2
    for torque, moves in ((0.5, False), (2.0, True)):
        tr = pbsim.rollout(m, name, dt=5e-3, steps=40, control=pbsim.Control(tau=np.array([torque])))
        v = tr.v[-1, 0]
        if moves:  # (torque - friction) / I over 0.2 s; the linearised stick-slip start lags 1-2 steps (euler 3 % low)
            assert np.isclose(v, (torque - 1.0) / inertia * 0.2, rtol=0.05), v
        else:
            assert abs(v) < 0.02, v  # creeps at most ~ FRICTION_VEL
