"""MuJoCo's joint-limit constraint in the explicit methods (pbsim.dynamics.limits) against MuJoCo.

The chain below has every kind of limit row MuJoCo makes for hinge and slide joints: the default
solref/solimp, a stiffer time constant with an impedance that varies over its width (power 3)
and a margin, MuJoCo's direct form (``solreflimit="-k -b"``), a flat impedance, a joint with
armature, a slide on a tilted axis, several limits active at once (their rows coupled through
``J A^-1 J^T``).  Nothing on it has damping, so pbsim's step operator is MuJoCo's M and the two
agree to round-off.
"""

from __future__ import annotations

import numpy as np
import pytest

import pbsim
from pbsim.integrators import State, make

mujoco = pytest.importorskip("mujoco")

CHAIN = """<mujoco><compiler angle="radian"/><option timestep="{dt}" integrator="{integ}"/>
<default><geom contype="0" conaffinity="0"/></default>
<worldbody><body name="a" pos="0 0 1"><joint name="j1" type="hinge" axis="0 1 0" range="-0.4 0.2"/>
<geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.03" mass="1.5"/>
<body name="b" pos="0.4 0 0"><joint name="j2" type="hinge" axis="0 1 0" range="-0.3 0.5" solreflimit="0.01 0.7"
 solimplimit="0.8 0.99 0.02 0.3 3" margin="0.05"/>
<geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.025" mass="1"/>
<body name="c" pos="0.3 0 0"><joint name="j3" type="hinge" axis="0 0 1" range="-0.2 0.2" solreflimit="-8000 -40"/>
<joint name="j4" type="hinge" axis="1 0 0" range="-0.1 0.6" armature="0.01"/>
<geom type="capsule" fromto="0 0 0 0.25 0.05 0" size="0.02" mass="0.7"/>
<body name="d" pos="0.25 0 0"><joint name="s" type="slide" axis="1 0 0.3" range="-0.05 0.05"
 solimplimit="0.95 0.95 0.001"/>
<geom type="box" size="0.05 0.03 0.02" mass="0.4"/></body></body></body></body></worldbody></mujoco>"""


def _chain(tmp_path, integ="Euler", dt=1e-3, xml=CHAIN):
    p = tmp_path / f"chain_{integ}.xml"
    p.write_text(xml.format(dt=dt, integ=integ))
    mm = mujoco.MjModel.from_xml_path(str(p))
    return mm, pbsim.load(str(p))


def _mujoco_trajectory(mm, steps, q0=None, v0=None):
    d = mujoco.MjData(mm)
    if q0 is not None:
        d.qpos[:] = q0
    if v0 is not None:
        d.qvel[:] = v0
    out = []
    for _ in range(steps):
        mujoco.mj_step(mm, d)
        out.append(d.qpos.copy())
    return np.array(out)


def test_the_file_s_limit_parameters_are_read_as_mujoco_uses_them(tmp_path):
    mm, m = _chain(tmp_path)
    lim = m.soft_limits
    assert lim is not None and lim.n == 5 and lim.refsafe and lim.dof.tolist() == [0, 1, 2, 3, 4]
    np.testing.assert_array_equal(lim.invweight, mm.dof_invweight0)
    np.testing.assert_array_equal(lim.lower, mm.jnt_range[:, 0])
    np.testing.assert_array_equal(lim.margin, [0, 0.05, 0, 0, 0])
    np.testing.assert_array_equal(lim.solref[2], [-8000, -40])
    np.testing.assert_array_equal(lim.solimp[1], [0.8, 0.99, 0.02, 0.3, 3])
    assert m.k.lim_soft.tolist() == [1.0] * 5


@pytest.mark.parametrize("integ, method, tol", [("Euler", "euler", 1e-12), ("RK4", "rk4", 1e-9)])
def test_chain_follows_mujoco_through_its_limits(tmp_path, integ, method, tol):
    """1 s from qpos0 under gravity: every joint reaches a limit (j1 and j3 past theirs, j2 inside
    its margin, the slide at both ends).  Measured: euler 1.4e-15, rk4 4.9e-11 (MuJoCo's RK4)."""
    mm, m = _chain(tmp_path, integ)
    ref = _mujoco_trajectory(mm, 1000)
    r = pbsim.rollout(m, method, dt=1e-3, steps=1000, scene=pbsim.Scene())
    lo, hi = mm.jnt_range[:, 0], mm.jnt_range[:, 1]
    assert (ref.max(0) > hi - mm.jnt_margin).sum() + (ref.min(0) < lo + mm.jnt_margin).sum() >= 5
    err = np.abs(r.q[1:] - ref).max()
    assert err < tol, err


def test_accelerations_equal_mujoco_at_random_states(tmp_path):
    """One Euler step from 40 random states, half the joints outside their ranges, random
    velocities (limits pushing and limits a joint is leaving): pbsim's v+ is MuJoCo's to 1e-12
    (relative to the velocity's scale); also for the dense SPD solvers, which need ABA's factor made."""
    mm, m = _chain(tmp_path)
    rng = np.random.default_rng(0)
    lo, hi = mm.jnt_range[:, 0], mm.jnt_range[:, 1]
    ints = {s: make("euler", m) for s in ("maba", "df")}
    ctl = {s: pbsim.Control(mode="spd", kp=0.0, kd=0.0, q_ref=np.zeros(m.nv), spd_solver=s) for s in ints}
    worst, limited = 0.0, 0
    for _ in range(40):
        q = rng.uniform(lo - 0.15, hi + 0.15)
        v = rng.normal(0, 2, m.nv)
        d = mujoco.MjData(mm)
        d.qpos[:], d.qvel[:] = q, v
        mujoco.mj_step(mm, d)
        limited += d.nefc > 0
        for s, integ in ints.items():
            st, _ = integ.step(State.make(m, q, v), ctl[s] if s != "maba" else None, 1e-3)
            worst = max(worst, np.abs(st.v - d.qvel).max() / (1 + np.abs(d.qvel).max()))
    assert limited >= 30 and worst < 1e-12, (limited, worst)


def test_sag_and_launch_are_mujoco_s(tmp_path):
    """MuJoCo's law has two stiffnesses (docs/robots.md): the static sag of a loaded limit and the
    speed a joint leaves a limit it starts past (the constraint only pushes).  Both as MuJoCo."""
    rod = """<mujoco><compiler angle="radian"/><option timestep="{dt}" integrator="{integ}"/>
    <worldbody><body pos="0 0 1"><joint type="hinge" axis="0 1 0" range="-0.3 0.3"/>
    <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.02" mass="1" contype="0" conaffinity="0"/>
    </body></worldbody></mujoco>"""
    mm, m = _chain(tmp_path, xml=rod)
    ref = _mujoco_trajectory(mm, 1000)
    q = pbsim.rollout(m, "euler", dt=1e-3, steps=1000, scene=pbsim.Scene()).q
    assert 5e-4 < ref[-1, 0] - 0.3 < 1e-3  # the sag
    assert abs(q[-1, 0] - ref[-1, 0]) < 1e-12
    mm.opt.gravity[:] = 0
    m0 = pbsim.load(str(tmp_path / "chain_Euler.xml"))
    m0.gravity[:] = 0
    m0._k = None
    ref = _mujoco_trajectory(mm, 100, q0=[0.6])
    q = pbsim.rollout(m0, "euler", dt=1e-3, steps=100, q0=np.array([0.6]), scene=pbsim.Scene()).q
    launch = np.diff(ref[:, 0]).min() / 1e-3
    assert launch < -4.0, launch  # released 0.3 rad past the limit, it leaves it (MuJoCo: -5.5 rad/s)
    assert np.abs(q[1:, 0] - ref[:, 0]).max() < 1e-12


def test_the_other_methods_keep_the_spring_damper(tmp_path):
    """The position-based and velocity-level methods hold an MJCF range by pbsim's limit spring
    (their own implicit forms), which stays stiffer than MuJoCo's law: the chain's j1 sags less."""
    mm, m = _chain(tmp_path)
    e = pbsim.rollout(m, "euler", dt=1e-3, steps=600, scene=pbsim.Scene()).q[-1, 0]
    p = pbsim.rollout(m, "pbad", dt=1e-3, steps=600, scene=pbsim.Scene()).q[-1, 0]
    assert 0.2 < p < e, (p, e)


def test_equality_constraints_hold_under_the_limits(tmp_path):
    """A joint coupling j2 = j1 (held exactly) with j1's limit acting: the limit's responses are the
    constrained ones, so the coupling stays exact while the limit stops both joints."""
    xml = CHAIN.replace(
        "</worldbody></mujoco>", '</worldbody><equality><joint joint1="j2" joint2="j1"/></equality></mujoco>'
    )
    mm, m = _chain(tmp_path, xml=xml)
    r = pbsim.rollout(m, "euler", dt=1e-3, steps=800, scene=pbsim.Scene())
    j1, j2 = r.q[:, 0], r.q[:, 1]
    assert np.abs(j2 - j1).max() < 1e-9
    assert j1.max() > 0.19 and j1[-1] < 0.205  # held at j1's upper limit 0.2 (its sag ~1e-3)


TENDONS = """<mujoco><compiler angle="radian"/><option timestep="{dt}" integrator="{integ}"/>
<default><geom contype="0" conaffinity="0"/></default>
<worldbody><site name="anchor" pos="0 0 1.3"/>
<body name="a" pos="0 0 1"><joint name="j1" type="hinge" axis="0 1 0"/>
<geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.03" mass="1.5"/>
<body name="b" pos="0.4 0 0"><joint name="j2" type="hinge" axis="0 1 0"/>
<geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.025" mass="1"/><site name="tip" pos="0.3 0 0"/>
<body name="c" pos="0.3 0 0"><joint name="j3" type="hinge" axis="0 0 1"/>
<geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02" mass="0.5"/></body></body></body>
<body name="p" pos="0.5 0.5 1"><joint name="ball" type="ball" range="0 0.5" solreflimit="0.01 1"/>
<geom type="capsule" fromto="0 0 0 0.3 0 -0.1" size="0.03" mass="1"/></body></worldbody>
<tendon><fixed name="couple" range="-0.3 0.3" margin="0.02"><joint joint="j1" coef="1"/><joint joint="j3" coef="-0.5"/></fixed>
<spatial name="rope" range="0.2 0.62" solreflimit="-3000 -30"><site site="anchor"/><site site="tip"/></spatial></tendon>
</mujoco>"""


@pytest.mark.parametrize("integ, method, tol", [("Euler", "euler", 1e-10), ("RK4", "rk4", 1e-9)])
def test_tendon_ranges_and_a_ball_cone_follow_mujoco(tmp_path, integ, method, tol):
    """MuJoCo's limit rows on a fixed tendon (with a margin), a spatial tendon (a rope from a world
    site to the arm's tip, MuJoCo's direct solref) and a ball joint's cone, 1 s from a throw: every
    limit engages and the trajectory is MuJoCo's (Euler, RK4) to round-off."""
    mm, m = _chain(tmp_path, integ, xml=TENDONS)
    assert m.soft_limits.n == 3 and any("cone limits are held by the explicit methods only" in n for n in m.notes)
    v0 = np.zeros(mm.nv)
    v0[:3] = [3.0, -4.0, 6.0]
    v0[3:] = [2.0, 3.0, 0.0]
    ref = _mujoco_trajectory(mm, 1000, v0=v0)
    d = mujoco.MjData(mm)
    d.qvel[:] = v0
    kinds = set()
    for _ in range(1000):
        mujoco.mj_step(mm, d)
        kinds |= {(int(t), int(i)) for t, i in zip(d.efc_type, d.efc_id)}
    C = mujoco.mjtConstraint
    assert {
        (int(C.mjCNSTR_LIMIT_JOINT), 3),
        (int(C.mjCNSTR_LIMIT_TENDON), 0),
        (int(C.mjCNSTR_LIMIT_TENDON), 1),
    } <= kinds
    r = pbsim.rollout(m, method, dt=1e-3, steps=1000, v0=v0, scene=pbsim.Scene())
    err = np.abs(r.q[1:] - ref).max()
    assert err < tol, err


ARMATURE = """<mujoco><compiler angle="radian"/><option timestep="{dt}" integrator="{integ}"/>
<default><geom contype="0" conaffinity="0"/></default>
<worldbody><site name="anchor" pos="0.2 0 1.4"/>
<body name="a" pos="0 0 1"><joint name="j1" type="hinge" axis="0 1 0"/>
<geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.03" mass="1.5"/><site name="mid" pos="0.2 0 0.05"/>
<body name="b" pos="0.4 0 0"><joint name="j2" type="hinge" axis="0 1 0"/>
<geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.025" mass="1"/><site name="tip" pos="0.3 0 0"/>
<body name="c" pos="0.3 0 0"><joint name="j3" type="hinge" axis="1 0 0"/>
<geom type="capsule" fromto="0 0 0 0.2 0.05 0" size="0.02" mass="0.5"/></body></body></body></worldbody>
<tendon><fixed name="coupled" armature="0.05"><joint joint="j1" coef="1"/><joint joint="j3" coef="-0.7"/></fixed>
<spatial name="rope" armature="0.3" stiffness="20" springlength="0.5"><site site="anchor"/><site site="mid"/>
<site site="tip"/></spatial></tendon>
</mujoco>"""


@pytest.mark.parametrize("integ, method, tol", [("Euler", "euler", 1e-10), ("RK4", "rk4", 1e-9)])
def test_tendon_armature_follows_mujoco(tmp_path, integ, method, tol):
    """MuJoCo's tendon armature (``M += a J^T J``, bias ``a J^T (dJ/dt) v``) on a fixed tendon and a
    spatial one through three sites, as bilateral rows of the limit solve: 1 s thrown under
    gravity follows MuJoCo's Euler and RK4 (without the armature MuJoCo ends far away)."""
    mm, m = _chain(tmp_path, integ, xml=ARMATURE)
    assert m.tendons.armature.tolist() == [0.05, 0.3] and any("tendon armature is held" in n for n in m.notes)
    v0 = np.array([2.0, -3.0, 5.0])
    ref = _mujoco_trajectory(mm, 1000, v0=v0)
    r = pbsim.rollout(m, method, dt=1e-3, steps=1000, v0=v0, scene=pbsim.Scene())
    err = np.abs(r.q[1:] - ref).max()
    mm.tendon_armature[:] = 0
    assert np.abs(_mujoco_trajectory(mm, 1000, v0=v0) - ref).max() > 0.1  # the armature matters
    assert err < tol, err


def test_limits_disabled_by_the_file_are_not_held(tmp_path):
    """``<flag limit="disable"/>``: MuJoCo holds no range, joint or tendon; neither does pbsim (no
    soft limits, no spring-damper), and the thrown arm follows MuJoCo's Euler through its ranges."""
    xml = TENDONS.replace('integrator="{integ}"/>', 'integrator="{integ}"><flag limit="disable"/></option>')
    mm, m = _chain(tmp_path, xml=xml)
    assert m.soft_limits is None and not np.isfinite(m.tendons.range).any()
    assert any("ranges are disabled" in n for n in m.notes)
    v0 = np.array([3.0, -4.0, 6.0, 2.0, 3.0, 0.0])
    ref = _mujoco_trajectory(mm, 1000, v0=v0)
    r = pbsim.rollout(m, "euler", dt=1e-3, steps=1000, v0=v0, scene=pbsim.Scene())
    assert np.abs(r.q[1:] - ref).max() < 1e-10


def test_bad_soft_limits_are_named(tmp_path):
    """A limit whose parameters are not finite, or that names a DOF of the wrong joint kind, is an
    InputError naming the model when the kernels' arrays are made, not NaN physics."""
    _, m = _chain(tmp_path)
    m.soft_limits.margin[1] = np.nan
    m._k = None
    with pytest.raises(pbsim.errors.InputError, match="not finite"):
        _ = m.k
    m.soft_limits.margin[1] = 0.05
    m.soft_limits.kind[0] = 1  # a cone on a hinge
    m._k = None
    with pytest.raises(pbsim.errors.InputError, match="not the first DOF of such a joint"):
        _ = m.k
