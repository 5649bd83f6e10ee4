"""Equality constraints (MJCF ``<equality>``: connect, weld, joint, tendon) against MuJoCo.

MuJoCo's equality constraints are soft (solref/solimp); pbsim's explicit steps hold them exactly
(pbsim.dynamics.equality).  The oracle is MuJoCo made stiff: ``solref = 2 dt`` (its smallest safe
time constant), ``solimp = 0.9999``, RK4 at dt = 0.1 ms (its violation stays below 1e-8 on
these models; the trajectory it gives is converged to ~1e-5 rad).  What holds:

- the residual and Jacobian equal MuJoCo's ``efc_pos``/``efc_J`` to round-off (weld rotation rows
  up to MuJoCo's quaternion sign), the bias ``J' v`` equals central differences of ``J v``;
- rk4 at 1 ms: within 1e-4 rad of the oracle after 1 s (measured <= 1.1e-5), violation < 1e-10;
- euler at 1 ms: semi-implicit Euler's own first-order error dominates (0.002-0.03 rad after 1 s
  on these models, as large as MuJoCo's own Euler's at 1 ms): within 1.6x MuJoCo-Euler's
  distance from the oracle + 1e-3 rad and halving with dt; violation < 1e-6 m (rad), also over
  1e5 steps;
- ``active="false"``: no rows, the same trajectory as without the constraint.

pbad's and pbd_nmdp's penalty and the explicit steps' CUDA twins (``Integrator.step``'s kernels) are
in test_equality_steps.py.
"""

import numpy as np
import pytest

import pbsim
from pbsim.dynamics.equality import equality_residual
from pbsim.errors import InputError
from pbsim.integrators import make

mujoco = pytest.importorskip("mujoco")

OPT = (
    '<option timestep="{dt}" integrator="{integ}" jacobian="dense"><flag contact="disable"/></option>'
    '<default><equality solref="{tc} 1" solimp="0.9999 0.9999 0.001 0.5 2"/></default>'
)
MODELS = {
    # a four-bar linkage: crank and rocker on the ground, the coupler closed onto the rocker
    "fourbar": """<mujoco>{opt}<worldbody>
 <body name="crank"><joint name="j1" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/>
  <body name="coupler" pos="0.2 0 0"><joint name="j2" axis="0 1 0"/>
   <geom type="capsule" fromto="0 0 0 0.3 0 0.2" size="0.02"/></body></body>
 <body name="rocker" pos="0.4 0 0"><joint name="j3" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0.1 0 0.2" size="0.02"/></body>
</worldbody><equality><connect name="loop" body1="coupler" body2="rocker" anchor="0.3 0 0.2" {active}/></equality></mujoco>""",
    # a free box welded to a two-joint arm (6 rows on a free joint)
    "weld": """<mujoco>{opt}<worldbody>
 <body name="arm"><joint name="shoulder" axis="0 1 0"/><joint name="twist" axis="1 0 0"/>
  <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/></body>
 <body name="box" pos="0.35 0.02 -0.05" quat="0.9 0.1 0.2 0.3"><freejoint/><geom type="box" size="0.05 0.04 0.03"/></body>
</worldbody><equality><weld name="hold" body1="arm" body2="box" anchor="0.01 0.02 0" {active}/></equality></mujoco>""",
    # joint b = P(joint a), a cubic about a's reference 0.2
    "poly": """<mujoco>{opt}<worldbody>
 <body name="p1"><joint name="a" axis="0 1 0" ref="0.2"/><geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02"/></body>
 <body name="p2" pos="0.5 0 0"><joint name="b" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0.2 0 -0.1" size="0.03"/></body>
</worldbody><equality><joint name="couple" joint1="b" joint2="a" polycoef="0 -0.8 0.5 0.3 0" {active}/></equality></mujoco>""",
    # fixed tendon t1 = a + a2/2 held at P(t2), t2 = -b
    "tendon": """<mujoco>{opt}<worldbody>
 <body name="p1"><joint name="a" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02"/>
  <body name="p1b" pos="0.3 0 0"><joint name="a2" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/></body></body>
 <body name="p2" pos="0.8 0 0"><joint name="b" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0.2 0 -0.1" size="0.03"/></body>
</worldbody><tendon><fixed name="t1"><joint joint="a" coef="1"/><joint joint="a2" coef="0.5"/></fixed>
 <fixed name="t2"><joint joint="b" coef="-1"/></fixed></tendon>
<equality><tendon name="tt" tendon1="t1" tendon2="t2" polycoef="0 0.7 0.4 0 0" {active}/></equality></mujoco>""",
}

# every kind of row at once: connect (bodies, one merged into its parent), welds (bodies with
# relpose, sites, to the world), connect to the world, joint polynomial and a fixed joint,
# tendon polynomial; hinge, slide, ball and free joints
ALL_ROWS = """<mujoco><option jacobian="dense"><flag contact="disable"/></option><worldbody>
<body name="a" pos="0 0 1"><joint name="j1" axis="0 1 0" pos="0.1 0 0"/><joint name="j1b" type="slide" axis="1 0 0"/>
 <geom type="capsule" size="0.05" fromto="0 0 0 0.5 0 0"/>
 <body name="b" pos="0.5 0 0"><joint name="j2" axis="0 1 1"/><geom type="capsule" size="0.05" fromto="0 0 0 0 0 -0.5"/>
  <body name="bfix" pos="0 0 -0.5" quat="0.7071 0.7071 0 0"><geom type="sphere" size="0.05"/>
   <site name="s1" pos="0.1 0 0" quat="0.9 0.1 0.3 0"/></body></body></body>
<body name="c" pos="1 0 1"><joint name="j3" axis="0 1 0"/><joint name="j4" type="ball"/>
 <geom type="capsule" size="0.05" fromto="0 0 0 0 0 -0.5"/></body>
<body name="f" pos="0.3 0.3 0.3"><freejoint name="free"/><geom type="box" size="0.1 0.1 0.1"/>
 <site name="s2" pos="0 0.1 0" quat="0.7 0 0.7 0"/></body></worldbody>
<tendon><fixed name="t1"><joint joint="j1" coef="1"/><joint joint="j2" coef="-0.5"/></fixed>
 <fixed name="t2"><joint joint="j3" coef="2"/></fixed></tendon>
<equality><connect name="cc" body1="bfix" body2="c" anchor="0 0.1 0"/>
 <weld name="w1" body1="a" body2="f" relpose="0.1 0.2 0.3 0.8 0.2 0.3 0.1" anchor="0.05 0 0.02"/>
 <weld name="w2" site1="s1" site2="s2"/>
 <weld name="w3" body1="c" anchor="0.1 0 0"/>
 <connect name="c2" body1="f" anchor="0.1 0 0.3"/>
 <joint name="jj" joint1="j1" joint2="j3" polycoef="0.1 1 0.5 0.2 0.1"/>
 <joint name="jk" joint1="j2"/>
 <tendon name="tt" tendon1="t1" tendon2="t2" polycoef="0.05 0.7 0.3 0.1 0.02"/>
</equality></mujoco>"""
WELD_ROT = (6, 12, 18)  # first rotation row of w1, w2, w3


def _load(tmp_path, name, xml):
    p = tmp_path / f"{name}.xml"
    p.write_text(xml)
    return pbsim.load(str(p))


def _xml(name, dt, integ, active=""):
    return MODELS[name].format(opt=OPT.format(dt=dt, integ=integ, tc=2 * dt), active=active)


def _mujoco_final(xml, T):
    mj = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(mj)
    for _ in range(int(round(T / mj.opt.timestep))):
        mujoco.mj_step(mj, d)
    return d.qpos.copy()


def _quat_rot(q):
    w, x, y, z = q / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def test_rows_equal_mujoco(tmp_path):
    """phi and J equal MuJoCo's efc_pos / efc_J at random states (every row type, sites, world,
    merged bodies, ball and free joints); the bias equals central differences of J v."""
    p = tmp_path / "all.xml"
    p.write_text(ALL_ROWS)
    m = pbsim.load(str(p))
    assert [e.name for e in m.equality] == ["cc", "w1", "w2", "w3", "c2", "jj", "jk", "tt"]
    assert m.neq_rows == 3 + 6 + 6 + 6 + 3 + 1 + 1 + 1
    mj = mujoco.MjModel.from_xml_path(str(p))
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(3)
    fq, fv = m.idx_q("free"), m.idx_v("free")
    for trial in range(3):
        q = m.default_configuration()
        for n in ("j1", "j1b", "j2", "j3"):
            q[m.idx_q(n)] += rng.uniform(-0.6, 0.6)
        if trial:  # random orientations of the ball and the free body
            for s in (m.idx_q("j4"), slice(fq.start + 3, fq.stop)):
                u = rng.normal(size=4)
                q[s] = u / np.linalg.norm(u)
        v = rng.normal(size=m.nv)
        phi, J, bias = equality_residual(m, q, v)
        d.qpos[:] = q
        mujoco.mj_forward(mj, d)
        T = np.eye(m.nv)  # MuJoCo's free-joint linear velocity is in world axes, pbsim's in the body's
        T[fv.start : fv.start + 3, fv.start : fv.start + 3] = _quat_rot(q[fq][3:7])
        pm = d.efc_pos[: d.ne].copy()
        Jm = d.efc_J.reshape(d.nefc, m.nv)[: d.ne] @ T
        for r in WELD_ROT:  # MuJoCo's relative quaternion may have a negative scalar part
            s = np.sign(pm[r : r + 3] @ phi[r : r + 3]) or 1.0
            pm[r : r + 3] *= s
            Jm[r : r + 3] *= s
        np.testing.assert_allclose(phi, pm, atol=1e-12)
        np.testing.assert_allclose(J, Jm, atol=1e-12)
        h = 1e-6
        qp, qm = pbsim.integrate(m, q, h * v), pbsim.integrate(m, q, -h * v)
        np.testing.assert_allclose(
            (equality_residual(m, qp)[0] - equality_residual(m, qm)[0]) / (2 * h), J @ v, atol=1e-7
        )
        Jp, Jn = equality_residual(m, qp, v)[1], equality_residual(m, qm, v)[1]
        np.testing.assert_allclose((Jp @ v - Jn @ v) / (2 * h), bias, atol=1e-6)
        assert np.abs(bias).max() > 0.1  # the bias is exercised


@pytest.mark.parametrize("name", list(MODELS))
def test_trajectories_match_mujoco(tmp_path, name):
    """rk4 and euler at 1 ms over 1 s against stiff MuJoCo (module doc)."""
    T, dt = 1.0, 1e-3
    m = _load(tmp_path, name, _xml(name, dt, "Euler"))
    assert m.equality and m.equality[0].active
    ref = _mujoco_final(_xml(name, 1e-4, "RK4"), T)
    mj_euler = _mujoco_final(_xml(name, dt, "Euler"), T)
    dist = lambda a, b: np.abs(pbsim.difference(m, a, b)).max()  # noqa: E731
    errs = {}
    for integ, tol_viol in (("rk4", 1e-10), ("euler", 1e-6)):
        for h in (dt, dt / 2) if integ == "euler" else (dt,):
            tr = pbsim.rollout(m, integ, dt=h, steps=int(round(T / h)), q0=m.default_configuration())
            viol = max(np.abs(equality_residual(m, q)[0]).max() for q in tr.q)
            assert viol < tol_viol, (integ, h, viol)
            errs[integ, h] = dist(tr.q[-1], ref)
    assert errs["rk4", dt] < 1e-4, errs
    assert errs["euler", dt] < 1.6 * dist(mj_euler, ref) + 1e-3, (errs, dist(mj_euler, ref))
    assert errs["euler", dt / 2] < 0.6 * errs["euler", dt] + 1e-5, errs  # first order
    assert dist(tr.q[-1], m.default_configuration()) > 0.05  # it moved


def test_violation_bounded_1e5_steps(tmp_path):
    """The four-bar at 1 ms for 1e5 steps (100 s) with euler: the loop stays closed to 1e-6 m."""
    m = _load(tmp_path, "fourbar", _xml("fourbar", 1e-3, "Euler"))
    tr = pbsim.rollout(m, "euler", dt=1e-3, steps=100_000, q0=m.default_configuration(), record_every=500)
    viol = [np.abs(equality_residual(m, q)[0]).max() for q in tr.q]
    assert max(viol) < 1e-6, max(viol)
    assert np.ptp(tr.q[:, 0]) > 1.0  # it kept moving


def test_inactive_is_no_constraint(tmp_path):
    """active="false": listed, no kernel rows, the trajectory of the model without it (bit for bit)."""
    m = _load(tmp_path, "off", _xml("fourbar", 1e-3, "Euler", active='active="false"'))
    free = _load(
        tmp_path,
        "free",
        _xml("fourbar", 1e-3, "Euler").replace(
            '<connect name="loop" body1="coupler" body2="rocker" anchor="0.3 0 0.2" />', ""
        ),
    )
    assert not free.equality and len(m.equality) == 1 and not m.equality[0].active
    assert m.neq_rows == 0 and m.k.eq_type.shape == (0,)
    assert "inactive" in m.summary() and any("inactive" in n for n in m.notes)
    a = pbsim.rollout(m, "euler", dt=1e-3, steps=300, q0=m.default_configuration())
    b = pbsim.rollout(free, "euler", dt=1e-3, steps=300, q0=free.default_configuration())
    np.testing.assert_array_equal(a.q, b.q)
    m.equality[0].active = True  # the same model with it on keeps the loop closed
    m._k = None
    assert np.abs(equality_residual(m, a.q[-1])[0]).max() > 1e-2


def test_methods_that_cannot_keep_them_refuse_by_name(tmp_path):
    m = _load(tmp_path, "fourbar", _xml("fourbar", 1e-3, "Euler"))
    for name in ("variational_newton", "variational_broyden"):
        with pytest.raises(InputError, match=r"cannot keep equality constraints.*loop \(connect"):
            make(name, m)
    with pytest.raises(InputError, match=r"variational with method='newton' cannot keep equality constraints"):
        make("variational", m, method="newton")
    with pytest.raises(InputError, match=r"pbfd with optimizer='lbfgs' cannot keep equality constraints"):
        make("pbfd", m, optimizer="lbfgs")
    holders = ("euler", "explicit_euler", "rk2", "rk3", "rk4", "pbad", "pbd_nmdp", "pbd_nmdp_zo", "pbfd")
    for name in holders + ("pbd_friction", "nmdp", "nmdp_zo", "ne_mdp", "ne_dry", "pbad3", "pbad4", "variational"):
        make(name, m)
    make("pbd_friction", m, optimizer="lbfgs")  # LBFGS on E (PBAD's) holds them


def test_info_lists_them(tmp_path):
    m = _load(tmp_path, "tendon", _xml("tendon", 1e-3, "Euler"))
    assert "1 equality constraint(s), 1 row(s) active: tt (tendon: t1 = P(t2))" in m.summary()
    d = m.to_dict()["equality"][0]
    assert d["name"] == "tt" and d["type"] == "tendon" and d["rows"] == 1 and d["solref"] == [0.002, 1.0]
    assert not any("equality" in n and "not imported" in n for n in m.notes)


def test_export_round_trip(tmp_path):
    """The MJCF writer writes connect/weld with sites, joint and tendon polynomials re-expanded
    about its qpos0 = 0 and the fixed tendons they couple: loaded back, every row has the same
    residual and Jacobian; nothing is reported dropped."""
    from pbsim.io.export_mjcf import write_mjcf

    p = tmp_path / "all.xml"
    p.write_text(ALL_ROWS)
    m = pbsim.load(str(p))
    report = write_mjcf(m, str(tmp_path / "out.xml"))
    assert not any("equality" in r or "tendon" in r for r in report), report
    back = pbsim.load(str(tmp_path / "out.xml"))
    assert [e.name for e in back.equality] == [e.name for e in m.equality]
    assert back.tendons.names == m.tendons.names
    assert back.joint_names == m.joint_names and back.nq == m.nq
    rng = np.random.default_rng(5)
    for _ in range(3):
        q = m.random_configuration(rng)
        v = rng.normal(size=m.nv)
        a, b = equality_residual(m, q, v), equality_residual(back, q, v)
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, atol=1e-9)


@pytest.mark.parametrize("integ", ["euler", "rk4"])
def test_inconsistent_start_is_projected(tmp_path, integ):
    """A start that violates the constraints (joint b 0.1 rad off P(a), the four-bar's rocker 0.05
    rad off) is brought onto them within a few steps by the end-of-step projection, without a
    velocity kick (|v| stays that of the swing)."""
    for name, joint, off in (("poly", "b", 0.1), ("fourbar", "j3", 0.05)):
        m = _load(tmp_path, name, _xml(name, 1e-3, "Euler"))
        q0 = m.default_configuration()
        q0[m.idx_q(joint)] += off
        assert np.abs(equality_residual(m, q0)[0]).max() > 0.5 * off * (0.1 if name == "fourbar" else 1)
        tr = pbsim.rollout(m, integ, dt=1e-3, steps=300, q0=q0)
        viol = [np.abs(equality_residual(m, q)[0]).max() for q in tr.q]
        assert max(viol[10:]) < 1e-6, (name, viol[:12])
        assert np.abs(tr.v).max() < 10.0, (name, np.abs(tr.v).max())


def test_combine_keeps_the_first_parts_constraints_tendons_and_keyframes(tmp_path):
    """``pbsim.combine(robot, object)`` keeps the robot's equality constraints, tendons and
    keyframes (its indices come first), so the tendon-coupled pair moves as on its own (the free
    box beside it does not touch it); a later part's constraints are refused by name."""
    xml = _xml("tendon", 1e-3, "Euler").replace(
        "</mujoco>", '<keyframe><key name="bent" qpos="0.3 -0.2 0.1"/></keyframe></mujoco>'
    )
    m = _load(tmp_path, "tendon", xml)
    box = pbsim.free_object("box", (0.05, 0.05, 0.05), 0.5, "box")
    two = pbsim.combine(m, (box, (2.0, 0.0, 1.0)))
    assert [e.name for e in two.equality] == ["tt"] and two.ntendon == 2 and two.neq_rows == 1
    key = two.keyframes["bent"]
    assert key.q.shape == (two.nq,) and np.allclose(key.q[:3], [0.3, -0.2, 0.1]) and key.v.shape == (two.nv,)
    alone = pbsim.rollout(m, "euler", dt=1e-3, steps=300, q0=m.default_configuration())
    tr = pbsim.rollout(two, "euler", dt=1e-3, steps=300, q0=two.default_configuration())
    viol = max(np.abs(equality_residual(two, q)[0]).max() for q in tr.q)
    assert viol < 1e-6, viol
    assert np.abs(tr.q[-1, :3] - alone.q[-1]).max() < 1e-9  # the pair moves as on its own
    assert np.abs(alone.q[-1] - alone.q[0]).max() > 0.05  # ... and it moved
    with pytest.raises(InputError, match="equality constraints and tendons of 'tendon'"):
        pbsim.combine(box, m)


def test_export_writes_fixed_tendons_and_names_what_it_drops(tmp_path):
    """The writer's fixed tendons keep their stiffness, damping, dead band and range (the
    reloaded model's tendon force equals the original's at random states); the actuators and the
    file's own keyframes, which it does not write, are named in its report."""
    from pbsim.dynamics.tendon import tendon_length
    from pbsim.io.export_mjcf import write_mjcf

    xml = """<mujoco><option><flag contact="disable"/></option><worldbody>
 <body name="p1"><joint name="a" axis="0 1 0" range="-1 1"/><geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02"/>
  <body name="p1b" pos="0.3 0 0"><joint name="a2" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/></body></body>
</worldbody><tendon><fixed name="t1" stiffness="30" damping="0.5" springlength="0.1 0.3" range="-0.6 0.8" limited="true">
 <joint joint="a" coef="1"/><joint joint="a2" coef="-0.5"/></fixed></tendon>
<actuator><motor name="m" tendon="t1"/></actuator><keyframe><key name="home" qpos="0.2 0.1"/></keyframe></mujoco>"""
    p = tmp_path / "ten.xml"
    p.write_text(xml)
    m = pbsim.load(str(p))
    report = write_mjcf(m, str(tmp_path / "out.xml"))
    assert any("1 actuator(s) not written" in r for r in report) and any("'home'" in r for r in report), report
    back = pbsim.load(str(tmp_path / "out.xml"))
    a, b = m.tendons, back.tendons
    assert b.names == ["t1"]
    for k in ("stiffness", "damping", "springlength", "range", "frictionloss", "prm"):
        np.testing.assert_allclose(getattr(b, k), getattr(a, k), atol=1e-12, err_msg=k)
    q = np.random.default_rng(2).uniform(-1.2, 1.2, size=(8, m.nq))
    np.testing.assert_allclose(tendon_length(back, q), tendon_length(m, q), atol=1e-12)
    q0 = np.array([0.9, -0.8])  # past the range and the dead band: the spring and the limit act
    tr0 = pbsim.rollout(m, "euler", dt=1e-3, steps=300, q0=q0)
    tr1 = pbsim.rollout(back, "euler", dt=1e-3, steps=300, q0=q0)
    assert np.abs(tr0.q[-1] - q0).max() > 0.05
    np.testing.assert_allclose(tr1.q, tr0.q, atol=1e-9)
