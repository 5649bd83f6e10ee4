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
