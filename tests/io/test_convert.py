"""convert(): URDF <-> MJCF through the Model, meshes next to the output, and the report."""

from __future__ import annotations

import numpy as np
import pytest

import pbsim
from pbsim.errors import ParseError
from pbsim.io.convert import ConvertReport, convert, dynamics_error, mujoco_dynamics_error, simplify_mesh
from tests.conftest import pybullet_file, robosimian_urdf

TOL = 1e-9


def test_urdf_to_mjcf_humanoid(tmp_path):
    """DeepMimic humanoid (ball joints, free base) -> MJCF: MuJoCo agrees with the source model."""
    src = pybullet_file("humanoid/humanoid.urdf")
    out = tmp_path / "h" / "humanoid.xml"
    rep = convert(src, out, floating_base=True)
    assert isinstance(rep, ConvertReport) and out.is_file()
    assert rep.nv == 34 and rep.nq == 43  # free base (6) + 12 ball (3) ... as pbsim.load counts
    m = pbsim.load(src, floating_base=True)
    assert mujoco_dynamics_error(m, out, nstates=5) < TOL
    assert "humanoid.xml" in str(rep)


def test_urdf_to_urdf_meshes_obj_hull_simplify(tmp_path):
    trimesh = pytest.importorskip("trimesh")
    src = robosimian_urdf()
    out = tmp_path / "rs.urdf"
    rep = convert(src, out, mesh_format="obj", convex_hull=True, simplify=100)
    written = sorted((tmp_path / "meshes").iterdir())
    assert written and all(p.suffix == ".obj" for p in written)
    for p in written:
        assert len(trimesh.load(p, force="mesh").faces) <= 100
    back = pbsim.load(out)
    assert all(g.mesh_path.endswith(".obj") for g in back.geoms if g.shape == "mesh")
    assert dynamics_error(pbsim.load(src), back, nstates=5) < TOL
    assert any("faces" in a for a in rep.actions)
    # robosimian's <dynamics friction> is reported as lost
    assert any("friction" in x for x in rep.lost)


def test_convex_hull_only_on_collision_meshes(tmp_path):
    pytest.importorskip("trimesh")
    src = pybullet_file("r2d2.urdf")
    rep = convert(src, tmp_path / "r2d2.xml", convex_hull=True)
    m = pbsim.load(src)
    n_coll = len({g.mesh_path for g in m.geoms if g.shape == "mesh" and g.role == "collision"})
    hulls = [d for _, d in rep.meshes if "_hull" in d]
    assert len(hulls) == n_coll
    mujoco = pytest.importorskip("mujoco")
    mujoco.MjModel.from_xml_path(str(tmp_path / "r2d2.xml"))


def test_generated_model_roundtrip_through_both_formats(tmp_path):
    """URDF -> MJCF -> (MuJoCo) and URDF -> URDF on a committed generated model."""
    from pathlib import Path

    gen = Path(__file__).resolve().parents[2] / "models" / "generated" / "ball2chain10.urdf"
    rep = convert(gen, tmp_path / "c.xml")
    assert any("merged" in x for x in rep.lost)  # massless universal-joint crosses become multi-joint bodies
    m = pbsim.load(gen)
    assert mujoco_dynamics_error(m, tmp_path / "c.xml", nstates=5) < TOL
    convert(gen, tmp_path / "c.urdf")
    assert dynamics_error(m, pbsim.load(tmp_path / "c.urdf"), nstates=5) < TOL


def test_bad_arguments(tmp_path):
    src = pybullet_file("pendulum5.urdf")
    with pytest.raises(ParseError, match="out.sdf"):
        convert(src, tmp_path / "out.sdf")
    with pytest.raises(ValueError, match="mesh_format"):
        convert(pybullet_file("r2d2.urdf"), tmp_path / "o.urdf", mesh_format="ply")
    with pytest.raises(ValueError, match="simplify"):
        convert(src, tmp_path / "o.urdf", simplify=2)
    with pytest.raises(ParseError, match="no such file"):
        convert(tmp_path / "missing.urdf", tmp_path / "o.xml")


def test_simplify_fallback_without_quadric(monkeypatch):
    """Vertex clustering keeps the face budget when fast_simplification is absent."""
    trimesh = pytest.importorskip("trimesh")
    mesh = trimesh.creation.icosphere(subdivisions=4)  # 5120 faces

    def boom(*a, **k):
        raise ImportError("no fast_simplification")

    monkeypatch.setattr(trimesh.Trimesh, "simplify_quadric_decimation", boom)
    out = simplify_mesh(mesh, 500)
    assert 0 < len(out.faces) <= 500
    assert np.allclose(out.bounds, mesh.bounds, atol=0.1)  # still the same sphere, roughly
    assert simplify_mesh(mesh, 10000) is mesh


def test_report_text_lists_losses(tmp_path):
    rep = convert(pybullet_file("humanoid/humanoid.urdf"), tmp_path / "h.urdf", floating_base=True)
    text = str(rep)
    assert "spherical" in text and "not represented" in text
    rep = convert(pybullet_file("pendulum5.urdf"), tmp_path / "p.xml")
    assert len(rep.lost) == 1 and "5 joint friction" in rep.lost[0]  # pendulum5 has friction="1.0"
    from pathlib import Path

    gen = Path(__file__).resolve().parents[2] / "models" / "generated" / "chain10.urdf"
    rep = convert(gen, tmp_path / "c.xml")
    assert rep.lost == [] and "everything in the model is represented" in str(rep)


def _mesh_bounds_by_body(model):
    """Every mesh shape's body-frame bounds, grouped by body and sorted (file order may differ)."""
    out: dict = {}
    for g in model.geoms:
        if g.shape == "mesh":
            out.setdefault((model.body_names[g.body], g.role), []).append(np.round(g.load_mesh().bounds.ravel(), 9))
    return {k: sorted(map(tuple, v)) for k, v in out.items()}


def test_mjcf_with_mesh_geoms_to_urdf_writes_the_meshes(tmp_path):
    """An MJCF whose bodies carry <mesh> geoms (MuJoCo holds the meshes in memory) -> URDF: every
    mesh is written as a file the URDF references, on every body (the builder used to drop
    the in-memory mesh of every body but the root, and mesh_ref then failed on a None path)."""
    trimesh = pytest.importorskip("trimesh")
    box = trimesh.creation.box((0.1, 0.2, 0.3))
    box.export(tmp_path / "part.obj")
    xml = tmp_path / "arm.xml"
    xml.write_text(
        """<mujoco model="arm"><asset><mesh name="part" file="part.obj"/></asset><worldbody>
        <body name="a" pos="0 0 1"><joint name="j1" type="hinge" axis="0 1 0"/>
          <geom type="mesh" mesh="part" mass="1" pos="0.1 0 0"/>
          <body name="b" pos="0.3 0 0" euler="0 0 30"><joint name="j2" type="hinge" axis="0 1 0"/>
            <geom type="mesh" mesh="part" mass="1" pos="0 0 -0.2" contype="0" conaffinity="0"/>
            <geom type="capsule" size="0.02 0.1" mass="0.1"/></body></body></worldbody></mujoco>"""
    )
    src = pbsim.load(xml)
    assert all(g.mesh_data is not None for g in src.geoms if g.shape == "mesh")
    out = tmp_path / "out" / "arm.urdf"
    rep = convert(xml, out)
    assert rep.meshes and all((out.parent / dst).is_file() for _, dst in rep.meshes)
    back = pbsim.load(out)
    assert all(g.mesh_path for g in back.geoms if g.shape == "mesh")
    a, b = _mesh_bounds_by_body(src), _mesh_bounds_by_body(back)
    assert a.keys() == b.keys() and len(a) == 2
    for k in a:
        np.testing.assert_allclose(np.array(a[k]), np.array(b[k]), atol=1e-6)
    assert dynamics_error(src, back, nstates=5) < TOL


def test_convert_a_generated_model(tmp_path, capsys):
    """convert() takes a Model built in code, and `pbsim convert chain10 out.xml` a generated name."""
    import pbsim_models
    from pbsim.cli import main

    m = pbsim_models.by_name("chain10")
    rep = convert(m, tmp_path / "c.urdf")
    assert rep.in_path == m.name and dynamics_error(m, pbsim.load(tmp_path / "c.urdf"), nstates=3) < TOL
    assert main(["convert", "chain10", str(tmp_path / "c.xml")]) == 0
    assert dynamics_error(m, pbsim.load(tmp_path / "c.xml"), nstates=3) < TOL
    with pytest.raises(ValueError, match="apply to a file"):
        convert(m, tmp_path / "d.xml", floating_base=True)
