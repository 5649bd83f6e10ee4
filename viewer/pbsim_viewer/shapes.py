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
    else:
        return None
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = g.R, g.p
    m.apply_transform(T)
    return np.asarray(m.vertices, float)[np.asarray(m.faces)]


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
