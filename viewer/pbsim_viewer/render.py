"""OpenGL 3.3 core scene renderer (raw pyglet.gl calls).  Imported only once a GL context exists.

Every shape is uploaded once as one flat-shaded triangle buffer in its body frame and drawn with
the body's world pose as model matrix.
"""

from __future__ import annotations

import ctypes

import numpy as np
from pyglet import gl
from pyglet.graphics.shader import Shader, ShaderProgram

from pbsim_viewer.shapes import cluster_decimate, flat_buffer, primitive_mesh

VERT = """#version 330 core
layout(location = 0) in vec3 pos;
layout(location = 1) in vec3 nrm;
uniform mat4 mvp;
uniform mat4 model;
out vec3 n_world;
void main() {
    gl_Position = mvp * vec4(pos, 1.0);
    n_world = mat3(model) * nrm;
}
"""
FRAG = """#version 330 core
in vec3 n_world;
uniform vec4 color;
uniform int unlit;
out vec4 frag;
void main() {
    if (unlit == 1) { frag = color; return; }
    vec3 n = normalize(n_world);
    vec3 l1 = normalize(vec3(0.4, 0.3, 0.85));
    vec3 l2 = normalize(vec3(-0.5, -0.6, 0.3));
    float d = 0.30 + 0.60 * max(dot(n, l1), 0.0) + 0.25 * max(dot(n, l2), 0.0) + 0.08 * max(n.z, 0.0);
    frag = vec4(color.rgb * d, color.a);
}
"""


class Buffer:
    """One VAO + VBO of interleaved (pos, normal) vertices."""

    def __init__(self, data: np.ndarray, mode=gl.GL_TRIANGLES):
        self.count = int(data.shape[0])
        self.mode = mode
        self.vao = gl.GLuint()
        self.vbo = gl.GLuint()
        gl.glGenVertexArrays(1, ctypes.byref(self.vao))
        gl.glGenBuffers(1, ctypes.byref(self.vbo))
        gl.glBindVertexArray(self.vao)
        gl.glBindBuffer(gl.GL_ARRAY_BUFFER, self.vbo)
        data = np.ascontiguousarray(data, np.float32)
        gl.glBufferData(gl.GL_ARRAY_BUFFER, data.nbytes, data.ctypes.data_as(ctypes.c_void_p), gl.GL_STATIC_DRAW)
        gl.glEnableVertexAttribArray(0)
        gl.glVertexAttribPointer(0, 3, gl.GL_FLOAT, gl.GL_FALSE, 24, ctypes.c_void_p(0))
        gl.glEnableVertexAttribArray(1)
        gl.glVertexAttribPointer(1, 3, gl.GL_FLOAT, gl.GL_FALSE, 24, ctypes.c_void_p(12))
        gl.glBindVertexArray(0)

    def update(self, data: np.ndarray):
        data = np.ascontiguousarray(data, np.float32)
        self.count = int(data.shape[0])
        gl.glBindBuffer(gl.GL_ARRAY_BUFFER, self.vbo)
        gl.glBufferData(gl.GL_ARRAY_BUFFER, data.nbytes, data.ctypes.data_as(ctypes.c_void_p), gl.GL_DYNAMIC_DRAW)

    def draw(self):
        if self.count:
            gl.glBindVertexArray(self.vao)
            gl.glDrawArrays(self.mode, 0, self.count)


def _lines(segments):
    """(N, 2, 3) segments -> interleaved vertex array (normals unused)."""
    seg = np.asarray(segments, np.float32).reshape(-1, 3)
    out = np.zeros((seg.shape[0], 6), np.float32)
    out[:, :3] = seg
    out[:, 5] = 1.0
    return out


class SceneRenderer:
    def __init__(self, model, scene=None, ground_z: float = 0.0, max_triangles: int = 0):
        self.model = model
        self.scene = scene
        self.ground_z = float(ground_z)
        self.marker = 0.02  # contact marker radius (m); the viewer scales it with the robot
        self.normal_length = 0.12
        self.prog = ShaderProgram(Shader(VERT, "vertex"), Shader(FRAG, "fragment"))
        pid = self.prog.id
        self.u_mvp = gl.glGetUniformLocation(pid, b"mvp")
        self.u_model = gl.glGetUniformLocation(pid, b"model")
        self.u_color = gl.glGetUniformLocation(pid, b"color")
        self.u_unlit = gl.glGetUniformLocation(pid, b"unlit")
        self.shapes = []  # (role, body, Buffer, rgba)
        self.bounds = []  # (body, (8, 3) bounding-box corners in the body frame)
        self.pick_tris = []  # (body, triangles (F, 3, 3) in the body frame) of the drawn robot shapes
        self.draw_floor = True  # the opaque ground quad (off for --ground none: grid lines only)
        self.force_scale = 1e-3  # m per N of the force arrows (the viewer scales it with the robot's weight)
        built = []
        self.draw_notes = []  # shapes that could not be drawn (shown in the panel)
        for g in model.geoms:
            try:
                tris = primitive_mesh(g)
            except Exception as e:  # noqa: BLE001 - a missing/odd mesh only loses that shape
                tris = None
                self.draw_notes.append(f"{g.role} shape {g.name!r} not drawn ({type(e).__name__}: {e})"[:200])
            if tris is not None and len(tris):
                built.append((g, tris))
        # a body whose visual shapes all failed to load is drawn from its collision shapes
        has_visual = {g.body for g, _ in built if g.role == "visual"}
        # optional (software GL draws ~1M triangles/s): simplify dense meshes above a budget;
        # off by default, vertex clustering visibly damages thin parts
        total = sum(len(t) for _, t in built)
        self.triangles_in, self.triangles = total, total
        if max_triangles and total > max_triangles:
            allv = np.concatenate([t.reshape(-1, 3) for _, t in built])
            extent = float(np.ptp(allv, axis=0).max())
            cell = 0.01 * extent * (total / max_triangles) ** 0.5
            built = [(g, cluster_decimate(t, cell) if len(t) > 2000 else t) for g, t in built]
            self.triangles = sum(len(t) for _, t in built)
        for g, tris in built:
            role = g.role
            if role == "collision" and g.body not in has_visual:
                role = "both"  # visual falls back to collision geometry
            rgba = np.asarray(g.rgba, float) if g.role == "visual" else np.array([0.35, 0.75, 0.95, 0.45])
            if role == "both":  # a collision shape drawn as the body: the file's colour (MJCF rgba ...)
                rgba = np.asarray(g.rgba, float)
            self.shapes.append((role, int(g.body), Buffer(flat_buffer(tris)), rgba))
            if role in ("visual", "both") and g.body >= 0:
                self.pick_tris.append((int(g.body), np.asarray(tris, float)))
            lo, hi = tris.reshape(-1, 3).min(0), tris.reshape(-1, 3).max(0)
            corners = np.array(
                [[(lo, hi)[a][0], (lo, hi)[b][1], (lo, hi)[c][2]] for a in (0, 1) for b in (0, 1) for c in (0, 1)]
            )
            self.bounds.append((int(g.body), corners))
        import trimesh

        ball = trimesh.creation.icosphere(subdivisions=2, radius=1.0)
        self.ball = Buffer(flat_buffer(np.asarray(ball.vertices)[np.asarray(ball.faces)]))
        self.grid = Buffer(_lines(self._grid_segments(20, 0.5)), gl.GL_LINES)
        self.ground = Buffer(
            flat_buffer(
                np.array(
                    [[[-50, -50, 0], [50, -50, 0], [50, 50, 0]], [[-50, -50, 0], [50, 50, 0], [-50, 50, 0]]], float
                )
            )
        )
        self.normals = Buffer(_lines(np.zeros((1, 2, 3))), gl.GL_LINES)
        # arrows: a unit shaft (radius 1, z in [0, 1]) and a unit cone (radius 1, z in [0, 1])
        shaft = trimesh.creation.cylinder(radius=1.0, segment=[[0, 0, 0], [0, 0, 1]], sections=12)
        cone = trimesh.creation.cone(radius=1.0, height=1.0, sections=12)
        self.shaft = Buffer(flat_buffer(np.asarray(shaft.vertices)[np.asarray(shaft.faces)]))
        self.cone = Buffer(flat_buffer(np.asarray(cone.vertices)[np.asarray(cone.faces)]))
        self.axes = Buffer(
            _lines([[[0, 0, 0], [1, 0, 0]], [[0, 0, 0], [0, 1, 0]], [[0, 0, 0], [0, 0, 1]]]), gl.GL_LINES
        )

    @staticmethod
    def _grid_segments(n, step):
        e = n * step
        segs = []
        for k in range(-n, n + 1):
            segs.append([[k * step, -e, 0], [k * step, e, 0]])
            segs.append([[-e, k * step, 0], [e, k * step, 0]])
        return segs

    def add_world_mesh(self, tris, rgba=(0.55, 0.5, 0.45, 1.0)):
        """A static world shape (e.g. terrain), triangles (F, 3, 3) in world coordinates."""
        self.shapes.append(("world", -1, Buffer(flat_buffer(np.asarray(tris, float))), np.asarray(rgba, float)))

    def bounding_box(self, T_bodies):
        """(lo (3,), hi (3,)) of every robot shape's bounding box at the given poses (the body
        origins when there are no shapes)."""
        pts = [
            c @ (T_bodies[b] if b >= 0 else np.eye(4))[:3, :3].T + (T_bodies[b] if b >= 0 else np.eye(4))[:3, 3]
            for b, c in self.bounds
            if b >= 0
        ]
        P = np.concatenate(pts) if pts else np.asarray(T_bodies)[:, :3, 3].reshape(-1, 3)
        if not len(P):
            return np.zeros(3), np.ones(3)
        return P.min(0), P.max(0)

    def pick(self, T_bodies, origin, direction):
        """(body, hit point) of the nearest robot triangle the ray ``origin + t direction`` (t > 0)
        hits (Moller-Trumbore, numpy), or None."""
        best, hit = np.inf, None
        o, d = np.asarray(origin, float), np.asarray(direction, float)
        for body, tris in self.pick_tris:
            T = T_bodies[body]
            R, p = T[:3, :3], T[:3, 3]
            ol, dl = R.T @ (o - p), R.T @ d  # the ray in the body frame
            v0, e1, e2 = tris[:, 0], tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0]
            h = np.cross(dl, e2)
            a = np.einsum("ij,ij->i", e1, h)
            ok = np.abs(a) > 1e-12
            f = np.where(ok, 1.0 / np.where(ok, a, 1.0), 0.0)
            sv = ol - v0
            u = f * np.einsum("ij,ij->i", sv, h)
            qv = np.cross(sv, e1)
            v = f * (qv @ dl)
            t = f * np.einsum("ij,ij->i", e2, qv)
            good = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t > 1e-9)
            if good.any():
                tmin = float(t[good].min())
                if tmin < best:
                    best, hit = tmin, body
        if hit is None:
            return None
        return hit, o + best * d

    def _arrow(self, VP, start, vec, rgba, radius):
        """A shaft and a cone from ``start`` along ``vec`` (display coordinates)."""
        n = float(np.linalg.norm(vec))
        if n < 1e-9:
            return
        z = vec / n
        x = np.cross(z, [0.0, 0.0, 1.0] if abs(z[2]) < 0.9 else [1.0, 0.0, 0.0])
        x /= np.linalg.norm(x)
        y = np.cross(z, x)
        head = min(0.3 * n, 6 * radius)
        M = np.eye(4)
        M[:3, 0], M[:3, 1], M[:3, 2], M[:3, 3] = radius * x, radius * y, (n - head) * z, start
        self._set(VP, M, rgba)
        self.shaft.draw()
        M2 = np.eye(4)
        M2[:3, 0], M2[:3, 1], M2[:3, 2] = 2.5 * radius * x, 2.5 * radius * y, head * z
        M2[:3, 3] = start + (n - head) * z
        self._set(VP, M2, rgba)
        self.cone.draw()

    def lowest_point(self, T_bodies) -> float:
        """Lowest z of every shape's bounding box at the given body poses."""
        zs = [
            (((T_bodies[b] if b >= 0 else np.eye(4))[:3, :3] @ c.T).T + (T_bodies[b] if b >= 0 else np.eye(4))[:3, 3])[
                :, 2
            ].min()
            for b, c in self.bounds
        ]
        return float(min(zs)) if zs else 0.0

    def _set(self, VP, M, rgba, unlit=0):
        mvp = (VP @ M).astype(np.float32)
        gl.glUniformMatrix4fv(self.u_mvp, 1, gl.GL_TRUE, mvp.ctypes.data_as(ctypes.POINTER(gl.GLfloat)))
        Mf = np.ascontiguousarray(M, np.float32)
        gl.glUniformMatrix4fv(self.u_model, 1, gl.GL_TRUE, Mf.ctypes.data_as(ctypes.POINTER(gl.GLfloat)))
        gl.glUniform4f(self.u_color, *[float(c) for c in rgba])
        gl.glUniform1i(self.u_unlit, unlit)

    def draw(self, T_bodies, VP, opt, com=None, contacts=None, forces=None, selected=None):
        """Draw ground, robot and overlays.  ``T_bodies`` (nb, 4, 4) world poses."""
        gl.glEnable(gl.GL_DEPTH_TEST)
        gl.glDepthFunc(gl.GL_LESS)
        gl.glDisable(gl.GL_CULL_FACE)
        gl.glEnable(gl.GL_BLEND)
        gl.glBlendFunc(gl.GL_SRC_ALPHA, gl.GL_ONE_MINUS_SRC_ALPHA)
        gl.glUseProgram(self.prog.id)
        G = np.eye(4)
        G[2, 3] = self.ground_z - 1e-3
        if opt.show_grid:
            if self.draw_floor:
                self._set(VP, G, (0.30, 0.32, 0.36, 1.0))
                self.ground.draw()
            G2 = G.copy()
            G2[2, 3] += 2e-3
            self._set(VP, G2, (0.55, 0.57, 0.62, 1.0), unlit=1)
            self.grid.draw()
        for role, body, buf, rgba in self.shapes:
            if role == "visual" and not opt.show_visual:
                continue
            if role == "both" and not (opt.show_visual or opt.show_collision):
                continue
            if role == "collision" and not opt.show_collision:
                continue
            if role == "world" and not opt.show_grid:
                continue
            M = T_bodies[body] if body >= 0 else np.eye(4)
            if selected is not None and body == selected and role != "collision":
                rgba = np.asarray(rgba, float)
                rgba = np.append(0.5 * rgba[:3] + np.array([0.5, 0.45, 0.1]), rgba[3])  # highlighted
            self._set(VP, M, rgba)
            buf.draw()
        gl.glDisable(gl.GL_DEPTH_TEST)
        if forces is not None:  # drawn over the robot (feet would hide their own contact forces)
            starts, vecs, cols = forces
            for p0, vec, col in zip(starts, vecs, cols):
                self._arrow(VP, p0, vec, col, 0.7 * self.marker)
        if opt.show_frames:
            for i in range(len(T_bodies)):
                M = T_bodies[i].copy()
                M[:3, :3] *= 0.12
                for k, col in enumerate(((1, 0.2, 0.2, 1), (0.2, 1, 0.2, 1), (0.3, 0.4, 1, 1))):
                    self._set(VP, M, col, unlit=1)
                    gl.glBindVertexArray(self.axes.vao)
                    gl.glDrawArrays(gl.GL_LINES, 2 * k, 2)
        if opt.show_com and com is not None:
            M = np.eye(4)
            M[:3, :3] *= 0.04
            M[:3, 3] = com
            self._set(VP, M, (1.0, 0.85, 0.1, 1.0))
            self.ball.draw()
            M2 = M.copy()
            M2[2, 3] = self.ground_z
            M2[:3, :3] *= 0.6
            self._set(VP, M2, (1.0, 0.6, 0.1, 1.0))
            self.ball.draw()
        if contacts is not None:
            X, active, N = contacts
            if opt.show_contacts:
                for p, a in zip(X, active):
                    if not (a or opt.show_collision):  # inactive points only with the collision geometry
                        continue
                    M = np.eye(4)
                    M[:3, :3] *= self.marker if a else 0.4 * self.marker
                    M[:3, 3] = p
                    self._set(VP, M, (1.0, 0.2, 0.6, 1.0) if a else (0.9, 0.9, 0.3, 1.0), unlit=1)
                    self.ball.draw()
            if opt.show_normals and active.any():
                segs = np.stack([X[active], X[active] + self.normal_length * N[active]], axis=1)
                self.normals.update(_lines(segs))
                self._set(VP, np.eye(4), (0.2, 1.0, 0.4, 1.0), unlit=1)
                self.normals.draw()
        gl.glBindVertexArray(0)
        gl.glUseProgram(0)
        gl.glEnable(gl.GL_DEPTH_TEST)
