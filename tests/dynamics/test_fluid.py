"""Fluid forces (MJCF ``<option density viscosity wind>``, MuJoCo's inertia-box model,
:mod:`pbsim.dynamics.fluid`) against MuJoCo: ``pbsim.fluid_force`` equals ``qfrc_fluid`` at random
states (free base, hinge, ball, slide, a body fused into its parent with its own box, a turned
principal frame, wind); gymnasium's swimmer follows MuJoCo's trajectory under Euler; a box sinks
at the terminal speed the law gives, at 1 and 20 ms; the methods
that do not apply the force refuse such a model by name.  Before, the medium was named in
``pbsim info`` and dropped: the swimmer could not swim."""

import numpy as np
import pytest

import pbsim
from conftest import gymnasium_xml, mjcf_pair
from pbsim.errors import InputError
from pbsim.io.export_mjcf import write_mjcf

mujoco = pytest.importorskip("mujoco")

TREE = """<mujoco><option density="1200" viscosity="0.02" wind="0.4 -0.3 0.1" gravity="0 0 -9.81"/>
<worldbody>
 <body name="base" pos="0 0 1"><freejoint/><geom type="box" size=".2 .1 .05" mass="2"/>
  <body name="a" pos=".2 0 0"><joint type="hinge" axis="0 1 0"/>
   <geom type="capsule" fromto="0 0 0 .3 .1 0" size=".03" mass="0.7"/>
   <body name="fused" pos=".3 0 0"><inertial pos=".02 .01 0" mass=".4" fullinertia=".003 .0025 .002 .0003 -.0002 .0001"/>
    <body name="b" pos="0 .1 0"><joint type="ball"/><geom type="box" size=".05 .02 .1" pos="0 0 -.1" mass=".3"/>
     <body name="c" pos="0 0 -.2"><joint type="slide" axis="1 0 0"/>
      <geom type="ellipsoid" size=".04 .02 .03" pos=".01 0 0" euler="0.3 0.2 0.1" mass=".2"/></body>
    </body>
   </body>
  </body>
 </body>
</worldbody></mujoco>"""


def _to_pbsim(d, vec):
    """A free base's linear part: MuJoCo's in world axes, pbsim's in the body frame."""
    out = np.array(vec, float)
    out[:3] = d.xmat[1].reshape(3, 3).T @ out[:3]
    return out


def test_qfrc_fluid_equals_mujocos_at_random_states(tmp_path):
    m, mj = mjcf_pair(tmp_path, "tree.xml", TREE)
    assert not any("fluid" in n for n in m.notes), m.notes
    assert m.fluid.nf == 5 and len(set(m.fluid.body.tolist())) == 4  # 'fused' keeps its own box in 'a'
    assert "fluid forces (MuJoCo's inertia-box model" in m.summary()
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(0)
    Q, V, ref = [], [], []
    for _ in range(8):
        q = rng.normal(size=mj.nq)
        q[3:7] /= np.linalg.norm(q[3:7])
        q[8:12] /= np.linalg.norm(q[8:12])
        d.qpos[:] = q
        d.qvel[:] = 2.0 * rng.normal(size=mj.nv)
        mujoco.mj_forward(mj, d)
        Q.append(q)
        V.append(_to_pbsim(d, d.qvel))
        ref.append(_to_pbsim(d, d.qfrc_fluid))
    F = pbsim.fluid_force(m, np.array(Q), np.array(V))
    for f, r in zip(F, ref):
        assert np.abs(f - r).max() < 1e-11 * max(1.0, np.abs(r).max()), (f, r)
    assert np.abs(F).max() > 1.0  # not vacuous
    assert np.array_equal(pbsim.fluid_force(m, Q[0], V[0]), F[0])  # single state


def test_ellipsoid_fluid_shape_is_named_and_left_out(tmp_path):
    xml = TREE.replace('mass=".2"/></body>', 'mass=".2" fluidshape="ellipsoid"/></body>')
    m, _ = mjcf_pair(tmp_path, "ell.xml", xml)
    assert any("ellipsoid model" in n and "'c'" in n for n in m.notes), m.notes
    assert m.fluid.nf == 4


def test_gymnasium_swimmer_follows_mujoco():
    """1 s at 1 ms from rest under constant motor commands, Euler in both (every method, RK4
    among them: ``python scripts/checks/fluid_methods.py``)."""
    integ, mj_integ = "euler", "Euler"
    path = gymnasium_xml("swimmer.xml")
    m = pbsim.load(path)
    assert m.fluid is not None and m.fluid.nf == 3
    mj = mujoco.MjModel.from_xml_path(path)
    mj.opt.timestep = 1e-3
    mj.opt.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{mj_integ.upper()}")
    d = mujoco.MjData(mj)
    ctrl = np.array([0.1, -0.1])
    d.ctrl[:] = ctrl
    for _ in range(1000):
        mujoco.mj_step(mj, d)
    tr = pbsim.rollout(m, integ, dt=1e-3, steps=1000, control=pbsim.Control(ctrl=ctrl), record_every=1000)
    q = tr.q[-1]
    assert np.abs(q - d.qpos).max() < 1e-6, (q, d.qpos)
    assert np.abs(d.qpos[:2]).max() > 1e-3  # the medium pushes the body: it swims
    dry = pbsim.load(path)
    dry.fluid = None  # the medium dropped (as before): another trajectory
    q_dry = pbsim.rollout(dry, integ, dt=1e-3, steps=1000, control=pbsim.Control(ctrl=ctrl), record_every=1000).q[-1]
    assert np.abs(q_dry - d.qpos).max() > 1e-2


def _sinker(tmp_path, rho=1000.0):
    xml = f"""<mujoco><option density="{rho}"/><worldbody>
    <body name="box" pos="0 0 0"><freejoint/><geom type="box" size=".05 .1 .2" mass="3"/></body>
    </worldbody></mujoco>"""
    return mjcf_pair(tmp_path, "sinker.xml", xml)[0]


@pytest.mark.parametrize("dt", [1e-3, 0.02])
def test_box_sinks_at_the_terminal_speed(tmp_path, dt):
    """Face down along z, quadratic drag ``rho/2 b_x b_y v^2`` balances the weight at
    ``v_t = sqrt(2 m g / (rho b_x b_y))`` (the box's own sides: 0.1 x 0.2 m), euler at 1 and 20 ms
    (every supported method: ``python scripts/checks/fluid_methods.py``)."""
    m = _sinker(tmp_path)
    vt = np.sqrt(2 * 3 * 9.81 / (1000.0 * 0.1 * 0.2))
    tr = pbsim.rollout(m, "euler", dt=dt, steps=int(round(3.0 / dt)), scene=pbsim.Scene(), record_every=1)
    vz = tr.v[-1, 2]  # the free joint's linear velocity, body frame = world (no rotation)
    assert abs(-vz - vt) < 0.01 * vt, (vz, vt)
    assert np.abs(tr.v[-1, 3:]).max() < 1e-9  # no spin


def test_methods_without_it_refuse_and_name_it():
    m = pbsim.load(gymnasium_xml("swimmer.xml"))
    with pytest.raises(InputError, match=r"pbad does not apply fluid forces .*density 4000.* use one of .*euler"):
        pbsim.integrators.make("pbad", m)
    pbsim.integrators.make("rk4", m)  # these do
    pbsim.integrators.make("ne_dry", m, pbsim.Scene())


def test_export_and_combine_keep_the_medium(tmp_path):
    m, _ = mjcf_pair(tmp_path, "tree.xml", TREE)
    out = tmp_path / "out.xml"
    report = write_mjcf(m, str(out))
    back = pbsim.load(str(out))
    assert (back.fluid.density, back.fluid.viscosity) == (1200.0, 0.02)
    assert np.allclose(back.fluid.wind, [0.4, -0.3, 0.1])
    assert any("fused into ['a']" in r for r in report), report
    two = pbsim.combine(m, (pbsim.free_object("box", (0.05, 0.05, 0.05), 0.5), (0.0, 0.0, 2.0)))
    assert two.fluid.nf == m.fluid.nf  # the object's file had no medium
    other = _sinker(tmp_path)
    with pytest.raises(InputError, match="different fluid media"):
        pbsim.combine(m, other)
    both = pbsim.combine(other, _sinker(tmp_path))
    assert both.fluid.body.tolist() == [0, 1]
