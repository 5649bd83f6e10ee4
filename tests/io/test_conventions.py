"""Robot-file conventions (issue #16 item 6): static mass-0 roots, mass-0 links keeping their
rotational inertia, inertia checked on merged bodies, passive joint parameters, MJCF elements
listed in the notes, mimic joints, and bad input named by file and element."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pbsim
from pbsim.errors import InertiaError, ParseError
from pbsim.model.notes import ModelWarning
from tests.conftest import pybullet_file
from tests.oracles import PinOracle, rel_err

INERTIA = 'ixx="{a}" iyy="{b}" izz="{c}" ixy="0" ixz="0" iyz="0"'


def link(name, mass=1.0, inertia=(0.1, 0.1, 0.1), com="0 0 0"):
    i = INERTIA.format(a=inertia[0], b=inertia[1], c=inertia[2])
    return f'<link name="{name}"><inertial><origin xyz="{com}"/><mass value="{mass}"/><inertia {i}/></inertial></link>'


def joint(name, parent, child, type="revolute", xyz="0 0 0", extra=""):
    return (
        f'<joint name="{name}" type="{type}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{xyz}"/><axis xyz="0 0 1"/>{extra}</joint>'
    )


def write(tmp_path, body, name="robot.urdf"):
    p = tmp_path / name
    p.write_text(f"<robot name='r'>\n{body}\n</robot>" if name.endswith(".urdf") else body)
    return str(p)


def quiet_load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pbsim.load(path, **kw)


def random_states(model, n=3, seed=0):
    rng = np.random.default_rng(seed)
    Q = np.array([model.random_configuration(rng) for _ in range(n)]).reshape(n, model.nq)
    return Q, rng.normal(size=(n, model.nv)), rng.normal(size=(n, model.nv))


def pin_mass_matrix_error(model, path):
    """Relative error of CRBA against Pinocchio's (URDF has no armature: the builder's guard on
    massless DOFs is taken out) at 3 random states."""
    pytest.importorskip("pinocchio")
    ref = PinOracle(model, path)
    Q, _, _ = random_states(model)
    M = pbsim.crba(model, Q)
    return max(rel_err(M[k] - np.diag(model.armature), ref.crba(Q[k])) for k in range(len(Q)))


# ---------------------------------------------------------------------- mass-0 root is static
def test_zero_mass_root_is_static_unless_floating_asked(tmp_path):
    body = link("base", mass=0) + link("arm") + joint("j", "base", "arm")
    p = write(tmp_path, body)
    m = pbsim.load(p)
    assert not m.floating_base and m.nv == 1
    assert any("root link 'base' has mass 0: static" in n for n in m.notes)
    m = quiet_load(p, floating_base=True)
    assert m.floating_base and m.nv == 7
    # a root without <inertial> still floats (only an explicit mass="0" is pybullet's static base)
    m = pbsim.load(write(tmp_path, "<link name='base'/>" + link("arm") + joint("j", "base", "arm", xyz="0.1 0 0")))
    assert m.floating_base


def test_kuka_iiwa_loads_fixed_with_finite_dynamics():
    path = pybullet_file("kuka_iiwa/model.urdf")
    m = pbsim.load(path)
    assert not m.floating_base and m.nv == 7
    Q, V, T = random_states(m, 5)
    assert np.all(np.isfinite(pbsim.aba(m, Q, V, T))) and np.all(np.isfinite(pbsim.crba(m, Q)))
    assert pin_mass_matrix_error(m, path) < 1e-9


def test_static_model_without_moving_joint(tmp_path):
    m = pbsim.load(write(tmp_path, "<link name='world'/>" + link("table") + joint("weld", "world", "table", "fixed")))
    assert m.nq == m.nv == m.nb == 0
    assert any("static" in n for n in m.notes)
    assert pbsim.aba(m, np.zeros((3, 0)), np.zeros((3, 0)), np.zeros((3, 0))).shape == (3, 0)


# ---------------------------------------------------------------------- mass-0 links keep rotational inertia
def test_zero_mass_link_keeps_rotational_inertia(tmp_path):
    # a massless link with izz = 0.3, fixed to the arm: the arm's axis inertia grows by 0.3
    body = (
        link("base", mass=0)
        + link("arm", mass=1, inertia=(0.1, 0.1, 0.1), com="0.5 0 0")
        + link("flywheel", mass=0, inertia=(0.2, 0.2, 0.3))
        + joint("j", "base", "arm")
        + joint("w", "arm", "flywheel", "fixed", xyz="1 0 0")
    )
    m = pbsim.load(write(tmp_path, body))
    M = pbsim.crba(m, np.zeros(1))
    assert M[0, 0] == pytest.approx(0.1 + 1 * 0.5**2 + 0.3, rel=1e-12)
    # alone on its joint, a massless link with inertia is a rotor: no armature guard needed
    m = pbsim.load(
        write(tmp_path, link("base", mass=0) + link("rotor", 0, (0.2, 0.2, 0.3)) + joint("j", "base", "rotor"))
    )
    assert pbsim.crba(m, np.zeros(1))[0, 0] == pytest.approx(0.3) and m.armature[0] == 0


# pybullet_data files with a mass="0" link in a moving body (root links float when asked)
ZERO_MASS_LINK_FILES = [
    ("cartpole.urdf", True, {}),
    ("kuka_iiwa/model.urdf", True, {}),
    ("kuka_iiwa/model_vr_limits.urdf", True, {}),
    ("sphere2red_nocol.urdf", True, {}),
    ("table/table.urdf", True, {}),
    ("franka_panda/panda.urdf", None, {}),  # coupled mimic finger: the full-coordinate M is the same
]


@pytest.mark.parametrize("rel,floating,kw", ZERO_MASS_LINK_FILES, ids=[f[0] for f in ZERO_MASS_LINK_FILES])
def test_zero_mass_links_match_pinocchio(rel, floating, kw):
    path = pybullet_file(rel)
    m = quiet_load(path, floating_base=floating, **kw)
    assert pin_mass_matrix_error(m, path) < 1e-9


# ---------------------------------------------------------------------- inertia on merged bodies
def test_bad_link_inertia_inside_a_physical_body_warns(tmp_path):
    """A camera link with a negative moment fixed to a heavy arm: the merged body is physical."""
    body = (
        link("base", mass=0)
        + link("arm", mass=2, inertia=(0.2, 0.2, 0.2))
        + link("camera", mass=0.01, inertia=(-1e-4, 1e-4, 1e-4))
        + joint("j", "base", "arm")
        + joint("cam", "arm", "camera", "fixed", xyz="0.1 0 0")
    )
    p = write(tmp_path, body)
    with pytest.warns(ModelWarning, match=r"robot\.urdf: link 'camera'.*not positive definite.*body 'arm'"):
        m = pbsim.load(p)
    assert any("link 'camera'" in n for n in m.notes)
    assert np.linalg.eigvalsh(m.inertia_com[0]).min() > 0


def test_non_physical_merged_body_is_an_error_naming_the_body(tmp_path):
    body = (
        link("base", mass=0)
        + link("arm", mass=0.01, inertia=(1e-4, 1e-4, 1e-4))
        + link("camera", mass=0.01, inertia=(-1.0, 1e-4, 1e-4))
        + joint("j", "base", "arm")
        + joint("cam", "arm", "camera", "fixed")
    )
    p = write(tmp_path, body)
    with pytest.raises(InertiaError, match=r"body 'arm' of joint 'j' \(link 'arm' and \['camera'\].*link 'camera'"):
        pbsim.load(p)
    m = pbsim.load(p, fix_inertia=True)
    assert np.linalg.eigvalsh(m.inertia_com[0]).min() > 0


def test_static_links_need_only_finite_values(tmp_path):
    # a bad inertia on a link welded to the world never enters the dynamics
    body = link("base", mass=1, inertia=(-1, 1, 1)) + link("arm") + joint("j", "base", "arm")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = pbsim.load(write(tmp_path, body), floating_base=False)
    assert m.nv == 1
    with pytest.raises(InertiaError, match="negative mass"):
        pbsim.load(
            write(tmp_path, link("base", mass=-1) + link("arm") + joint("j", "base", "arm")), floating_base=False
        )


def test_point_masses_load(tmp_path):
    """Zero rotational inertia with mass (laikago's links) is a physical limit, as in Pinocchio."""
    body = link("base", 0) + link("a", 1, (0, 0, 0), com="0.5 0 0") + joint("j", "base", "a")
    m = pbsim.load(write(tmp_path, body))
    assert pbsim.crba(m, np.zeros(1))[0, 0] == pytest.approx(0.25)
    assert any("point masses" in n for n in m.notes)


# ---------------------------------------------------------------------- passive joint parameters
def test_urdf_dynamics_damping_and_friction(tmp_path):
    body = link("base", 0) + link("arm") + joint("j", "base", "arm", extra='<dynamics damping="0.5" friction="0.25"/>')
    m = pbsim.load(write(tmp_path, body))
    assert m.damping.tolist() == [0.5] and m.frictionloss.tolist() == [0.25]
    assert m.stiffness.tolist() == [0.0] and m.springref.tolist() == [0.0]
    bad = link("base", 0) + link("arm") + joint("j", "base", "arm", extra='<dynamics friction="-1"/>')
    with pytest.raises(ParseError, match=r"robot\.urdf:\d+: joint 'j': negative friction"):
        pbsim.load(write(tmp_path, bad))


MJCF_PASSIVE = """<mujoco model="m">
  <compiler angle="radian"/>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="hinge" type="hinge" axis="0 1 0" stiffness="3" springref="0.4" ref="0.1" frictionloss="0.2" damping="0.1"/>
      <geom type="capsule" size="0.05" fromto="0 0 0 0.5 0 0"/>
      <body name="b" pos="0.5 0 0">
        <joint name="slide" type="slide" axis="1 0 0" stiffness="7" springref="-0.2"/>
        <joint name="ball" type="ball" stiffness="2"/>
        <geom type="sphere" size="0.1"/>
      </body>
    </body>
  </worldbody>
</mujoco>"""


def test_mjcf_stiffness_springref_frictionloss(tmp_path):
    import mujoco

    p = write(tmp_path, MJCF_PASSIVE, "m.xml")
    m = pbsim.load(p)
    mj = mujoco.MjModel.from_xml_path(p)
    ih, isl, ib = m.idx_v("hinge"), m.idx_v("slide"), m.idx_v("ball")
    assert m.stiffness[ih].tolist() == [3.0] and m.stiffness[isl].tolist() == [7.0]
    assert m.frictionloss[ih].tolist() == [0.2] and m.damping[ih].tolist() == [0.1]
    assert np.array_equal(m.springref, mj.qpos_spring)  # pbsim's q is MuJoCo's qpos
    assert m.springref[m.idx_q("hinge")].tolist() == [0.4] and m.springref[m.idx_q("slide")].tolist() == [-0.2]
    # a ball joint's spring is imported (tests/integrators/test_mujoco_passive.py) and not noted
    assert m.stiffness[ib].tolist() == [2.0] * 3 and not any("stiffness" in n for n in m.notes)


# ---------------------------------------------------------------------- MJCF: nothing dropped silently
MJCF_DROPPED = """<mujoco model="dropped">
  <option density="1.2" viscosity="0.001"/>
  <asset><hfield name="terrain" nrow="3" ncol="3" size="1 1 0.1 0.1"/></asset>
  <worldbody>
    <geom name="ground" type="hfield" hfield="terrain"/>
    <body name="torso" pos="0 0 1" gravcomp="1">
      <freejoint name="root"/>
      <geom name="blob" type="ellipsoid" size="0.1 0.2 0.3"/>
      <site name="s0"/>
      <body name="leg" pos="0.2 0 0">
        <joint name="hip" type="hinge" axis="0 1 0"/>
        <joint name="shoulder" type="ball" range="0 0.5" limited="true"/>
        <geom name="shin" type="capsule" size="0.05" fromto="0 0 0 0 0 -0.5"/>
        <site name="s1" pos="0 0 -0.5"/>
      </body>
      <body name="arm" pos="-0.2 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <geom name="forearm" type="capsule" size="0.05" fromto="0 0 0 0 0 -0.5"/>
      </body>
    </body>
  </worldbody>
  <tendon><fixed name="coupling"><joint joint="hip" coef="1"/><joint joint="elbow" coef="-1"/></fixed>
    <spatial name="cable"><site site="s0"/><site site="s1"/></spatial></tendon>
  <equality><joint name="lock" joint1="hip" joint2="elbow"/></equality>
  <contact><pair name="touch" geom1="shin" geom2="forearm"/><exclude name="skip" body1="leg" body2="arm"/></contact>
  <sensor><jointpos name="hip_angle" joint="hip"/></sensor>
  <keyframe><key name="crouch" qpos="0 0 1 1 0 0 0 0.3 1 0 0 0 -0.3"/></keyframe>
</mujoco>"""


def test_mjcf_dropped_elements_are_named_in_notes(tmp_path):
    m = pbsim.load(write(tmp_path, MJCF_DROPPED, "d.xml"))
    notes = "\n".join(m.notes)
    for expected in [
        "1 sensor(s) not imported: 'hip_angle'",
        "ball-joint cone limits are held by the explicit methods only (MuJoCo's limit constraint), "
        "the other methods leave the cone free: 'shoulder'",
        "hfield 'terrain' is flat (all 3x3 elevations 0: data MuJoCo sets at run time?)",
    ]:
        assert expected in notes, f"missing note: {expected}\nnotes:\n{notes}"
    # hfields and ellipsoids are imported and touch (issue 29: tests/contact/test_geoms29.py)
    assert "of type hfield" not in notes and "of type ellipsoid" not in notes and "unsupported geoms" not in notes
    assert {g.name: g.shape for g in m.geoms}["blob"] == "ellipsoid"
    assert list(m.keyframes) == ["crouch"] and "keyframe" not in notes  # keyframes are imported (Model.keyframes)
    assert [e.name for e in m.equality] == ["lock"] and "equality" not in notes  # tests/dynamics/test_equality.py
    assert m.ntendon == 2 and "tendon" not in notes  # imported (tests/dynamics/test_tendon.py)
    # gravcomp is imported (tests/dynamics/test_gravcomp.py): the torso's whole weight is held up
    import mujoco

    mj = mujoco.MjModel.from_xml_string(MJCF_DROPPED)
    assert "gravcomp" not in notes and m.gravcomp[m.body_names.index("torso"), 0] == mj.body_mass[1] > 0
    assert f"gravity compensation on 1 body: torso ({mj.body_mass[1]:.4g} kg held)" in m.summary()
    assert "2 tendon(s): coupling: fixed" in m.summary()  # what `pbsim info` prints
    # the medium is imported (tests/dynamics/test_fluid.py): every body with mass takes its force
    assert "fluid" not in notes and m.fluid.nf == 3
    assert "fluid forces (MuJoCo's inertia-box model, explicit): density 1.2 kg/m^3" in m.summary()
    # <pair> and <exclude> are imported (tests/io/test_mjcf_contact.py): the pair is the only one
    # besides the ground's (hfield-blob, hfield-shin, hfield-forearm)
    assert "'touch'" not in notes and "'skip'" not in notes
    (p,) = [p for p in m.contact_pairs if p.explicit]
    names = {frozenset((m.geoms[q.geom1].name, m.geoms[q.geom2].name)) for q in m.contact_pairs if not q.explicit}
    assert names == {frozenset(("ground", g)) for g in ("blob", "shin", "forearm")}
    assert p.explicit and p.name == "touch" and {m.geoms[p.geom1].name, m.geoms[p.geom2].name} == {"shin", "forearm"}


def test_mjcf_disabled_gravity(tmp_path):
    xml = MJCF_PASSIVE.replace("<worldbody>", "<option><flag gravity='disable'/></option><worldbody>")
    m = pbsim.load(write(tmp_path, xml, "g.xml"))
    assert np.all(m.gravity == 0) and any("gravity is disabled" in n for n in m.notes)


# ---------------------------------------------------------------------- mimic joints
@pytest.mark.parametrize("rel", ["franka_panda/panda.urdf", "xarm/xarm6_with_gripper.urdf"])
def test_mimic_gripper_coupled_refused_or_loaded_independent(rel):
    path = pybullet_file(rel)
    m = quiet_load(path)  # default mimic="couple": slaved, no DOF of its own (tests/io/test_mimic.py)
    assert m.mimic and any("mimics" in n and "no DOF of its own" in n for n in m.notes)
    with pytest.raises(ParseError, match=r"\.urdf:\d+: joint '\w+' mimics joint '\w+'.*mimic joints are refused"):
        quiet_load(path, mimic="error")
    with pytest.warns(ModelWarning, match="loaded as an independent joint"):
        m = pbsim.load(path, mimic="independent")
    assert any("mimics joint" in n for n in m.notes) and not m.mimic
    # as Pinocchio's default buildModelFromUrdf (mimic=False): same DOFs, same mass matrix
    assert pin_mass_matrix_error(m, path) < 1e-9


# ---------------------------------------------------------------------- pybullet dialect
def test_lower_above_upper_means_no_limit(tmp_path):
    body = link("base", 0) + link("arm") + joint("j", "base", "arm", "prismatic", extra='<limit lower="1" upper="-1"/>')
    with pytest.warns(ModelWarning, match=r"robot\.urdf: line \d+: joint 'j' has lower limit 1.0 > upper limit -1.0"):
        m = pbsim.load(write(tmp_path, body))
    assert m.lower[0] == -np.inf and m.upper[0] == np.inf


def test_mesh_path_relative_to_a_parent_folder_and_odd_geometry(tmp_path):
    import trimesh

    (tmp_path / "parts").mkdir()
    trimesh.creation.box().export(tmp_path / "parts" / "ring.stl")
    body = (
        link("base", 0)
        + '<link name="arm"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>'
        '<visual><geometry><mesh filename="parts/ring.stl" scale="2 2 2 1"/></geometry></visual>'
        '<collision><geometry><cdf file="ring.cdf"/></geometry></collision></link>' + joint("j", "base", "arm")
    )
    with pytest.warns(ModelWarning) as rec:
        m = pbsim.load(write(tmp_path / "parts", body))  # the file is in parts/, the path is relative to its parent
    msgs = [str(w.message) for w in rec]
    assert any("has 4 numbers; the first 3 are used" in s for s in msgs)
    assert any("unsupported geometry <cdf> in <collision>; the shape is skipped" in s for s in msgs)
    (g,) = [g for g in m.geoms if g.shape == "mesh"]
    assert g.mesh_path.endswith("parts/ring.stl") and np.allclose(g.size, 2)


# ---------------------------------------------------------------------- bad input, named
@pytest.mark.parametrize(
    "body,pattern",
    [
        (
            link("base", 0) + link("arm", inertia=("nan", 0.1, 0.1)) + joint("j", "base", "arm"),
            r"robot\.urdf:\d+: <inertia ixx=\"nan\">: NaN or inf",
        ),
        (
            link("base", 0) + link("arm") + joint("j", "base", "arm", xyz="0 nan 0"),
            r"<origin xyz=\"0 nan 0\">: NaN or inf",
        ),
        (
            link("base", 0) + link("arm") + joint("j", "base", "arm", extra='<limit lower="nan" upper="1"/>'),
            r"robot\.urdf:\d+: <limit lower=\"nan\">: NaN or inf",
        ),
        (link("base", 0) + link("arm", mass="inf") + joint("j", "base", "arm"), r"<mass value=\"inf\">: NaN or inf"),
        (
            link("base", 0) + link("arm") + joint("j", "base", "arm", type="screw"),
            r"joint 'j' has unknown type 'screw'",
        ),
        (
            link("base", 0) + link("arm") + "<joint name='j' type='revolute'><parent link='base'/></joint>",
            r"joint 'j' needs",
        ),
    ],
    ids=["nan-inertia", "nan-origin", "nan-limit", "inf-mass", "joint-type", "no-child"],
)
def test_bad_urdf_values_are_named(tmp_path, body, pattern):
    with pytest.raises(ParseError, match=pattern):
        pbsim.load(write(tmp_path, body))


@pytest.mark.parametrize(
    "joint_attrs,pattern",
    [
        ('range="1 -1" limited="true"', r"m\.xml: MuJoCo could not compile it: .*range\[0\] should be smaller"),
        ('range="0 nan" limited="true"', r"m\.xml: joint 'j': range \[0\.0, nan\] is NaN or inf"),
        ('damping="nan"', r"m\.xml: joint 'j': damping \[nan\] is NaN or inf"),
        ('pos="nan 0 0"', r"m\.xml: joint 'j': pos \[nan, 0\.0, 0\.0\] is NaN or inf"),
        ('stiffness="inf"', r"m\.xml: joint 'j': stiffness inf is NaN or inf"),
        ('frictionloss="nan"', r"m\.xml: joint 'j': frictionloss \[nan\] is NaN or inf"),
    ],
)
def test_bad_mjcf_values_are_named(tmp_path, joint_attrs, pattern):
    xml = f"<mujoco><worldbody><body name='b' pos='0 0 1'><joint name='j' type='hinge' {joint_attrs}/><geom size='.1'/></body></worldbody></mujoco>"
    with pytest.raises(ParseError, match=pattern):
        pbsim.load(write(tmp_path, xml, "m.xml"))


def test_malformed_mjcf_xml(tmp_path):
    with pytest.raises(ParseError, match=r"m\.xml: MuJoCo could not compile it: .*XML"):
        pbsim.load(write(tmp_path, "<mujoco><worldbody><body></worldbody></mujoco>", "m.xml"))


def test_bad_loader_options(tmp_path):
    p = write(tmp_path, link("base", 0) + link("arm") + joint("j", "base", "arm"))
    with pytest.raises(ParseError, match="missing_meshes must be"):
        pbsim.load(p, missing_meshes="ignore")


# ---------------------------------------------------------------------- writers keep what the readers read
def test_writers_keep_passive_parameters_and_massless_inertia(tmp_path):
    from pbsim.io.export_mjcf import write_mjcf
    from pbsim.io.export_urdf import write_urdf

    m = pbsim.load(write(tmp_path, MJCF_PASSIVE, "m.xml"))
    write_mjcf(m, tmp_path / "back.xml")
    back = pbsim.load(tmp_path / "back.xml")
    for a in ("stiffness", "frictionloss", "damping", "springref"):
        assert np.allclose(getattr(back, a), getattr(m, a)), a
    body = (
        link("base", mass=0)
        + link("arm", mass=1, com="0.5 0 0")
        + link("rotor", mass=0, inertia=(0.2, 0.2, 0.3))
        + joint("j", "base", "arm", extra='<dynamics damping="0.5" friction="0.25"/>')
        + joint("k", "arm", "rotor", xyz="1 0 0")
    )
    u = pbsim.load(write(tmp_path, body))
    write_urdf(u, tmp_path / "back.urdf")
    back = pbsim.load(tmp_path / "back.urdf")
    assert back.frictionloss.tolist() == [0.25, 0.0] and back.damping.tolist() == [0.5, 0.0]
    Q, _, _ = random_states(u)
    assert np.allclose(pbsim.crba(back, Q), pbsim.crba(u, Q), rtol=1e-12, atol=1e-12)
    rep = write_mjcf(u, tmp_path / "u.xml")
    assert any("'rotor' has rotational inertia but no mass" in r for r in rep)
    mj = pbsim.load(tmp_path / "u.xml")
    assert np.allclose(pbsim.crba(mj, Q), pbsim.crba(u, Q), rtol=1e-8, atol=1e-8)


def test_colours_from_named_materials(tmp_path):
    """URDF shapes take the robot-level <material name> colour they name; an MJCF geom with
    MuJoCo's default rgba takes its material's colour, its own rgba otherwise (issue #20: the
    viewer drew such robots grey)."""
    inertial = '<inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>'
    u = tmp_path / "m.urdf"
    u.write_text(
        f"""<robot name="m"><material name="blue"><color rgba="0 0 0.8 1"/></material>
        <link name="a">{inertial}<visual><geometry><box size="1 1 1"/></geometry><material name="blue"/></visual>
        <visual><geometry><sphere radius="0.1"/></geometry><material name="red"><color rgba="1 0 0 1"/></material>
        </visual><visual><geometry><sphere radius="0.2"/></geometry><material name="undefined"/></visual></link></robot>"""
    )
    cols = [g.rgba.tolist() for g in pbsim.load(u).geoms if g.role == "visual"]
    assert cols == [[0, 0, 0.8, 1], [1, 0, 0, 1], [0.7, 0.7, 0.75, 1]]
    x = tmp_path / "m.xml"
    x.write_text(
        """<mujoco><asset><material name="green" rgba="0 1 0 1"/></asset><worldbody><body name="b">
        <joint type="hinge"/><geom size="0.1" mass="1" material="green"/>
        <geom size="0.1" mass="1" material="green" rgba="1 1 0 1"/><geom size="0.1" mass="1"/></body></worldbody></mujoco>"""
    )
    assert [g.rgba.tolist() for g in pbsim.load(x).geoms] == [[0, 1, 0, 1], [1, 1, 0, 1], [0.5, 0.5, 0.5, 1]]
