"""Environment geometry: analytic shapes exact, SDF grid vs trimesh exact distance, bad input."""

import numpy as np
import pytest
import trimesh

from conftest import terrain_file
from pbsim.contact import (
    Box,
    Capsule,
    EmptyMeshError,
    GridBudgetError,
    HeightField,
    MeshTerrain,
    OpenMeshError,
    Plane,
    Sphere,
)
from pbsim.contact.environment import ContactInputError, envelope_faces, pack_environment
from pbsim.contact.query import env_sdf_points
from pbsim.contact.scene import make_kscene


def ks_of(env):
    return make_kscene(
        0,
        np.zeros(0, np.int32),
        np.zeros((0, 3)),
        np.zeros(0),
        np.zeros(0),
        np.zeros(0),
        0.0,
        0.01,
        pack_environment(env),
    )


def query(env, X):
    out = np.zeros((len(X), 4))
    env_sdf_points(ks_of(env), np.ascontiguousarray(X, float), out)
    return out


def rot(axis, a):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(a) * K + (1 - np.cos(a)) * K @ K


def test_analytic_shapes_exact(rng):
    X = rng.uniform(-2, 2, (500, 3))
    n = np.array([0.3, -0.2, 0.9])
    out = query([Plane(n, 0.4)], X)
    nn = n / np.linalg.norm(n)
    assert np.abs(out[:, 0] - (X @ nn - 0.4)).max() < 1e-12
    assert np.abs(out[:, 1:] - nn).max() < 1e-12
    c = np.array([0.1, 0.2, -0.3])
    out = query([Sphere(c, 0.5)], X)
    r = np.linalg.norm(X - c, axis=1)
    assert np.abs(out[:, 0] - (r - 0.5)).max() < 1e-12
    assert np.abs(out[:, 1:] - (X - c) / r[:, None]).max() < 1e-12
    a, b = np.array([0, 0, 0.0]), np.array([1.0, 0.5, 0.2])
    out = query([Capsule(a, b, 0.3)], X)
    t = np.clip((X - a) @ (b - a) / ((b - a) @ (b - a)), 0, 1)
    dv = X - (a + t[:, None] * (b - a))
    assert np.abs(out[:, 0] - (np.linalg.norm(dv, axis=1) - 0.3)).max() < 1e-12
    # box: points outside a face, at an edge, a corner, and inside
    R = rot([1, 2, 3], 0.7)
    p = np.array([0.3, -0.1, 0.2])
    h = np.array([0.5, 0.3, 0.2])
    loc = np.array([[0.9, 0.1, 0.0], [0.7, 0.5, 0.05], [0.6, 0.4, 0.5], [0.1, 0.05, -0.15], [-0.2, 0.25, 0.0]])
    want_phi = [0.4, np.hypot(0.2, 0.2), np.linalg.norm([0.1, 0.1, 0.3]), -0.05, -0.05]
    want_n = [
        [1, 0, 0],
        [1 / np.sqrt(2), 1 / np.sqrt(2), 0],
        np.array([0.1, 0.1, 0.3]) / np.linalg.norm([0.1, 0.1, 0.3]),
        [0, 0, -1],
        [0, 1, 0],
    ]
    out = query([Box(h, R, p)], loc @ R.T + p)
    assert np.abs(out[:, 0] - want_phi).max() < 1e-12
    assert np.abs(out[:, 1:] - np.asarray(want_n) @ R.T).max() < 1e-12


def test_heightfield_planar_patch_exact(rng):
    xs, ys = np.linspace(-1, 1, 11), np.linspace(-2, 2, 21)
    H = 0.2 * xs[:, None] - 0.1 * ys[None, :] + 0.05
    X = np.c_[rng.uniform(-0.9, 0.9, 200), rng.uniform(-1.9, 1.9, 200), rng.uniform(-0.5, 0.5, 200)]
    out = query([HeightField(H, (-1, 1, -2, 2))], X)
    n = np.array([-0.2, 0.1, 1.0]) / np.linalg.norm([-0.2, 0.1, 1.0])
    assert np.abs(out[:, 0] - (X @ n - 0.05 * n[2])).max() < 1e-12
    assert np.abs(out[:, 1:] - n).max() < 1e-12


def _seg_dist(P, A, B):
    out = np.full(len(P), np.inf)
    for s in range(0, len(A), 400):
        a, b = A[s : s + 400][None], B[s : s + 400][None]
        ab = b - a
        t = np.clip(((P[:, None] - a) * ab).sum(-1) / np.maximum((ab * ab).sum(-1), 1e-30), 0, 1)
        out = np.minimum(out, np.linalg.norm(P[:, None] - (a + t[..., None] * ab), axis=-1).min(1))
    return out


@pytest.mark.parametrize("name,h", [("ridges.off", 0.05), ("drc_rough_terrain.stl", 0.03)])
def test_grid_vs_trimesh(name, h):
    """|phi_grid - phi| <= (sqrt(3)/2) h on points within 5 cm of the surface (away from the
    mesh's open boundary), and normals within 5 deg away from sharp edges, inside and outside.

    Oracle: trimesh's exact closest-point distance to the height-solid boundary (the envelope
    faces), signed by the same documented open-mesh rule (below the highest crossing = inside)
    evaluated by trimesh ray casting.  Normal rule (documented in envelope_faces and
    docs/benchmarks/contact.md): normals are checked where the oracle's closest point is EXPOSED
    (not under another part of the terrain): envelope faces are kept whole, so the buried part of
    a ground triangle under a block is still a face of both the grid and the oracle."""
    f = terrain_file(name)
    T = MeshTerrain.from_file(f, spacing=h, padding=0.1, exact_band=0.1)
    raw = trimesh.load(str(f), force="mesh")
    mesh = trimesh.Trimesh(raw.vertices, envelope_faces(np.asarray(raw.vertices), np.asarray(raw.faces)), process=False)

    def top_z(P):
        locs, ri, _ = mesh.ray.intersects_location(
            np.c_[P[:, :2], np.full(len(P), 100.0)], np.tile([0, 0, -1.0], (len(P), 1)), multiple_hits=False
        )
        tp = np.full(len(P), -np.inf)
        tp[ri] = locs[:, 2]
        return tp

    rng = np.random.default_rng(7)
    P, _ = trimesh.sample.sample_surface(mesh, 2000, seed=3)
    d = rng.normal(size=P.shape)
    X = P + d / np.linalg.norm(d, axis=1)[:, None] * rng.uniform(0, 0.05, (len(P), 1))
    cp, dist, tri = trimesh.proximity.closest_point(mesh, X)
    sd = np.where(X[:, 2] < top_z(X), -dist, dist)
    E = mesh.edges_sorted
    bnd = E[trimesh.grouping.group_rows(E, require_count=1)]
    ang = mesh.face_adjacency_angles
    sharp = np.r_[mesh.face_adjacency_edges[np.minimum(ang, np.pi - ang) > np.radians(2)], bnd]
    V = mesh.vertices
    db = _seg_dist(X, V[bnd[:, 0]], V[bnd[:, 1]]) if len(bnd) else np.full(len(X), np.inf)
    ds = _seg_dist(X, V[sharp[:, 0]], V[sharp[:, 1]])
    out = query([T], X)
    err = np.abs(out[:, 0] - sd)
    ok = db > 0.05 + 2 * h
    assert ok.sum() > 300
    assert err[ok].max() <= T.bound, (err[ok].max(), T.bound)
    fn = mesh.face_normals[tri]
    exposed = cp[:, 2] >= np.minimum(top_z(cp + 1e-4 * fn), top_z(cp - 1e-4 * fn)) - 1e-6
    far = ok & exposed & (ds > np.abs(sd) + 2 * np.sqrt(3) * h) & (np.abs(sd) > 1e-6)
    assert (far & (sd > 0)).sum() > 100 and (far & (sd < 0)).sum() > 100
    no = (X - cp) / dist[:, None] * np.sign(sd)[:, None]
    cosang = (no * out[:, 1:]).sum(1) / np.linalg.norm(out[:, 1:], axis=1)
    angd = np.degrees(np.arccos(np.clip(cosang[far], -1, 1)))
    if name == "ridges.off":
        assert angd.max() < 5.0, angd.max()
    else:  # a few drc points near block edges reach ~6-7 deg (docs/benchmarks/contact.md)
        assert np.percentile(angd, 95) < 5.0 and angd.max() < 10.0, (np.percentile(angd, 95), angd.max())


def test_buried_walls_dropped():
    """An open ground sheet with a box buried under it (as drc's block sides below the ground
    top): buried walls are not boundary of the height solid, so a point just under the ground
    next to one gets the ground's normal (+z), not the wall's (the drc bug: inside normals up to
    111 deg).  Open-mesh rule: ``envelope_faces`` keeps walls that rise above an adjacent column."""
    sheet = trimesh.Trimesh([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], [[0, 1, 2], [0, 2, 3]])
    buried = trimesh.creation.box([0.4, 0.4, 0.14])
    buried.apply_translation([0, 0, -0.08])  # z in [-0.15, -0.01]: all of it under the sheet
    both = trimesh.util.concatenate([sheet, buried])
    F = envelope_faces(np.asarray(both.vertices), np.asarray(both.faces))
    assert len(F) == 2  # only the sheet
    T = MeshTerrain.from_mesh(both, spacing=0.01, padding=0.1, exact_band=0.1)
    assert not T.closed
    out = query([T], np.array([[0.203, 0.0, -0.02], [0.195, 0.1, -0.03], [0.3, 0.1, 0.01]]))
    assert np.abs(out[:, 0] - [-0.02, -0.03, 0.01]).max() < T.bound
    assert np.degrees(np.arccos(np.clip(out[:, 3], -1, 1))).max() < 5.0


def test_axis_permuted_terrain_is_exact_permutation():
    """z-up terrain under a y-up robot: the grid is built in the file's frame (height rule along
    the file's +z) and its axes permuted, so phi and normals equal the rotated z-up ones."""
    f = terrain_file("ridges.off")
    A = MeshTerrain.from_file(f, spacing=0.05, exact_band=0.15)
    R = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]])  # file z -> world y
    Tm = np.eye(4)
    Tm[:3, :3] = R
    Tm[:3, 3] = [0.3, -0.2, 0.1]
    B = MeshTerrain.from_file(f, spacing=0.05, exact_band=0.15, transform=Tm)
    X = np.random.default_rng(0).uniform(A.origin, A.origin + (np.array(A.phi.shape) - 1) * 0.05, (3000, 3))
    a, b = query([A], X), query([B], X @ R.T + Tm[:3, 3])
    assert (a[:, 0] < 0).sum() > 100
    assert np.abs(a[:, 0] - b[:, 0]).max() < 1e-8
    m = np.abs(a[:, 0]) < A.band - 0.02  # unclamped: non-zero gradient
    assert m.sum() > 100 and np.abs(a[m, 1:] @ R.T - b[m, 1:]).max() < 1e-6


def test_closed_mesh_parity_sign():
    box = trimesh.creation.box([1.0, 1.0, 0.5])
    T = MeshTerrain.from_mesh(box, spacing=0.05, padding=0.1, exact_band=0.3)
    assert T.closed
    out = query([T], np.array([[0.0, 0, 0], [0.0, 0, 0.4], [0.1, 0.2, -0.2], [0.7, 0, 0]]))
    assert np.abs(out[:, 0] - [-0.25, 0.15, -0.05, 0.2]).max() < T.bound


def test_bad_terrain_input(tmp_path):
    with pytest.raises(EmptyMeshError):
        MeshTerrain.from_mesh(trimesh.Trimesh(np.zeros((0, 3)), np.zeros((0, 3), int)))
    sheet = trimesh.Trimesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]])
    with pytest.raises(OpenMeshError, match="not watertight"):
        MeshTerrain.from_mesh(sheet, open_mesh="error")
    with pytest.raises(GridBudgetError) as ei:
        MeshTerrain.from_mesh(sheet, spacing=1e-3, max_bytes=2**20)
    assert ei.value.requested > 2**20 and "MiB" in str(ei.value)
    with pytest.raises(ContactInputError, match="does not exist"):
        MeshTerrain.from_file(tmp_path / "nope.stl")
    with pytest.raises(ContactInputError, match="plane normal"):
        Plane([0, 0, 0])
    with pytest.raises(ContactInputError, match="heightfield"):
        HeightField(np.zeros(3))
