"""Bad input gets a named error: file and line, element, value."""

import warnings

import numpy as np
import pytest

import pbsim
from pbsim.errors import InertiaError, InputError, MeshNotFoundError, ParseError

GOOD_LINK = """<link name="{n}"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>"""


def write(tmp_path, text, name="robot.urdf"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def urdf(body, joints=""):
    return f"<robot name='r'>{body}{joints}</robot>"


def test_malformed_xml_names_file_and_line(tmp_path):
    p = write(tmp_path, "<robot name='r'>\n<link name='a'>\n<inertial>\n</link>\n</robot>")
    with pytest.raises(ParseError, match=r"robot\.urdf:4: malformed XML"):
        pbsim.load(p)


def test_unknown_joint_type(tmp_path):
    p = write(
        tmp_path,
        urdf(
            GOOD_LINK.format(n="a") + GOOD_LINK.format(n="b"),
            "\n<joint name='j' type='helical'><parent link='a'/><child link='b'/></joint>",
        ),
    )
    with pytest.raises(ParseError, match=r"robot\.urdf:2: joint 'j' has unknown type 'helical'"):
        pbsim.load(p)


def test_missing_mesh_names_resolved_paths(tmp_path):
    body = """<link name="a"><collision><geometry><mesh filename="package://mypkg/meshes/arm.stl"/></geometry></collision></link>"""
    p = write(tmp_path, urdf(body))
    with pytest.raises(
        MeshNotFoundError, match=r"mesh 'package://mypkg/meshes/arm.stl' not found; tried: .*mypkg/meshes/arm.stl"
    ):
        pbsim.load(p)


def test_missing_visual_mesh_is_a_note_missing_collision_mesh_an_error(tmp_path, capsys):
    """As pybullet: a visual mesh that cannot be found is skipped with a warning (the viewer draws
    the link's collision shapes), a missing collision mesh is a MeshNotFoundError unless
    missing_meshes="warn" / `--allow-missing-meshes`; `pbsim info` shows the notes."""
    from pbsim.cli import main
    from pbsim.model.notes import ModelWarning

    vis = """<visual><geometry><mesh filename="nope.dae"/></geometry></visual>"""
    col = """<collision><geometry><mesh filename="gone.stl"/></geometry></collision>"""
    box = """<collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision>"""
    link = """<link name="{n}"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>
    </inertial>{g}</link>"""
    p = write(tmp_path, urdf(link.format(n="a", g=vis + box)))
    with pytest.warns(ModelWarning, match="'nope.dae' not found.*the visual shape is skipped"):
        m = pbsim.load(p)
    assert [g.shape for g in m.geoms] == ["box"] and any("nope.dae" in n for n in m.notes)
    with pytest.warns(ModelWarning):
        assert main(["info", str(p)]) == 0
    assert "nope.dae" in capsys.readouterr().out
    joint = "<joint name='j' type='revolute'><parent link='a'/><child link='b'/><axis xyz='0 1 0'/></joint>"
    p = write(tmp_path, urdf(link.format(n="a", g=vis + box) + link.format(n="b", g=col) + joint))
    with pytest.raises(MeshNotFoundError, match="gone.stl"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pbsim.load(p)
    with pytest.warns(ModelWarning, match="'gone.stl' not found.*the shape is skipped"):
        assert pbsim.load(p, missing_meshes="warn").nb == 2
    with pytest.warns(ModelWarning):
        assert main(["info", str(p), "--allow-missing-meshes"]) == 0
    with pytest.warns(ModelWarning):
        assert main(["info", str(p)]) == 2
    assert "gone.stl" in capsys.readouterr().err


def test_package_map_resolves_mesh(tmp_path):
    import trimesh

    pkg = tmp_path / "pkgroot"
    (pkg / "meshes").mkdir(parents=True)
    trimesh.creation.box().export(pkg / "meshes" / "arm.stl")
    body = """<link name="a"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><mesh filename="package://mypkg/meshes/arm.stl" scale="2 2 2"/></geometry></visual></link>"""
    (tmp_path / "urdf").mkdir()
    p = write(tmp_path / "urdf", urdf(body))
    m = pbsim.load(p, package_map={"mypkg": str(pkg)})
    g = [g for g in m.geoms if g.shape == "mesh"][0]
    assert g.mesh_path.endswith("arm.stl") and np.allclose(g.size, 2)
    assert np.allclose(g.load_mesh().extents, 2.0)


def test_bad_inertia_names_body_and_link(tmp_path):
    """A merged body with a negative principal moment: InertiaError naming the body and the link."""
    body = (
        '<link name="base"/><link name="arm"><inertial><mass value="1"/>'
        '<inertia ixx="-0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
    )
    joint = "<joint name='j' type='revolute'><parent link='base'/><child link='arm'/><axis xyz='0 0 1'/></joint>"
    p = write(tmp_path, urdf(body, joint))
    with pytest.raises(InertiaError, match=r"robot\.urdf: body 'arm' of joint 'j'.*not positive definite.*link 'arm'"):
        pbsim.load(p)
    m = pbsim.load(p, fix_inertia=True)  # projected to the nearest valid inertia
    w = np.linalg.eigvalsh(m.inertia_com[-1])
    assert w.min() > 0 and w[0] + w[1] >= w[2] * (1 - 1e-9)
    assert any("projected" in n and "'arm'" in n for n in m.notes)


def test_triangle_violation_loads_with_a_warning(tmp_path):
    from pbsim.model.notes import ModelWarning

    body = (
        '<link name="base"/><link name="arm"><inertial><mass value="1"/>'
        '<inertia ixx="0.01" iyy="0.01" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
    )
    joint = "<joint name='j' type='revolute'><parent link='base'/><child link='arm'/><axis xyz='0 0 1'/></joint>"
    p = write(tmp_path, urdf(body, joint))
    with pytest.warns(ModelWarning, match=r"robot\.urdf: link 'arm'.*triangle inequality.*loaded as written"):
        m = pbsim.load(p)
    assert np.allclose(np.diag(m.inertia_com[m.body_index("arm")]), [0.01, 0.01, 0.1])
    assert any("triangle" in n for n in m.notes)
    m = pbsim.load(p, fix_inertia=True)
    w = np.linalg.eigvalsh(m.inertia_com[-1])
    assert w[0] + w[1] >= w[2] * (1 - 1e-9)


def test_massless_leaf_gets_armature_and_no_nan(tmp_path):
    body = GOOD_LINK.format(n="base") + "<link name='tip'/>"
    joint = "<joint name='j' type='revolute'><parent link='base'/><child link='tip'/><axis xyz='0 0 1'/></joint>"
    p = write(tmp_path, urdf(body, joint))
    with pytest.warns(UserWarning, match="joint 'j' moves no mass"):
        m = pbsim.load(p)
    qdd = pbsim.aba(m, m.neutral(), np.zeros(m.nv), np.ones(m.nv))
    assert np.all(np.isfinite(qdd))
    assert any("armature" in n for n in m.notes)


def test_mimic_joint_refused_when_asked(tmp_path):
    body = GOOD_LINK.format(n="a") + GOOD_LINK.format(n="b") + GOOD_LINK.format(n="c")
    joints = (
        "<joint name='j1' type='revolute'><parent link='a'/><child link='b'/></joint>\n"
        "<joint name='j2' type='revolute'><parent link='b'/><child link='c'/><mimic joint='j1' multiplier='2'/></joint>"
    )
    p = write(tmp_path, urdf(body, joints))
    with pytest.raises(ParseError, match=r"robot\.urdf:2: joint 'j2' mimics joint 'j1' \(multiplier 2.*refused"):
        pbsim.load(p, mimic="error")
    with pytest.raises(ParseError, match="mimic must be one of"):
        pbsim.load(p, mimic="coupled")
    assert pbsim.load(p).mimic == [("j2", "j1", 2.0, 0.0)]  # the default couples it (tests/io/test_mimic.py)


def test_axis_default_and_normalisation(tmp_path):
    body = GOOD_LINK.format(n="a") + GOOD_LINK.format(n="b") + GOOD_LINK.format(n="c")
    joints = (
        "<joint name='j1' type='revolute'><parent link='a'/><child link='b'/></joint>"
        "<joint name='j2' type='prismatic'><parent link='b'/><child link='c'/><axis xyz='0 0 5'/></joint>"
    )
    m = pbsim.load(write(tmp_path, urdf(body, joints)), floating_base=False)
    assert np.allclose(m.axis[0], [1, 0, 0]) and np.allclose(m.axis[1], [0, 0, 1])


def test_unknown_extension_and_missing_file(tmp_path):
    with pytest.raises(ParseError, match="unknown robot file type"):
        pbsim.load(tmp_path / "robot.sdf")
    with pytest.raises(ParseError, match="no such file"):
        pbsim.load(tmp_path / "nope.urdf")


def test_mjcf_compile_error_is_named(tmp_path):
    p = write(tmp_path, "<mujoco><worldbody><body><joint type='bogus'/></body></worldbody></mujoco>", "m.xml")
    with pytest.raises(ParseError, match=r"m\.xml: MuJoCo could not compile it"):
        pbsim.load(p)


@pytest.fixture(scope="module")
def chain():
    import pbsim_models

    return pbsim_models.chain(3)


def test_api_rejects_nan_and_shapes(chain):
    q = np.zeros(3)
    with pytest.raises(InputError, match=r"q\[1\] is nan"):
        pbsim.aba(chain, [0.0, np.nan, 0.0], q, q)
    with pytest.raises(InputError, match=r"v must have shape \(3,\) or \(B, 3\); got \(4,\)"):
        pbsim.aba(chain, q, np.zeros(4), q)
    with pytest.raises(InputError, match="tau has batch size 2, expected 3"):
        pbsim.aba(chain, np.zeros((3, 3)), np.zeros((3, 3)), np.zeros((2, 3)))


@pytest.mark.parametrize("dt", [-1e-3, 0.0, float("nan")])
def test_non_positive_dt_rejected(chain, dt):
    with pytest.raises(InputError, match="time step dt must be a positive"):
        pbsim.rollout(chain, "euler", dt=dt, steps=1)


def test_unknown_integrator(chain):
    with pytest.raises(InputError, match="unknown integrator 'verlet'"):
        pbsim.rollout(chain, "verlet", dt=1e-3, steps=1)


def test_divergence_is_reported(chain):
    from pbsim.errors import SimulationError

    with pytest.raises(SimulationError, match="diverged .* at step"):
        pbsim.rollout(chain, "explicit_euler", dt=0.5, steps=400, q0=[1.0, 2.0, -2.0], v0=[50, -50, 50])
