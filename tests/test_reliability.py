"""Issue #19: every bad input ends in a named error or a flagged result.

Each test regenerates the input that failed before the fix (a deep chain, extreme values, bad
rollout arguments ...) and checks that it now loads with finite dynamics or raises a named
``PbsimError`` (see docs/reliability.md)."""

import warnings

import numpy as np
import pytest

import pbsim
from pbsim.errors import InertiaError, InputError, ParseError

INERTIA = "ixx='0.01' iyy='0.01' izz='0.01' ixy='0' ixz='0' iyz='0'"


def chain_urdf(n, inertia=INERTIA, mass="1", origin="0 0 0.1"):
    s = ["<robot name='chain'>"]
    for i in range(n + 1):
        s.append(f"<link name='l{i}'><inertial><mass value='{mass}'/><inertia {inertia}/></inertial></link>")
    for i in range(n):
        s.append(
            f"<joint name='j{i}' type='revolute'><parent link='l{i}'/><child link='l{i + 1}'/>"
            f"<origin xyz='{origin}'/><axis xyz='0 1 0'/><limit lower='-1' upper='1' effort='1' velocity='1'/>"
            "</joint>"
        )
    s.append("</robot>")
    return "\n".join(s)


def mjcf(body_pos="0 0 0", joint_pos="0 0 0", armature="0", axis="0 1 0", mass="1"):
    return (
        f"<mujoco><worldbody><body pos='{body_pos}'><joint type='hinge' pos='{joint_pos}' armature='{armature}' "
        f"axis='{axis}'/><geom type='capsule' size='0.05' fromto='0 0 0 0 0 -0.5' mass='{mass}'/></body>"
        "</worldbody></mujoco>"
    )


def write(tmp_path, text, name):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def finite_dynamics(m):
    q = m.default_configuration()
    z = np.zeros(m.nv)
    return np.all(np.isfinite(pbsim.aba(m, q, z, z))) and np.all(np.isfinite(pbsim.crba(m, q)))


# ---------------------------------------------------------------- deep trees (RecursionError)
def test_10000_link_chain_loads(tmp_path):
    """A serial chain of 10,000 links (>= 1,500 raised RecursionError in the builder's walk)."""
    m = pbsim.load(write(tmp_path, chain_urdf(10_000), "deep.urdf"))
    assert m.nb == 10_000 + 1  # floating root + 10,000 revolute joints
    assert m.tree().count("\n") == m.nb
    assert finite_dynamics(m)


def test_deep_mjcf_is_refused_by_name(tmp_path):
    """MuJoCo's XML reader refuses very deep nesting: a ParseError, not a crash."""
    n = 2000
    s = "<mujoco><worldbody>" + "<body pos='0 0 0.1'><joint axis='0 1 0'/><geom size='0.05'/>" * n
    s += "</body>" * n + "</worldbody></mujoco>"
    try:
        m = pbsim.load(write(tmp_path, s, "deep.xml"))
    except ParseError:
        return
    assert finite_dynamics(m)


def test_joint_cycle_is_a_parse_error(tmp_path):
    text = chain_urdf(1).replace(
        "</robot>",
        "<link name='a'/><link name='b'/>"
        "<joint name='ab' type='fixed'><parent link='a'/><child link='b'/></joint>"
        "<joint name='ba' type='fixed'><parent link='b'/><child link='a'/></joint></robot>",
    )
    with pytest.raises(ParseError, match="not connected to the root|root link"):
        pbsim.load(write(tmp_path, text, "cycle.urdf"))


# ---------------------------------------------------------------- extreme values in files
@pytest.mark.parametrize("value", ["1e308", "-1e308"])
def test_urdf_huge_inertia_is_a_parse_error(tmp_path, value):
    inertia = f"ixx='{value}' iyy='1' izz='1' ixy='0' ixz='0' iyz='0'"
    with pytest.raises(ParseError, match=r"huge\.urdf:\d+: <inertia ixx=.*beyond the bound"):
        pbsim.load(write(tmp_path, chain_urdf(2, inertia=inertia), "huge.urdf"))


def test_urdf_huge_off_diagonal_inertia(tmp_path):
    inertia = "ixx='1' iyy='1' izz='1' ixy='1e308' ixz='0' iyz='0'"
    with pytest.raises(ParseError, match=r"<inertia ixy=.*beyond the bound"):
        pbsim.load(write(tmp_path, chain_urdf(2, inertia=inertia), "huge.urdf"))


def test_urdf_huge_origin_and_mass(tmp_path):
    with pytest.raises(ParseError, match=r"<origin xyz=.*beyond the bound"):
        pbsim.load(write(tmp_path, chain_urdf(2, origin="0 0 1e308"), "far.urdf"))
    with pytest.raises(ParseError, match=r"<mass value=.*beyond the bound"):
        pbsim.load(write(tmp_path, chain_urdf(2, mass="1e300"), "heavy.urdf"))


@pytest.mark.parametrize(
    "kw, what",
    [
        (dict(body_pos="inf 0 0"), "body .*pos"),
        (dict(body_pos="nan 0 0"), "body .*pos"),
        (dict(body_pos="1e308 0 0"), "body .*pos"),
        (dict(joint_pos="1e308 0 0"), "joint .*pos"),
        (dict(joint_pos="nan 0 0"), "joint .*pos"),
        (dict(armature="nan"), "joint .*armature"),
        (dict(axis="0 0 0"), "axis"),
        (dict(mass="1e300"), "mass|inertia"),
    ],
)
def test_mjcf_bad_values_are_parse_errors(tmp_path, kw, what):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ParseError, match=what):
            pbsim.load(write(tmp_path, mjcf(**kw), "bad.xml"))


def test_builder_refuses_huge_values_in_code():
    b = pbsim.ModelBuilder("r")
    from pbsim.model.builder import JointSpec, LinkSpec

    b.add_link(LinkSpec("a", 1.0, inertia=np.eye(3)))
    b.add_link(LinkSpec("b", 1.0, inertia=np.eye(3) * 1e300))
    b.add_joint(JointSpec("j", "revolute", "a", "b", axis=np.array([0.0, 0, 1])))
    with pytest.raises(InertiaError, match="beyond the bounds"):
        b.build()
    with pytest.raises(ParseError, match="placement"):
        b.add_joint(JointSpec("k", "revolute", "a", "b", p=np.array([1e308, 0, 0])))
    with pytest.raises(ParseError, match="armature"):
        b.add_joint(JointSpec("k", "revolute", "a", "b", armature=float("nan")))


def test_urdf_zero_axis(tmp_path):
    text = chain_urdf(1).replace("<axis xyz='0 1 0'/>", "<axis xyz='0 0 0'/>")
    with pytest.raises(ParseError, match="zero axis"):
        pbsim.load(write(tmp_path, text, "axis.urdf"))


def test_massless_floating_root_has_finite_dynamics(tmp_path):
    """A mass-0 floating root with one moving child: the root's turn is undone by the child's,
    so M is singular although every joint's own block is not; the articulated-inertia rule
    gives the root armature (a warning and a note), and ABA is finite."""
    text = (
        "<robot name='r'><link name='base'/>"
        "<link name='arm'><inertial><origin xyz='0 0 -0.5'/><mass value='1'/><inertia "
        f"{INERTIA}/></inertial></link>"
        "<joint name='j' type='revolute'><parent link='base'/><child link='arm'/><axis xyz='0 1 0'/></joint></robot>"
    )
    with pytest.warns(pbsim.PbsimWarning, match="base_root.* moves no mass"):
        m = pbsim.load(write(tmp_path, text, "m0.urdf"))
    assert m.floating_base
    assert np.linalg.eigvalsh(pbsim.crba(m, m.neutral())).min() > 0
    assert finite_dynamics(m)


# ---------------------------------------------------------------- the public dynamics API
@pytest.fixture(scope="module")
def model(tmp_path_factory):
    p = tmp_path_factory.mktemp("m") / "c.urdf"
    p.write_text(chain_urdf(3))
    return pbsim.load(str(p))  # floating: q[3:7] is a quaternion


@pytest.mark.parametrize("fn", ["aba", "crba", "rnea", "forward_kinematics"])
def test_api_rejects_zero_quaternion(model, fn):
    q = model.neutral()
    q[3:7] = 0.0
    z = np.zeros(model.nv)
    args = {"aba": (q, z, z), "rnea": (q, z, z), "crba": (q,), "forward_kinematics": (q,)}[fn]
    with pytest.raises(InputError, match=r"q\[3:7\] is a quaternion of norm 0"):
        getattr(pbsim, fn)(model, *args)


@pytest.mark.parametrize("fn", ["aba", "rnea"])
def test_api_rejects_absurd_velocity(model, fn):
    z = np.zeros(model.nv)
    with pytest.raises(InputError, match=r"v\[0\] is 1e\+200 \(beyond the bound"):
        getattr(pbsim, fn)(model, model.neutral(), z + 1e200, z)


def test_api_rejects_complex_q(model):
    with pytest.raises(InputError, match="must be real"):
        pbsim.crba(model, model.neutral() + 1j)
    with pytest.raises(InputError, match="must be real"):
        pbsim.forward_kinematics(model, model.neutral().astype(complex))


# ---------------------------------------------------------------- rollout / make / Control / make_scene options
@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(steps=-5), "steps must be >= 0"),
        (dict(steps="x"), "steps must be an integer"),
        (dict(steps=float("nan")), "steps must be an integer"),
        (dict(steps=2.7), "steps must be an integer"),
        (dict(steps=True), "steps must be an integer"),
        (dict(on_nan="bogus"), "on_nan must be one of 'raise', 'stop'"),
        (dict(record_every=0), "record_every must be >= 1"),
        (dict(record_every=-3), "record_every must be >= 1"),
        (dict(record_every=1.5), "record_every must be an integer"),
        (dict(foo=1), "no option 'foo'.*rollout's own arguments: integrator, dt, steps"),
        (dict(integrator="variational", max_iteratons=3), "did you mean 'max_iterations'"),
        (dict(q0=np.zeros(3)), r"q0 must have shape"),
        (dict(v0=np.zeros(2)), r"v0 must have shape"),
    ],
)
def test_rollout_arguments(model, kw, match):
    with pytest.raises(InputError, match=match):
        pbsim.rollout(model, **{"steps": 2, **kw})


def test_rollout_integral_float_steps_still_accepted(model):
    tr = pbsim.rollout(model, "euler", steps=3.0, dt=1e-3)
    assert len(tr.t) == 4


def test_options_of_make_control_make_scene(model):
    with pytest.raises(InputError, match="valid options"):
        pbsim.integrators.make("rk4", model, foo=1)
    with pytest.raises(InputError, match=r"Control has no option 'taus' \(did you mean 'tau'\?\); valid options: tau"):
        pbsim.Control(taus=np.zeros(model.nv))
    with pytest.raises(InputError, match=r"make_scene has no option 'groud' \(did you mean 'ground'\?\)"):
        pbsim.make_scene(model, groud="plane")


# ---------------------------------------------------------------- the shared divergence rule
def gym_xml(name):
    from conftest import gymnasium_xml

    return gymnasium_xml(name)


def test_energy_scale_of_chain10():
    import pbsim_models
    from pbsim.integrators.divergence import energy_scale

    m = pbsim_models.by_name("chain10")  # 10 links of 0.1 kg, 0.1 m: g (sum m_i 2 r_i + m 1 m) = 9.81 * 2
    assert energy_scale(m) == pytest.approx(9.81 * 2.0)


def test_variational_chain10_at_dt_001_is_flagged():
    """Issue #19: variational on chain10 at dt 0.01 went from 0 J to 5,310 J (peaks near 120 kJ)
    with ``diverged 0``."""
    import pbsim_models

    m = pbsim_models.by_name("chain10")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the frozen trajectory's solver keeps failing to converge
        tr = pbsim.rollout(m, "variational", dt=0.01, steps=300, on_nan="stop")
    assert tr.diverged.all()
    first = tr.info["divergence"]
    assert first["step"] < 300 and first["t"] == pytest.approx(first["step"] * 0.01)
    assert "joint" in first["why"]
    assert np.all(np.abs(tr.energy[: first["step"]]) < 10 * 19.62 + 1)  # recorded states are the good ones
    with pytest.raises(pbsim.SimulationError, match=r"diverged \((joint|energy).*\) at step \d+, t = "):
        pbsim.rollout(m, "variational", dt=0.01, steps=300)


def test_euler_quadruped_blowup_is_flagged():
    """Issue #19: semi-implicit Euler on a quadruped ran to |q| ~ 1e91 as a normal result; the
    gymnasium ant on its floor at dt 0.05 is flagged (energy) while it is still near the floor,
    and at a dt where it is stable it is not.  Since euler holds the ant's ranges by MuJoCo's limit
    law (soft, 24 rad/s at 20 ms after refsafe) instead of the stiff implicit spring, its explicit
    penalty contact is unstable at 20 ms too (measured, 6 s from the clipped qpos0: MuJoCo's law
    stable at 10 and 15 ms, diverged at 20 ms (t = 2.8 s, torso leaving at 10 m/s) and 50 ms; the
    spring law stable up to 20 ms): 15 ms is not flagged, 20 ms is."""
    m = pbsim.load(gym_xml("ant.xml"))
    q0 = m.default_configuration().copy()  # its ankles start outside their range: move them in
    for i in range(m.nb):
        if m.nvj[i] == 1:
            q0[m.iq[i]] = np.clip(q0[m.iq[i]], m.lower[m.iv[i]], m.upper[m.iv[i]])
    assert not pbsim.rollout(m, "euler", dt=0.015, steps=400, q0=q0, on_nan="stop").diverged.any()
    with pytest.warns(pbsim.PbsimWarning):
        assert pbsim.rollout(m, "euler", dt=0.02, steps=300, q0=q0, on_nan="stop").diverged.all()
    tr = pbsim.rollout(m, "euler", dt=0.05, steps=200, q0=q0, on_nan="stop")
    assert tr.diverged.all()
    assert "energy" in tr.info["divergence"]["why"] and "x the model's energy scale" in tr.info["divergence"]["why"]
    assert np.all(np.isfinite(tr.q)) and np.abs(tr.q).max() < 100


def test_cli_humanoid_example_does_not_exit_0():
    """Issue #19's CLI run (euler, dt 0.016666, SPD kp 2000): refused (today by the penetration
    bound, which on_nan='raise' turns into an error), not a normal exit with energy 7.5e122."""
    from pbsim.cli import main

    args = ["rollout", gym_xml("humanoid.xml"), "--integrator", "euler", "--dt", "0.016666", "--steps", "300"]
    args += ["--control", "spd", "--kp", "2000", "--kd", "200", "--ground", "auto", "--quiet"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            rc = main(args)
        except SystemExit as e:
            rc = e.code
    assert rc not in (0, None)


@pytest.mark.parametrize(
    "argv, bad, hint",
    [
        (["rollout", "chain10", "--integrater", "euler"], "--integrater", "--integrator"),
        (["info", "chain10", "--jsn"], "--jsn", "--json"),
        (["view", "chain10", "--grund", "none"], "--grund", "--ground"),
    ],
)
def test_cli_unknown_flag_names_the_closest_valid_ones(argv, bad, hint, capsys):
    """An unknown or misspelt CLI flag: exit 2, the flag named, the closest valid flag suggested and
    the command's valid options listed (rollout, info and the viewer's own parser alike)."""
    if argv[0] == "view":
        pytest.importorskip("pbsim_viewer")
    from pbsim.cli import main

    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert f"unrecognized arguments: {bad} (did you mean {hint}" in err and "valid options:" in err


def test_rule_names_the_joint_and_is_applied_by_every_step():
    import pbsim_models
    from pbsim.integrators import make
    from pbsim.integrators.divergence import DivergenceRule

    m = pbsim_models.by_name("chain10")
    integ = make("euler", m)
    s, _ = integ.step(pbsim.State.make(m, batch=2), None, 1e-3)  # the reference energy: at rest
    s.v[1, 4] = 2e4  # beyond the speed limit
    new, diag = integ.step(s, None, 1e-3)
    assert diag.diverged.tolist() == [False, True]
    assert diag.divergence[0] is None and "joint 'joint4'" in diag.divergence[1] and "rad/s" in diag.divergence[1]
    integ.divergence = DivergenceRule(speed_limit=1e5)
    new, diag = integ.step(s, None, 1e-3)
    assert "energy" in diag.divergence[1]  # 1/2 I v^2 far above 10 x 19.6 J
    s.v[1, 4] = 100.0  # 1/2 I v^2 ~ 450 J above the state at rest, but:
    s.reset_history()  # a state edited by hand: the rule measures from here on
    new, diag = integ.step(s, None, 1e-3)
    assert not diag.diverged.any()


@pytest.mark.parametrize("method", ["rk4", "euler", "variational", "pbad"])
def test_stable_runs_are_not_flagged(method):
    import pbsim_models

    m = pbsim_models.by_name("chain10")
    dt = {"rk4": 1e-3, "euler": 1e-3, "variational": 1e-3, "pbad": 1e-2}[method]
    tr = pbsim.rollout(m, method, dt=dt, steps=300, on_nan="stop")
    assert not tr.diverged.any() and tr.info["divergence"] is None


def test_unclosed_xml_declaration(tmp_path):
    """Found by the fuzzer (tests/io/test_fuzz.py): a URDF cut after ``<?xml`` raised ValueError."""
    with pytest.raises(ParseError, match="not closed"):
        pbsim.load(write(tmp_path, "<?xml", "cut.urdf"))


def test_mjcf_name_not_utf8(tmp_path):
    """Found by the fuzzer: a joint name with a byte that is not UTF-8 raised UnicodeDecodeError."""
    p = tmp_path / "name.xml"
    p.write_bytes(mjcf().encode().replace(b"<joint type", b"<joint name='\x80hip' type"))
    with pytest.raises(ParseError, match=r"name\.xml: the name of joint #0 is not valid UTF-8"):
        pbsim.load(str(p))


@pytest.mark.parametrize("edit, match", [("gravity='0 0 1e308'", "gravity"), ("armature='1e300'", "armature")])
def test_mjcf_huge_gravity_and_armature(tmp_path, edit, match):
    """Found by the fuzzer: gravity 1e308 loaded and gave a non-finite ABA."""
    text = mjcf().replace("<worldbody>", f"<option {edit}/><worldbody>" if "gravity" in edit else "<worldbody>")
    if "armature" in edit:
        text = mjcf(armature="1e300")
    with pytest.raises(ParseError, match=match):
        pbsim.load(write(tmp_path, text, "g.xml"))
