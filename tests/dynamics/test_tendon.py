"""Tendons (issue 29): fixed and spatial tendons' length, velocity and moment arms against
MuJoCo's ``ten_length``/``ten_velocity``/``ten_J`` and finite differences; their passive forces
against MuJoCo's ``qfrc_passive``; trajectories against MuJoCo's; the same forces in the
position-based methods (test_tendon_pbad.py, test_tendon_rest.py).  Models are written here."""

import numpy as np
import pytest

import pbsim
from pbsim.dynamics.tendon import tendon_length, tendon_state

FIXED = """<mujoco><option gravity="0 0 -9.81" timestep="0.001"/>
<default><geom contype="0" conaffinity="0"/></default>
<worldbody>
 <body name="a" pos="0 0 1"><joint name="j1" axis="0 1 0" damping="0.1"/>
  <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1"/>
  <body name="b" pos="0.3 0 0"><joint name="j2" axis="0 1 0"/>
   <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1"/>
   <body name="c" pos="0.3 0 0"><joint name="j3" type="slide" axis="1 0 0"/>
    <geom type="box" size="0.03 0.03 0.03" mass="0.5"/></body>
  </body></body>
</worldbody>
<tendon>
 <fixed name="t1" stiffness="20" damping="0.5" springlength="0.1">
  <joint joint="j1" coef="1"/><joint joint="j2" coef="-0.5"/></fixed>
 <fixed name="t2" stiffness="50" springlength="-0.1 0.2"><joint joint="j2" coef="0.3"/><joint joint="j3" coef="2"/></fixed>
</tendon>
</mujoco>"""

LIMITED = FIXED.replace('springlength="-0.1 0.2"', 'springlength="-0.1 0.2" limited="true" range="-0.3 0.3"')


def _load(tmp_path, xml, name="m.xml"):
    import mujoco

    p = tmp_path / name
    p.write_text(xml)
    return pbsim.load(str(p)), mujoco.MjModel.from_xml_path(str(p))


def ten_J(mj, d):
    """MuJoCo's tendon moments as a dense (ntendon, nv) array (ten_J is sparse in MuJoCo 4)."""
    import mujoco

    J = np.zeros((mj.ntendon, mj.nv))
    if not hasattr(mj, "ten_J_rownnz"):
        return d.ten_J.reshape(mj.ntendon, mj.nv).copy()
    mujoco.mju_sparse2dense(J, d.ten_J, mj.ten_J_rownnz, mj.ten_J_rowadr, mj.ten_J_colind)
    return J


def tendon_torque(model, q, v, ctrl=None, dt=0.0, implicit=False):
    """The tendons' generalized force as the explicit steps compute it (tendon_forces)."""
    from pbsim.dynamics.tendon import tendon_forces
    from pbsim.dynamics.workspace import work_for

    c = pbsim.Control(ctrl=ctrl) if ctrl is not None else pbsim.Control()
    kc = c.kernel_arrays(model, 1)
    tau, arm = np.zeros(model.nv), np.zeros(model.nv)
    tendon_forces(
        model.k, kc, work_for(model, 1), 0, np.asarray(q, float), np.asarray(v, float), dt, implicit, False, tau, arm
    )
    return tau


def test_fixed_tendon_length_velocity_moment_equal_mujocos(tmp_path):
    import mujoco

    m, mj = _load(tmp_path, FIXED)
    assert m.ntendon == 2 and m.tendons.names == ["t1", "t2"] and not [n for n in m.notes if "tendon" in n]
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(0)
    for _ in range(10):
        q, v = rng.normal(size=m.nq), rng.normal(size=m.nv)
        d.qpos[:], d.qvel[:] = q, v
        mujoco.mj_forward(mj, d)
        L, Ld, J = tendon_state(m, q, v)
        np.testing.assert_allclose(L, d.ten_length, atol=1e-12)
        np.testing.assert_allclose(Ld, d.ten_velocity, atol=1e-12)
        np.testing.assert_allclose(J, ten_J(mj, d), atol=1e-12)


def test_fixed_tendon_passive_force_equals_mujocos_qfrc_passive(tmp_path):
    """Spring with and without a dead band (springlength pair) and damping: J^T F equals MuJoCo's
    qfrc_passive less the joint damping, at random states inside and outside the dead band."""
    import mujoco

    m, mj = _load(tmp_path, FIXED)
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(1)
    inside = 0
    for _ in range(20):
        q, v = rng.normal(size=m.nq) * 0.5, rng.normal(size=m.nv)
        d.qpos[:], d.qvel[:] = q, v
        mujoco.mj_forward(mj, d)
        inside += -0.1 <= d.ten_length[1] <= 0.2
        expect = d.qfrc_passive + mj.dof_damping * v  # less the joint damping -d v
        np.testing.assert_allclose(tendon_torque(m, q, v), expect, rtol=1e-12, atol=1e-10)
    assert 0 < inside < 20  # both sides of the dead band were seen


def _mujoco_rollout(mj, q0, v0, dt, steps, integrator, ctrl=None, act0=None):
    import mujoco

    mj.opt.timestep = dt
    mj.opt.integrator = integrator
    d = mujoco.MjData(mj)
    d.qpos[:], d.qvel[:] = q0, v0
    if ctrl is not None:
        d.ctrl[:] = ctrl
    if act0 is not None:
        d.act[:] = act0
    Q = [d.qpos.copy()]
    for _ in range(steps):
        mujoco.mj_step(mj, d)
        Q.append(d.qpos.copy())
    return np.array(Q)


@pytest.mark.parametrize("method", ["euler", "rk4"])
def test_fixed_tendon_trajectory_follows_mujoco(tmp_path, method):
    """1 s at 1 ms from a swung state: within 1e-3 rad (m) of MuJoCo's Euler / RK4."""
    import mujoco

    m, mj = _load(tmp_path, FIXED)
    q0, v0 = np.array([0.4, -0.8, 0.05]), np.array([1.0, 0.0, -0.3])
    I = mujoco.mjtIntegrator
    ref = _mujoco_rollout(mj, q0, v0, 1e-3, 1000, I.mjINT_EULER if method == "euler" else I.mjINT_RK4)
    tr = pbsim.rollout(m, method, dt=1e-3, steps=1000, q0=q0, v0=v0)
    err = np.abs(tr.q - ref).max()
    assert err < 1e-3, err  # measured 4e-15 (euler) and 3e-15 (rk4): the same explicit tendon forces
    m.tendons = None  # without the tendons the motion is another one
    m._k = None
    assert np.abs(pbsim.rollout(m, method, dt=1e-3, steps=1000, q0=q0, v0=v0).q - ref).max() > 0.1


DAMPED = (
    FIXED.replace('damping="0.1"', 'damping="2"')
    .replace('<joint name="j2" axis="0 1 0"/>', '<joint name="j2" axis="0 1 0" damping="2"/>')
    .replace('<joint name="j3" type="slide" axis="1 0 0"/>', '<joint name="j3" type="slide" axis="1 0 0" damping="5"/>')
)


def rests_where_mujoco_does(tmp_path, method, dt):
    """The tendons as potentials of the position-based step (pbad, pbfd, pbd_nmdp), in the
    collocation residual (pbad3) and explicit in variational: a damped arm hanging on its tendon
    springs comes to rest at MuJoCo's equilibrium (1 ms RK4); measured 3e-9 (pbad3, 50 ms), 1.5e-7
    (pbfd, pbd_nmdp, 20 ms), 1.3e-8 (variational, 10 ms).  The tests are in test_tendon_pbad.py
    (pbad, pbad3) and test_tendon_rest.py (pbfd, pbd_nmdp, variational): one file per group of
    step kernels, so that their first-run compilations can run on different test workers."""
    import mujoco

    m, mj = _load(tmp_path, DAMPED)
    q0 = np.array([0.4, -0.8, 0.05])
    ref = _mujoco_rollout(mj, q0, np.zeros(3), 1e-3, 6000, mujoco.mjtIntegrator.mjINT_RK4)[-1]
    tr = pbsim.rollout(m, method, dt=dt, steps=int(round(6.0 / dt)), q0=q0)
    assert np.abs(tr.q[-1] - ref).max() < 2e-3, (tr.q[-1], ref)
    m.tendons = None
    m._k = None
    assert np.abs(pbsim.rollout(m, method, dt=dt, steps=int(round(6.0 / dt)), q0=q0).q[-1] - ref).max() > 0.05


def range_holds(tmp_path, method, dt):
    """A limited tendon (range -0.3..0.3, pbsim's limit spring-damper on the tendon's effective
    mass) stops the slider's tendon near its bound: overshoot below 0.02 (MuJoCo's soft limit:
    about the same), while without the limit the tendon passes 0.35.  euler here, pbad in
    test_tendon_pbad.py."""
    import mujoco

    m, mj = _load(tmp_path, LIMITED)
    assert m.tendons.limit_kp[1] > 0 and m.tendons.limit_kp[0] == 0
    q0, v0 = np.array([0.0, 0.0, 0.0]), np.array([0.0, 0.0, 2.0])
    tr = pbsim.rollout(m, method, dt=dt, steps=int(round(0.5 / dt)), q0=q0, v0=v0)
    L = tendon_state(m, tr.q)[0][:, 1]
    ref = _mujoco_rollout(mj, q0, v0, 1e-3, 500, mujoco.mjtIntegrator.mjINT_RK4)
    Lmj = np.array([0.3 * q[1] + 2 * q[2] for q in ref])
    assert L.max() < 0.33 and Lmj.max() < 0.33, (L.max(), Lmj.max())  # measured 0.3035 (euler), MuJoCo 0.326
    assert abs(L[-1] - 0.3) < 0.01  # resting on the bound
    m2, _ = _load(tmp_path, FIXED, "free.xml")
    L2 = tendon_state(m2, pbsim.rollout(m2, method, dt=dt, steps=int(round(0.5 / dt)), q0=q0, v0=v0).q)[0][:, 1]
    assert L2.max() > 0.35  # measured 0.458 (euler), 0.371 (pbad, 20 ms)


@pytest.mark.parametrize("method,dt", [("euler", 0.002)])
def test_tendon_range_holds(tmp_path, method, dt):
    range_holds(tmp_path, method, dt)


# ---------------------------------------------------------------------- spatial tendons
SPATIAL = """<mujoco><option gravity="0 0 -9.81"/>
<default><geom contype="0" conaffinity="0"/></default>
<worldbody>
 <site name="anchor" pos="0 0 1.3"/>
 <site name="pulley_site" pos="0.2 0.1 1.2"/>
 <body name="a" pos="0 0 1"><joint name="j1" axis="0 1 0"/><joint name="j1b" axis="1 0 0"/>
  <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1"/>
  <geom name="ball" type="sphere" pos="0.3 0 0" size="0.05" mass="0.1"/>
  <geom name="cyl" type="cylinder" pos="0.15 0 0" zaxis="0 1 0" size="0.04 0.02" mass="0.1"/>
  <site name="sa" pos="0.1 0 0.05"/>
  <site name="side_ball" pos="0.3 0 0.2"/>
  <site name="side_cyl" pos="0.15 0 -0.2"/>
  <body name="b" pos="0.3 0 0"><joint name="j2" axis="0 1 0" damping="0.05"/>
   <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1"/>
   <site name="sb" pos="0.2 0.02 0.03"/>
   <body name="c" pos="0.3 0 0"><joint name="j3" type="slide" axis="1 0 0" damping="1"/>
    <geom type="box" size="0.03 0.03 0.03" mass="0.5"/><site name="sc" pos="0.02 -0.03 0.02"/></body>
  </body></body>
</worldbody>
<tendon>
 <spatial name="plain" stiffness="30" damping="1" springlength="0.9">
  <site site="anchor"/><site site="sa"/><site site="sb"/><site site="sc"/></spatial>
 <spatial name="over_ball" stiffness="20" springlength="0.3"><site site="sa"/><geom geom="ball"/><site site="sb"/></spatial>
 <spatial name="over_ball_side"><site site="sa"/><geom geom="ball" sidesite="side_ball"/><site site="sb"/></spatial>
 <spatial name="over_cyl" damping="0.5"><site site="anchor"/><geom geom="cyl"/><site site="sb"/></spatial>
 <spatial name="pulley"><site site="anchor"/><site site="sa"/><pulley divisor="2"/>
  <site site="pulley_site"/><site site="sc"/></spatial>
</tendon>
</mujoco>"""

WRAPPED = ("over_ball", "over_ball_side", "over_cyl")


def test_spatial_tendon_length_velocity_moment_equal_mujocos(tmp_path):
    """Sites, a pulley (divisor 2), a sphere with and without a side site, a cylinder: MuJoCo's
    ten_length, ten_velocity and ten_J at 200 random states, wrapped and unwrapped both seen."""
    import mujoco

    m, mj = _load(tmp_path, SPATIAL)
    assert m.tendons.names == ["plain", "over_ball", "over_ball_side", "over_cyl", "pulley"] and not m.notes
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(2)
    seen = {n: set() for n in WRAPPED}
    for _ in range(200):
        q, v = rng.uniform(-1.5, 1.5, m.nq), rng.normal(size=m.nv)
        d.qpos[:], d.qvel[:] = q, v
        mujoco.mj_forward(mj, d)
        L, Ld, J = tendon_state(m, q, v)
        np.testing.assert_allclose(L, d.ten_length, rtol=0, atol=1e-12)
        np.testing.assert_allclose(Ld, d.ten_velocity, rtol=0, atol=1e-11)
        np.testing.assert_allclose(J, ten_J(mj, d), rtol=0, atol=1e-11)
        for t, n in enumerate(m.tendons.names):
            if n in seen:
                seen[n].add(int(d.ten_wrapnum[t]))
    assert all(s == {2, 4} for s in seen.values()), seen  # straight (2 points) and wrapped (4)


def test_spatial_moment_arms_equal_finite_differences(tmp_path):
    """J = dL/dq by central differences (1e-6) at random states away from a wrap switching on."""
    m, _ = _load(tmp_path, SPATIAL)
    rng = np.random.default_rng(3)
    h, checked = 1e-6, 0
    for _ in range(40):
        q = rng.uniform(-1.5, 1.5, m.nq)
        L, _, J = tendon_state(m, q)
        Q = np.array([q + s * h * e for e in np.eye(m.nv) for s in (1, -1)])
        Ls = tendon_length(m, Q).reshape(m.nv, 2, -1)
        fd = ((Ls[:, 0] - Ls[:, 1]) / (2 * h)).T
        ok = np.abs(Ls[:, 0] + Ls[:, 1] - 2 * L).max(axis=0) < 1e-9  # smooth there (no wrap switch)
        np.testing.assert_allclose(J[ok], fd[ok], rtol=0, atol=1e-7)
        checked += int(ok.sum())
    assert checked > 150


def test_spatial_tendon_passive_force_equals_mujocos(tmp_path):
    """Stiffness (sites, sphere wrap) and damping (sites, cylinder wrap): J^T F equals MuJoCo's
    qfrc_passive less the joint damping."""
    import mujoco

    m, mj = _load(tmp_path, SPATIAL)
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(4)
    for _ in range(20):
        q, v = rng.uniform(-1.5, 1.5, m.nq), rng.normal(size=m.nv)
        d.qpos[:], d.qvel[:] = q, v
        mujoco.mj_forward(mj, d)
        np.testing.assert_allclose(tendon_torque(m, q, v), d.qfrc_passive + mj.dof_damping * v, rtol=0, atol=1e-10)


@pytest.mark.parametrize("method", ["euler", "rk4"])
def test_spatial_tendon_trajectory_follows_mujoco(tmp_path, method):
    import mujoco

    m, mj = _load(tmp_path, SPATIAL)
    q0, v0 = np.array([0.3, 0.2, -0.5, 0.05]), np.array([0.5, -0.5, 1.0, 0.0])
    I = mujoco.mjtIntegrator
    ref = _mujoco_rollout(mj, q0, v0, 1e-3, 1000, I.mjINT_EULER if method == "euler" else I.mjINT_RK4)
    tr = pbsim.rollout(m, method, dt=1e-3, steps=1000, q0=q0, v0=v0)
    err = np.abs(tr.q - ref).max()
    assert err < 1e-3, err


def test_spatial_tendons_refused_where_not_simulated(tmp_path):
    """The position-based methods apply fixed tendons only: a spatial tendon with a force is
    refused by name; a cylinder with a side site and a side site inside its geom are not imported
    (named in the notes)."""
    m, _ = _load(tmp_path, SPATIAL)
    with pytest.raises(pbsim.InputError, match="pbad does not apply the forces of spatial tendons.*'plain'"):
        pbsim.integrators.make("pbad", m)
    xml = SPATIAL.replace('<geom geom="cyl"/>', '<geom geom="cyl" sidesite="side_cyl"/>').replace(
        'sidesite="side_ball"', 'sidesite="sa"'
    )
    xml = xml.replace(
        '<site name="sa" pos="0.1 0 0.05"/>', '<site name="sa" pos="0.1 0 0.05"/><site name="in" pos="0.3 0 0.01"/>'
    )
    xml = xml.replace('sidesite="sa"', 'sidesite="in"')
    m2, _ = _load(tmp_path, xml, "refused.xml")
    assert m2.tendons.names == ["plain", "over_ball", "pulley"]
    (note,) = [n for n in m2.notes if "tendon" in n]
    assert "over_ball_side (its side site is inside" in note and "over_cyl (a cylinder with a side site" in note


def test_info_lists_tendons_and_actuators(tmp_path):
    """`pbsim info` (Model.summary, --json: Model.to_dict) names the tendons and their kinds."""
    import json

    m, _ = _load(
        tmp_path, SPATIAL.replace("</tendon>", '</tendon><actuator><motor name="m" tendon="plain"/></actuator>')
    )
    d = json.loads(m.to_json())
    assert [(t["name"], t["kind"]) for t in d["tendons"]][:2] == [("plain", "spatial"), ("over_ball", "spatial")]
    assert d["actuators"] == [{"name": "m", "tendon": "plain", "dyntype": "none"}]
    text = m.summary()
    assert "5 tendon(s): plain: spatial, 4 path element(s), stiffness 30 at 0.9, damping 1;" in text
    assert "1 actuator(s): m" in text
