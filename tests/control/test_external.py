"""External body forces (pbsim.control.body_wrench_torque): J^T [m; f] through Control(tau=...)."""

from __future__ import annotations

import numpy as np
import pytest

import pbsim
from pbsim.control import body_wrench_torque

PENDULUM = """<robot name="pend">
 <link name="base"/>
 <link name="arm"><inertial><origin xyz="0 0 -0.5"/><mass value="1"/>
  <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
 <joint name="hinge" type="continuous"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/></joint>
</robot>"""

BOX = """<robot name="box">
 <link name="box"><inertial><origin xyz="0 0 0"/><mass value="2"/>
  <inertia ixx="0.02" iyy="0.03" izz="0.04" ixy="0" ixz="0" iyz="0"/></inertial></link>
</robot>"""


def _load(tmp_path, text, floating):
    p = tmp_path / "m.urdf"
    p.write_text(text)
    return pbsim.load(str(p), floating_base=floating)


@pytest.mark.parametrize("theta", [0.0, 0.4, -1.2, 2.5])
def test_pendulum_tip_force_is_the_analytic_torque(tmp_path, theta):
    """A force F = (Fx, 0, Fz) at the tip (0, 0, -L) of a pendulum hinged about y at angle theta:
    the tip sits at L (-sin theta, 0, -cos theta), so tau = (r x F)_y = r_z Fx - r_x Fz
    = -L cos(theta) Fx + L sin(theta) Fz; a torque T about y adds T."""
    m = _load(tmp_path, PENDULUM, False)
    L, Fx, Fz, T = 1.0, 3.0, -2.0, 0.7
    tau = body_wrench_torque(m, np.array([theta]), "arm", force=[Fx, 0, Fz], point=[0, 0, -L], torque=[0, T, 0])
    want = -L * np.cos(theta) * Fx + L * np.sin(theta) * Fz + T
    assert tau.shape == (1,) and tau[0] == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("name", ["euler", "rk4", "pbad"])
def test_integrators_accelerate_a_free_box_by_f_over_m(tmp_path, name):
    """A force through the box's centre (gravity off): the box accelerates at F / m, no spin."""
    m = _load(tmp_path, BOX, True)
    m.gravity[:] = 0.0
    s = pbsim.State.make(m)
    F = np.array([4.0, -2.0, 6.0])
    integ = pbsim.integrators.make(name, m)
    dt = 1e-2
    for _ in range(10):
        tau = body_wrench_torque(m, s.q[0], 0, force=F)  # world force, re-expressed at each q
        s, _ = integ.step(s, pbsim.Control(tau=tau), dt)
    # the free joint's linear velocity (world or body axes: no rotation happens)
    v = s.v[0]
    R = pbsim.forward_kinematics(m, s.q[0])[0, :3, :3]
    cand = [v[:3], v[3:], R @ v[:3], R @ v[3:]]
    assert any(np.allclose(c, F / 2.0 * 0.1, rtol=1e-6, atol=1e-9) for c in cand), v
    assert np.allclose(R, np.eye(3), atol=1e-9)


def test_refuses_bad_input(tmp_path):
    m = _load(tmp_path, PENDULUM, False)
    with pytest.raises(pbsim.InputError):
        body_wrench_torque(m, np.zeros(1), "arm", force=[1, 2])
    with pytest.raises(pbsim.InputError):
        body_wrench_torque(m, np.zeros(1), "arm", force=[np.nan, 0, 0])
