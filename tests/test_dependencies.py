"""Every third-party module a documented command needs is installed and declared in pyproject.toml.

These tests FAIL (never skip) when a module is missing: the README's install command
(``pip install '.[test,viewer]'``) must bring everything, so a dependency missing from
pyproject.toml shows up here in CI instead of as a failure deep inside another test.
Some are not imported by pbsim itself but by trimesh on demand: ``rtree`` (ray and proximity
queries: ``pbsim.contact.environment.envelope_faces``) and ``collada`` (pycollada: loading .dae
meshes), so they are exercised through trimesh as pbsim uses it.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

# import name -> (distribution on PyPI, group of pyproject.toml that must declare it, who needs it)
MODULES = {
    "numpy": ("numpy", "base", "everything"),
    "numba": ("numba", "base", "the CPU kernels"),
    "llvmlite": ("llvmlite", "base", "pbsim.jit.DriverLibrary (numba's own dependency)"),
    "scipy": ("scipy", "base", "trimesh convex hulls (pbsim convert), graph ops"),
    "trimesh": ("trimesh", "base", "meshes: terrain, URDF/MJCF meshes, pbsim convert, viewer"),
    "rtree": ("rtree", "base", "trimesh ray/proximity queries (terrain envelope_faces)"),
    "collada": ("pycollada", "base", "trimesh .dae loading (URDF COLLADA meshes)"),
    "lxml": ("lxml", "base", "URDF/MJCF reading and writing"),
    "mujoco": ("mujoco", "base", "MJCF loading, pbsim convert"),
    "tqdm": ("tqdm", "base", "pbsim rollout progress bar"),
    "matplotlib": ("matplotlib", "base", "pbsim rollout --plot, viewer plots"),
    "PIL": ("pillow", "base", "HeightField.from_image, viewer screenshots/GIFs"),
    "pyglet": ("pyglet", "viewer", "pbsim view"),
    "imgui_bundle": ("imgui-bundle", "viewer", "pbsim view panel"),
    "OpenGL": ("pyopengl", "viewer", "imgui_bundle's pyglet/OpenGL backend (pbsim view)"),
    "imageio_ffmpeg": ("imageio-ffmpeg", "viewer", "pbsim view --record out.mp4"),
    "cma": ("cma", "base", "pbsim.optim.cmaes, pbsim optimize"),
    "gymnasium": ("gymnasium", "envs", "pbsim.envs (the gymnasium environments)"),
    "ray": ("ray", "sweep", "pbsim sweep (pbsim.sweep: tasks on Ray)"),
}
BASE = [m for m, (_, g, _) in MODULES.items() if g == "base"]
VIEWER = [m for m, (_, g, _) in MODULES.items() if g == "viewer"]
FIRST_PARTY = {"pbsim", "pbsim_models", "pbsim_viewer"}


def _need(mod: str):
    """Import ``mod`` or fail naming the distribution and the extra that brings it."""
    dist, group, why = MODULES[mod]
    try:
        return importlib.import_module(mod)
    except ImportError as e:
        err = e
    extra = "." if group == "base" else f"'.[{group}]'"
    pytest.fail(
        f"{mod!r} is not importable ({err}); needed for {why}: pip install {extra} "
        f"(pyproject.toml must list {dist!r} in {'dependencies' if group == 'base' else group})",
        pytrace=False,
    )


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> dict[str, set[str]]:
    """{"base": {normalized names}, extra: {...}} from pyproject.toml."""
    proj = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def names(reqs):
        return {_norm(re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", r).group(1)) for r in reqs}

    out = {"base": names(proj.get("dependencies", []))}
    for extra, reqs in proj.get("optional-dependencies", {}).items():
        out[extra] = names(reqs)
    return out


@pytest.mark.parametrize("mod", BASE)
def test_base_module_importable(mod):
    _need(mod)


@pytest.mark.parametrize("mod", VIEWER)
def test_viewer_module_importable(mod, monkeypatch):
    # headless: only what imports without a display (pyglet.gl and the renderer need a GL
    # context; tests/viewer covers them under EGL)
    monkeypatch.delenv("DISPLAY", raising=False)
    m = _need(mod)
    if mod == "imgui_bundle":
        from imgui_bundle import imgui, implot  # noqa: F401
    if mod == "imageio_ffmpeg":
        exe = m.get_ffmpeg_exe()
        assert exe and Path(exe).is_file(), f"imageio_ffmpeg has no ffmpeg binary: {exe!r}"


def test_trimesh_ray_query_needs_rtree():
    """The ray query pbsim's terrain code makes (mesh.ray.intersects_location, first hit) and a
    proximity query, on a generated box: both need rtree."""
    _need("rtree")
    trimesh = _need("trimesh")
    box = trimesh.creation.box(extents=[2.0, 2.0, 1.0])  # top face at z = 0.5
    P = np.array([[0.1, -0.2, 5.0], [0.3, 0.4, 5.0], [9.0, 9.0, 5.0]])
    locs, ri, _ = box.ray.intersects_location(P, np.tile([0.0, 0.0, -1.0], (3, 1)), multiple_hits=False)
    assert sorted(ri.tolist()) == [0, 1]
    np.testing.assert_allclose(locs[:, 2], 0.5)
    _, dist, _ = trimesh.proximity.closest_point(box, [[0.0, 0.0, 3.0]])
    np.testing.assert_allclose(dist, [2.5])


def test_envelope_faces_on_open_mesh():
    """pbsim's own use: the upward envelope of an open two-level slab keeps the top, drops the
    underside (trimesh ray queries through rtree)."""
    _need("rtree")
    from pbsim.contact.environment import envelope_faces

    # two stacked horizontal squares (2 triangles each), the top at z = 1, the bottom at z = 0
    sq = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], float)
    V = np.r_[np.c_[sq, np.zeros(4)], np.c_[sq, np.ones(4)]]
    F = np.array([[0, 2, 1], [0, 3, 2], [4, 5, 6], [4, 6, 7]])
    kept = envelope_faces(V, F)
    assert sorted(map(tuple, kept.tolist())) == [(4, 5, 6), (4, 6, 7)]


def test_trimesh_loads_collada_dae(tmp_path):
    """A generated .dae loads through trimesh (as URDF visual meshes do): needs pycollada."""
    _need("collada")
    trimesh = _need("trimesh")
    box = trimesh.creation.box(extents=[0.2, 0.4, 0.6])
    path = tmp_path / "box.dae"
    path.write_bytes(trimesh.exchange.dae.export_collada(box))
    mesh = trimesh.load(str(path), force="mesh", process=False)
    assert len(mesh.faces) == 12
    np.testing.assert_allclose(mesh.extents, [0.2, 0.4, 0.6], atol=1e-9)


def test_pbsim_geometry_loads_stl_obj_dae(tmp_path):
    """``Geometry.load_mesh`` (URDF/MJCF mesh geoms) on the three formats URDFs reference."""
    _need("collada")
    trimesh = _need("trimesh")
    from pbsim.model.geometry import Geometry

    box = trimesh.creation.box(extents=[0.2, 0.4, 0.6])
    for ext in ("stl", "obj", "dae"):
        p = tmp_path / f"box.{ext}"
        box.export(str(p))
        g = Geometry("g", "mesh", 0, np.eye(3), np.zeros(3), np.ones(3), mesh_path=str(p))
        m = g.load_mesh()
        np.testing.assert_allclose(m.extents, [0.2, 0.4, 0.6], atol=1e-6, err_msg=ext)


@pytest.mark.parametrize("mod", list(MODULES))
def test_module_is_declared_in_pyproject(mod):
    """Each module maps to a distribution that pyproject.toml declares (in the base
    dependencies, or for viewer modules in the base or the 'viewer' extra)."""
    dist, group, why = MODULES[mod]
    declared = _declared()
    allowed = declared["base"] | (declared.get(group, set()) if group != "base" else set())
    installed = {_norm(d) for d in importlib.metadata.packages_distributions().get(mod, [])}
    candidates = installed or {_norm(dist)}
    assert candidates & allowed, (
        f"{mod!r} (distribution {sorted(candidates)}, needed for {why}) is not declared "
        f"in pyproject.toml {'dependencies' if group == 'base' else f'[{group}] extra'}"
    )


def test_every_third_party_import_is_listed():
    """Every top-level third-party import in pbsim/ and viewer/ is one of MODULES (so that the
    tests above, and pyproject.toml, cover it).  numba.cuda (numba-cuda, the 'gpu' extra) is
    imported lazily and guarded, with an install hint."""
    found: dict[str, set[str]] = {}
    for root in ("pbsim", "viewer"):
        for p in sorted((ROOT / root).rglob("*.py")):
            for n in ast.walk(ast.parse(p.read_text(), str(p))):
                names = (
                    [a.name for a in n.names]
                    if isinstance(n, ast.Import)
                    else [n.module]
                    if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module
                    else []
                )
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in FIRST_PARTY:
                        found.setdefault(top, set()).add(str(p.relative_to(ROOT)))
    # cuda.bindings (cuda-bindings, installed with numba-cuda: the 'gpu' extra) is probed inside a
    # try block by pbsim.backends.cuda.toolkit_missing, which reports it missing, never raises
    gpu_guarded = {"cuda"}
    # optional formats of pbsim.sweep, imported only when asked for, with an install hint:
    # pyarrow (--out x.parquet), yaml (a .yaml spec file)
    optional = {"pyarrow", "yaml"}
    unknown = {k: sorted(v) for k, v in found.items() if k not in MODULES and k not in gpu_guarded | optional}
    assert not unknown, f"third-party imports not covered by tests/test_dependencies.py MODULES: {unknown}"


def test_gpu_extra_declares_numba_cuda():
    assert "numba-cuda" in _declared().get("gpu", set())
