"""Shape triangles for drawing (no GL): primitives and meshes in their body frame."""

from __future__ import annotations

import numpy as np


def primitive_mesh(g):
    """Triangles (F, 3, 3) of a primitive Geometry in its body frame, or None."""
    import trimesh

    if g.shape == "mesh":
        m = g.load_mesh()
        return np.asarray(m.vertices, float)[np.asarray(m.faces)]
    if g.shape == "box":
        m = trimesh.creation.box(extents=2 * np.asarray(g.size[:3], float))
    elif g.shape == "sphere":
        m = trimesh.creation.icosphere(subdivisions=2, radius=float(g.size[0]))
    elif g.shape == "capsule":
        m = trimesh.creation.capsule(height=2 * float(g.size[1]), radius=float(g.size[0]), count=[16, 16])
    elif g.shape == "cylinder":
        m = trimesh.creation.cylinder(radius=float(g.size[0]), height=2 * float(g.size[1]), sections=20)
    elif g.shape == "ellipsoid":
        m = trimesh.creation.icosphere(subdivisions=3, radius=1.0)
        m.apply_scale(np.asarray(g.size[:3], float))
    elif g.shape == "hfield" and g.hfield is not None:
        m = hfield_mesh(g.size, g.hfield[1])
    else:
        return None
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = g.R, g.p
    m.apply_transform(T)
    return np.asarray(m.vertices, float)[np.asarray(m.faces)]


def hfield_mesh(size, data):
    """MuJoCo's hfield surface as it collides: ``data`` (nrow, ncol) at ``x = -size[0] ... size[0]``
    (columns), ``y = -size[1] ... size[1]`` (rows), ``z = size[2] * data``, two triangles a cell."""
    import trimesh

    D = np.asarray(data, float)
    nr, nc = D.shape
    X, Y = np.meshgrid(np.linspace(-size[0], size[0], nc), np.linspace(-size[1], size[1], nr))
    V = np.c_[X.reshape(-1), Y.reshape(-1), size[2] * D.reshape(-1)]
    i, j = np.meshgrid(np.arange(nr - 1), np.arange(nc - 1), indexing="ij")
    a = (i * nc + j).reshape(-1)
    F = np.r_[np.c_[a, a + 1, a + nc + 1], np.c_[a, a + nc + 1, a + nc]]
    return trimesh.Trimesh(V, F, process=False)


def flat_buffer(tris):
    """Interleaved (pos, normal) float32 array for triangles (F, 3, 3): face normals, no scipy."""
    n = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-20)
    data = np.empty((tris.shape[0], 3, 6), np.float32)
    data[:, :, :3] = tris
    data[:, :, 3:] = n[:, None, :]
    return np.ascontiguousarray(data.reshape(-1, 6))


def cluster_decimate(tris: np.ndarray, cell: float) -> np.ndarray:
    """Vertex-clustering simplification for display: snap vertices to a grid of ``cell`` metres,
    merge those in one cell (at their mean), drop collapsed and duplicate triangles."""
    if cell <= 0 or len(tris) == 0:
        return tris
    v = tris.reshape(-1, 3)
    key = np.floor(v / cell).astype(np.int64)
    _, inv = np.unique(key, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    n = inv.max() + 1
    mean = np.zeros((n, 3))
    np.add.at(mean, inv, v)
    mean /= np.bincount(inv, minlength=n)[:, None]
    f = inv.reshape(-1, 3)
    ok = (f[:, 0] != f[:, 1]) & (f[:, 1] != f[:, 2]) & (f[:, 0] != f[:, 2])
    f = f[ok]
    _, first = np.unique(np.sort(f, axis=1), axis=0, return_index=True)
    return mean[f[np.sort(first)]]
