"""The pyglet window: 3-D scene + ImGui panel around a :class:`Session`.

GL is imported only inside :func:`setup_gl` / :class:`Viewer`, so ``import pbsim_viewer`` works on
a server with no display.  Headless rendering: ``setup_gl(headless=True)`` before anything
imports ``pyglet.gl`` (sets ``pyglet.options['headless']`` and ``PYOPENGL_PLATFORM=egl``).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import pbsim
from pbsim.args import add_model_args, add_motion_arg, model_from_args
from pbsim_viewer.camera import OrbitCamera
from pbsim_viewer.panel import PANEL_WIDTH, ViewOptions, draw_panel
from pbsim_viewer.session import Session


def setup_gl(headless: bool = False):
    """Configure pyglet (and PyOpenGL) before the first GL import; returns the pyglet module."""
    import pyglet

    if headless:
        pyglet.options["headless"] = True
        os.environ["PYOPENGL_PLATFORM"] = "egl"
    pyglet.options["shadow_window"] = False
    return pyglet


def contact_available(model, scene) -> bool:
    """True when ``scene`` has contact for this model: environment points or body-body items."""
    try:
        ks = scene.kernel_arrays(model) if scene is not None else None
        return ks is not None and (ks.npts > 0 or ks.nitem > 0)
    except Exception:  # noqa: BLE001
        return False


def has_plane(scene) -> bool:
    from pbsim.contact import Plane

    return scene is not None and any(isinstance(e, Plane) for e in scene.all_environment())


def display_rotation(model) -> np.ndarray:
    """R (3x3) with world = R @ display: the viewer draws in a z-up "display" frame, so a y-up
    model (gravity along -y) is shown standing; ``pbsim.contact.up_rotation`` (the rotation
    ``make_scene`` applies to terrains) is exactly this map."""
    from pbsim.contact import up_rotation

    return up_rotation(model)


class Viewer:
    """Window + renderer + panel.  ``frame(wall_dt)`` advances the session and draws once."""

    def __init__(
        self,
        session: Session,
        width=1280,
        height=720,
        visible=True,
        title=None,
        terrain=None,
        samples: int = 4,
        max_triangles: int = 0,
    ):
        import pyglet
        from imgui_bundle import imgui, implot
        from imgui_bundle.python_backends.pyglet_backend import create_renderer
        from pyglet import gl

        from pbsim_viewer.render import SceneRenderer

        self.gl, self.imgui = gl, imgui
        self.session = session
        self.opt = ViewOptions()
        self.max_triangles = max_triangles
        try:
            if not samples:
                raise ValueError("no multisampling requested")
            config = gl.Config(
                double_buffer=True,
                depth_size=24,
                sample_buffers=1,
                samples=samples,
                major_version=3,
                minor_version=3,
                forward_compatible=True,
            )
            self.window = pyglet.window.Window(
                width,
                height,
                caption=title or f"pbsim - {session.model.name}",
                resizable=True,
                visible=visible,
                config=config,
            )
        except Exception:  # noqa: BLE001 - no multisampling available
            config = gl.Config(
                double_buffer=True, depth_size=24, major_version=3, minor_version=3, forward_compatible=True
            )
            self.window = pyglet.window.Window(
                width,
                height,
                caption=title or f"pbsim - {session.model.name}",
                resizable=True,
                visible=visible,
                config=config,
            )
        self.window.switch_to()
        self.imgui_ctx = imgui.create_context()
        self.implot_ctx = implot.create_context()
        imgui.get_io().set_ini_filename("")
        imgui.style_colors_dark()
        self.gui = create_renderer(self.window)
        self.R = display_rotation(session.model)
        self.D = np.eye(4)
        self.D[:3, :3] = self.R.T
        T0 = self.body_poses(session.q0)
        scene = session.scene
        self.scene_renderer = SceneRenderer(session.model, scene, max_triangles=max_triangles)
        if has_plane(scene):
            planes = [e for e in scene.all_environment() if type(e).__name__ == "Plane"]
            self.scene_renderer.ground_z = float(planes[0].offset)
        else:
            self.scene_renderer.ground_z = self.scene_renderer.lowest_point(T0)
        if terrain is not None:
            tris = terrain_triangles(terrain)  # z-up file = display coordinates
            self.scene_renderer.add_world_mesh(tris)
            if not has_plane(scene):
                self.scene_renderer.ground_z = min(self.scene_renderer.ground_z, float(tris[:, :, 2].min()) - 1e-3)
        self.has_ground = has_plane(scene) or terrain is not None
        # no opaque floor under a scene without ground (a chain swinging below z = 0 stays visible)
        self.scene_renderer.draw_floor = self.has_ground
        com0 = self._com(T0)
        lo_b, hi_b = self.scene_renderer.bounding_box(T0)
        extent = float(np.max(hi_b - lo_b)) if len(T0) else 1.0
        self.scene_renderer.marker = float(np.clip(0.012 * extent, 0.005, 0.05))
        self.scene_renderer.normal_length = float(np.clip(0.1 * extent, 0.05, 0.5))
        self.scene_renderer.force_scale = 0.5 * max(extent, 0.2) / max(float(session.model.total_mass) * 9.81, 1e-6)
        self.camera = OrbitCamera(target=com0, pitch=15.0)
        self.frame_box(lo_b, hi_b, aspect=max(width - PANEL_WIDTH, 1) / max(height, 1))
        self.follow_offset = self.camera.target - com0
        self.fps = 0.0
        self.drag = None  # (body, local point, depth) while ctrl-dragging
        self.drag_target = None  # display-frame point the spring pulls towards
        self.press = None  # (x, y) of a left press that may become a click (select)
        self.reload_fn = None  # set by view(): re-reads the files, returns a new Session
        self.window.push_handlers(
            on_key_press=self.on_key_press,
            on_mouse_press=self.on_mouse_press,
            on_mouse_release=self.on_mouse_release,
            on_mouse_drag=self.on_mouse_drag,
            on_mouse_scroll=self.on_mouse_scroll,
            on_draw=self.on_draw,
        )
        self._last = time.perf_counter()

    # ------------------------------------------------------------------ input
    def _gui_wants_mouse(self):
        return self.imgui.get_io().want_capture_mouse

    def on_key_press(self, symbol, modifiers):
        from pyglet.window import key

        if self.imgui.get_io().want_text_input:
            return None
        s = self.session
        if symbol == key.SPACE:
            s.toggle()
        elif symbol == key.RIGHT:
            s.step_requests += 1  # run by update (after a frame with the compile notice, if any)
        elif symbol == key.LEFT:
            s.step_back()
        elif symbol == key.R:
            s.reset()
        elif symbol == key.K:
            self.opt.request = "save_keyframe"
        elif symbol == key.L:
            self.opt.request = "load_keyframe"
        elif symbol == key.P:
            self.opt.request = "screenshot"
        elif symbol == key.F5:
            self.opt.request = "reload"
        elif symbol == key.B:
            self.opt.request = "drop_box"
        elif symbol == key.ESCAPE:
            self.opt.quit = True
            self.window.close()
            return True
        return None

    def _viewport(self):
        """(x0, width, height) of the 3-D viewport in framebuffer pixels, and the window-to-framebuffer scale."""
        fw, fh = self.window.get_framebuffer_size()
        sx = fw / max(self.window.width, 1)
        x0 = int(PANEL_WIDTH * sx) if self.opt.show_panel else 0
        return x0, max(fw - x0, 1), fh, sx

    def ray(self, x, y):
        """(origin, unit direction) in display coordinates of the pixel (x, y) (window coordinates,
        y up as pyglet gives them)."""
        x0, vw, fh, sx = self._viewport()
        u = (x * sx - x0) / vw * 2 - 1
        v = (y * sx) / fh * 2 - 1
        VP = self.camera.projection(vw / max(fh, 1)) @ self.camera.view()
        inv = np.linalg.inv(VP)
        a = inv @ np.array([u, v, -1.0, 1.0])
        b = inv @ np.array([u, v, 1.0, 1.0])
        a, b = a[:3] / a[3], b[:3] / b[3]
        d = b - a
        return a, d / np.linalg.norm(d)

    def pick(self, x, y):
        """(body, hit point in display coordinates) under the pixel, or None."""
        o, d = self.ray(x, y)
        return self.scene_renderer.pick(self.body_poses(self.session.q), o, d)

    def on_mouse_press(self, x, y, buttons, modifiers):
        from pyglet.window import key, mouse

        if self._gui_wants_mouse() or not buttons & mouse.LEFT:
            return
        if modifiers & key.MOD_CTRL:
            hit = self.pick(x, y)
            if hit is not None:
                self.start_drag(*hit)
            return
        self.press = (x, y)

    def start_drag(self, body, point):
        """Ctrl-press on ``body`` at display point ``point``: a spring from that point of the body
        to the mouse (the force goes through the session's :attr:`~Session.perturb`)."""
        T = self.body_poses(self.session.q)[body]
        local = T[:3, :3].T @ (point - T[:3, 3])
        depth = float(np.dot(point - self.camera.eye, self._forward()))
        self.drag = (int(body), local, depth)
        self.drag_target = np.array(point, float)
        self.opt.selected = int(body)

    def _forward(self):
        f = self.camera.target - self.camera.eye
        return f / np.linalg.norm(f)

    def on_mouse_release(self, x, y, buttons, modifiers):
        if self.drag is not None:
            self.drag = self.drag_target = None
            self.session.perturb = None
            return
        if self.press is not None and abs(x - self.press[0]) + abs(y - self.press[1]) <= 3:
            hit = self.pick(x, y)
            self.opt.selected = None if hit is None else int(hit[0])
        self.press = None

    def drag_to(self, x, y):
        """Move the spring's end to the pixel (x, y), at the depth the drag started."""
        o, d = self.ray(x, y)
        depth = self.drag[2]
        t = depth / max(float(np.dot(d, self._forward())), 1e-6)
        self.drag_target = o + t * d

    def update_drag_force(self):
        """Spring-damper from the dragged point to the mouse: stiffness 30 M (N/m per kg of
        robot, so 1 m of pull lifts about 3 weights), critically damped on the robot's mass."""
        s = self.session
        if self.drag is None:
            s.perturb = None
            return
        body, local, _ = self.drag
        M = max(float(s.model.total_mass), 1e-3)
        k, c = 30.0 * M, 2.0 * np.sqrt(30.0 * M * M) * 0.3
        T = self.body_poses(s.q)[body]
        p = T[:3, :3] @ local + T[:3, 3]
        # the point's velocity, in display coordinates
        J = pbsim.point_jacobian(s.model, s.q, body, local)[3:]
        vel = self.R.T @ (J @ s.state.v[0])
        f_display = k * (self.drag_target - p) - c * vel
        s.perturb = (body, local, self.R @ f_display)

    def on_mouse_drag(self, x, y, dx, dy, buttons, modifiers):
        from pyglet.window import key, mouse

        if self.drag is not None:
            self.drag_to(x, y)
            return
        if self._gui_wants_mouse():
            return
        self.press = None
        if buttons & mouse.LEFT and not modifiers & key.MOD_SHIFT:
            self.camera.orbit(dx, dy)
        else:
            self.camera.pan(dx, dy, self.window.height)

    def on_mouse_scroll(self, x, y, sx, sy):
        if not self._gui_wants_mouse():
            self.camera.zoom(sy)

    def on_draw(self):
        pass  # drawing happens in frame(); pyglet's on_draw only flips

    # ------------------------------------------------------------------ camera
    def frame_box(self, lo, hi, aspect=16 / 9):
        """Aim at the centre of the box [lo, hi] (display coordinates) from far enough that its
        bounding sphere fits the view (both the vertical and the horizontal field of view)."""
        lo, hi = np.asarray(lo, float), np.asarray(hi, float)
        c = 0.5 * (lo + hi)
        r = max(0.5 * float(np.linalg.norm(hi - lo)), 0.05)
        half_v = np.radians(self.camera.fovy) / 2
        half = min(half_v, np.arctan(np.tan(half_v) * aspect))
        self.camera.target = c
        self.camera.distance = 1.1 * r / np.sin(half)
        self.keep_above_ground()

    def keep_above_ground(self, margin=0.05):
        """With a ground: raise the camera's pitch until its eye is ``margin`` above the floor
        (a failed run, a robot fallen through the floor or a low orbit never puts it under)."""
        if not self.has_ground:
            return
        gz = self.scene_renderer.ground_z + margin
        cam = self.camera
        if cam.target[2] < gz:
            cam.target[2] = gz
        if cam.eye[2] < gz:
            s = (gz - cam.target[2]) / max(cam.distance, 1e-9)
            cam.pitch = float(np.degrees(np.arcsin(np.clip(s, -1.0, 1.0))))

    # ------------------------------------------------------------------ drawing
    def _com(self, T):
        m = self.session.model
        pts = np.einsum("bij,bj->bi", T[:, :3, :3], m.com) + T[:, :3, 3]
        return (m.mass[:, None] * pts).sum(0) / max(m.mass.sum(), 1e-12)

    def body_poses(self, q) -> np.ndarray:
        """World poses of the bodies, expressed in the z-up display frame."""
        T = pbsim.forward_kinematics(self.session.model, q)
        return np.einsum("ij,bjk->bik", self.D, T)

    def _contacts(self, q):
        """(points (n, 3), active (n,) bool, normals (n, 3)) in display coordinates, or None."""
        s = self.session
        if not (self.opt.show_contacts or self.opt.show_normals) or not contact_available(s.model, s.scene):
            return None
        try:
            ks = s.scene.kernel_arrays(s.model)
            X, act, N = np.zeros((0, 3)), np.zeros(0, bool), np.zeros((0, 3))
            if ks.npts:
                r = pbsim.contact_query(s.model, s.scene, q)
                X, act, N = r["X"][0], r["d"][0] > 0, r["n"][0]
            if ks.nitem:  # the touching points between bodies (normals out of the other body)
                from pbsim.contact import pair_contacts

                p = pair_contacts(s.model, ks, q)
                X = np.concatenate([X, p["x"]])
                act = np.concatenate([act, np.ones(len(p["x"]), bool)])
                N = np.concatenate([N, p["normal"]])
        except Exception:  # noqa: BLE001 - drawing only
            return None
        return X @ self.R, act, N @ self.R

    def frame(self, wall_dt: float | None = None):
        """Advance the session by ``wall_dt`` of real time (measured when None) and draw once."""
        gl, imgui = self.gl, self.imgui
        now = time.perf_counter()
        if wall_dt is None:
            real = now - self._last
            wall_dt = min(real, 0.1)  # simulated catch-up per frame is capped; the readout is not
        else:
            real = wall_dt
        self._last = now
        if real > 0:
            self.fps = 1.0 / real if self.fps == 0 else 0.9 * self.fps + 0.1 / real
        self._clock = getattr(self, "_clock", 0.0) + real  # the frames' wall clock (scripted: simulated)
        s = self.session
        s.fps = self.fps
        self.handle_request()
        s = self.session
        self.update_drag_force()
        if not ((s.playing or s.step_requests) and s.first_use_notice()):  # a frame with the compile notice first
            s.update(wall_dt, now=self._clock)
        T = self.body_poses(s.q)
        com = self._com(T)
        if self.opt.follow and self.drag is None:
            self.camera.follow(com + self.follow_offset, 0.15)
        self.keep_above_ground()
        self.window.switch_to()
        fw, fh = self.window.get_framebuffer_size()
        gl.glViewport(0, 0, fw, fh)
        gl.glClearColor(0.12, 0.13, 0.16, 1.0)
        gl.glClear(gl.GL_COLOR_BUFFER_BIT | gl.GL_DEPTH_BUFFER_BIT)
        x0, vw, fh, _ = self._viewport()
        gl.glViewport(x0, 0, vw, fh)
        VP = self.camera.projection(vw / max(fh, 1)) @ self.camera.view()
        forces = self._forces(T) if self.opt.show_forces else None
        self.scene_renderer.draw(
            T, VP, self.opt, com=com, contacts=self._contacts(s.q), forces=forces, selected=self.opt.selected
        )
        gl.glViewport(0, 0, fw, fh)
        io = imgui.get_io()
        io.delta_time = float(max(wall_dt, 1e-4))
        imgui.new_frame()
        if self.opt.show_panel:
            self.opt.draw_notes = tuple(self.scene_renderer.draw_notes)
            draw_panel(s, self.opt)
        imgui.render()
        self.gui.render(imgui.get_draw_data())

    def _forces(self, T):
        """(starts (n, 3), vectors (n, 3) in metres, rgba per arrow) of the arrows to draw: contact
        forces (scene penalty law) and the drag spring, in display coordinates, or None."""
        s = self.session
        starts, vecs, cols = [], [], []
        scale = self.scene_renderer.force_scale
        try:
            cf = s.contact_forces() if contact_available(s.model, s.scene) else []
        except Exception:  # noqa: BLE001 - drawing only
            cf = []
        for c in cf:
            starts.append(self.R.T @ c["point"])
            vecs.append(scale * (self.R.T @ c["force"]))
            cols.append((0.3, 1.0, 0.35, 1.0))
        if self.drag is not None and self.drag_target is not None:
            body, local, _ = self.drag
            p = T[body, :3, :3] @ local + T[body, :3, 3]
            starts.append(p)
            vecs.append(self.drag_target - p)
            cols.append((0.2, 0.9, 1.0, 1.0))
        if not starts:
            return None
        return np.array(starts), np.array(vecs), cols

    def handle_request(self):
        """Act on a request of the panel or a key: screenshot, keyframe save/load, reload."""
        req, self.opt.request = self.opt.request, None
        if req is None:
            return
        s = self.session
        try:
            if req == "save_keyframe":
                self.opt.status = f"keyframe saved: {s.save_keyframe(self.opt.keyframe_path)}"
            elif req == "load_keyframe":
                s.load_keyframe(self.opt.keyframe_path)
                self.opt.status = f"keyframe loaded: {self.opt.keyframe_path}"
            elif req == "screenshot":
                self._shot_due = True
            elif req == "reload":
                self.reload()
            elif req == "drop_box":
                self.drop_object()
        except Exception as e:  # noqa: BLE001 - shown in the panel, never crashes the window
            self.opt.status = f"{req} failed: {type(e).__name__}: {e}"

    def reload(self):
        """Re-read the robot files (``reload_fn``, set by :func:`view`) into a new session and
        renderer; the camera and display options stay."""
        if self.reload_fn is None:
            self.opt.status = "reload: this viewer was given a model object, not files"
            return
        old = self.session
        new = self.reload_fn()
        new.set_integrator(old.integrator_name)
        new.set_dt(old.dt)
        new.real_time_factor_target = old.real_time_factor_target
        if old.playing:
            new.play()
        self._swap_session(new)
        self.opt.status = f"reloaded {new.model.name}"

    def drop_object(self, shape: str = "box", size=(0.05, 0.05, 0.05), mass: float = 0.5):
        """Drop a free object on the robot (key B): 0.4 m above the selected body, else the highest
        one (:meth:`Session.with_object`); it touches every body."""
        new = self.session.with_object(shape, size, mass, body=self.opt.selected)
        self._swap_session(new)
        self.opt.status = f"dropped {new.model.body_names[-1]} ({mass:g} kg)"

    def _swap_session(self, new):
        """Draw and run ``new`` from now on (a reloaded or extended model)."""
        from pbsim_viewer.render import SceneRenderer

        r = self.scene_renderer
        sr = SceneRenderer(new.model, new.scene, max_triangles=self.max_triangles)
        for name in ("ground_z", "marker", "normal_length", "force_scale", "draw_floor"):
            setattr(sr, name, getattr(r, name))
        sr.shapes.extend(sh for sh in r.shapes if sh[0] == "world")
        self.scene_renderer, self.session = sr, new
        self.drag = self.drag_target = None
        self.opt.selected = None

    def read_pixels(self) -> np.ndarray:
        """The current back buffer as an (H, W, 3) uint8 array, top row first."""
        import ctypes

        gl = self.gl
        fw, fh = self.window.get_framebuffer_size()
        buf = (ctypes.c_ubyte * (fw * fh * 4))()
        gl.glPixelStorei(gl.GL_PACK_ALIGNMENT, 1)
        gl.glReadPixels(0, 0, fw, fh, gl.GL_RGBA, gl.GL_UNSIGNED_BYTE, buf)
        return np.frombuffer(buf, np.uint8).reshape(fh, fw, 4)[::-1, :, :3].copy()

    def save_screenshot(self, path):
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        plt.imsave(str(path), self.read_pixels())

    def pump(self, n=1, wall_dt=1 / 60, recorder=None):
        """Scripted frames: dispatch pending window events, draw, (record,) flip."""
        for _ in range(n):
            self.window.dispatch_events()
            if self.opt.quit:
                return
            self.frame(wall_dt)
            if recorder is not None:
                recorder.add(self.read_pixels())
            self.after_frame()
            self.window.flip()

    def after_frame(self):
        """A screenshot asked for (P key / panel) is taken from the frame just drawn."""
        if getattr(self, "_shot_due", False):
            self._shot_due = False
            path = time.strftime("pbsim_%Y%m%d_%H%M%S.png")
            n = 1
            while os.path.exists(path):
                path = time.strftime("pbsim_%Y%m%d_%H%M%S") + f"_{n}.png"
                n += 1
            self.save_screenshot(path)
            self.opt.status = f"screenshot saved: {os.path.abspath(path)}"

    def close(self):
        from imgui_bundle import implot

        try:
            self.gui.shutdown()
        except Exception:  # noqa: BLE001
            pass
        implot.destroy_context(self.implot_ctx)
        self.imgui.destroy_context(self.imgui_ctx)
        if not self.opt.quit:
            self.window.close()

    def run(self):
        import pyglet

        def tick(dt):
            if self.opt.quit or self.window.has_exit:
                pyglet.app.exit()
                return
            self.frame()
            self.after_frame()

        pyglet.clock.schedule_interval(tick, 1 / 60)
        pyglet.app.run()
        self.close()


def terrain_triangles(terrain) -> np.ndarray:
    """Triangles (F, 3, 3) of a terrain mesh file (STL, OFF, OBJ ...) or trimesh."""
    import trimesh

    m = trimesh.load(str(terrain), force="mesh") if not hasattr(terrain, "faces") else terrain
    return np.asarray(m.vertices, float)[np.asarray(m.faces)]


def terrain_top(tris, x0, x1, y0, y1) -> float:
    """Highest z of the terrain triangles whose x-y bounding box overlaps [x0, x1] x [y0, y1]
    (an upper bound of the terrain height over that rectangle)."""
    lo, hi = tris.min(1), tris.max(1)
    hit = (hi[:, 0] >= x0) & (lo[:, 0] <= x1) & (hi[:, 1] >= y0) & (lo[:, 1] <= y1)
    return float(hi[hit, 2].max()) if hit.any() else float(hi[:, 2].max())


def place_on_terrain(session: Session, tris: np.ndarray, xy=None, clearance=0.01):
    """Move a floating base over the terrain point ``xy`` (default: 20 % along its longer side,
    centred across) so that the robot's lowest shape point sits
    ``clearance`` above the terrain under its footprint (:func:`terrain_top`); resets the session."""
    from pbsim_viewer.shapes import primitive_mesh

    m = session.model
    if not m.floating_base:
        return
    lo, hi = tris.reshape(-1, 3).min(0), tris.reshape(-1, 3).max(0)
    if xy is None:
        xy = (lo[:2] + hi[:2]) / 2
        k = int(np.argmax(hi[:2] - lo[:2]))
        xy[k] = lo[k] + 0.2 * (hi[k] - lo[k])
    q0 = session.q0.copy()
    q0[0:2] = xy
    T = pbsim.forward_kinematics(m, q0)
    pts = []
    for g in m.geoms:
        try:
            t = primitive_mesh(g)
        except Exception:  # noqa: BLE001
            continue
        if t is not None and len(t):
            Tb = T[g.body] if g.body >= 0 else np.eye(4)
            pts.append(t.reshape(-1, 3) @ Tb[:3, :3].T + Tb[:3, 3])
    pts = np.concatenate(pts) if pts else T[:, :3, 3]
    top = terrain_top(tris, pts[:, 0].min(), pts[:, 0].max(), pts[:, 1].min(), pts[:, 1].max())
    q0[2] += top + clearance - float(pts[:, 2].min())
    session.q0 = q0
    session.reset()


def place_on_ground(session: Session, terrain_tris=None, xy=None, clearance: float = 0.01):
    """Lift a floating base so that its lowest contact point (or body origin when the scene has
    no contact points) sits ``clearance`` above the ground plane and, with ``terrain_tris``
    (z-up display coordinates), above the terrain under its footprint (:func:`terrain_top`);
    with a terrain the base is first moved over ``xy`` (default 20 % along the terrain's longer
    side, centred across).  Works in the display frame, so y-up models are lifted along +y.
    Resets the session."""
    m = session.model
    if not m.floating_base:
        return
    R = display_rotation(m)
    q0 = session.q0.copy()
    base = R.T @ q0[0:3]  # display coordinates
    if terrain_tris is not None:
        lo, hi = terrain_tris.reshape(-1, 3).min(0), terrain_tris.reshape(-1, 3).max(0)
        if xy is None:
            xy = (lo[:2] + hi[:2]) / 2
            k = int(np.argmax(hi[:2] - lo[:2]))
            xy[k] = lo[k] + 0.2 * (hi[k] - lo[k])
        base[:2] = xy
        q0[0:3] = R @ base
    sc = session.scene
    if contact_available(m, sc):
        X = pbsim.contact_query(m, sc, q0)["X"][0] @ R
        X[:, 2] -= sc.contact_points().radius
    else:
        X = np.einsum("ij,bj->bi", R.T, pbsim.forward_kinematics(m, q0)[:, :3, 3])
    tops = []
    if has_plane(sc):
        tops.append(min(float(e.offset) for e in sc.all_environment() if type(e).__name__ == "Plane"))
    if terrain_tris is not None:
        tops.append(terrain_top(terrain_tris, X[:, 0].min(), X[:, 0].max(), X[:, 1].min(), X[:, 1].max()))
    if not tops:
        return
    base[2] += max(tops) + clearance - float(X[:, 2].min())
    q0[0:3] = R @ base
    session.q0 = q0
    session.reset()


UP_GRAVITY = {"z": (0.0, 0.0, -9.81), "y": (0.0, -9.81, 0.0)}


def make_session(
    model_path,
    floating: bool | None = None,
    scene=None,
    integrator=None,
    dt=2e-3,
    kp: float | None = None,
    kd: float | None = None,
    ground: str | None = "auto",
    terrain=None,
    mu: float = 0.8,
    up: str = "auto",
    pose: str = "stand",
    motion: str | None = None,
    base_pose=None,
) -> Session:
    """Load ``model_path`` (a file, or a loaded :class:`pbsim.Model`) and wrap it in a :class:`Session`
    with a contact scene.

    ``floating=None``: the file decides (a URDF without a ``world`` link floats).  ``up``: "z",
    "y" (gravity along -y, e.g. the DeepMimic humanoid) or "auto" (:func:`poses.detect_up`);
    set before the scene is made, so plane and terrain face -gravity.  ``scene``: an explicit
    :class:`pbsim.Scene`; otherwise ``pbsim.make_scene(model, ground, terrain, mu)`` with the rule
    of :func:`pbsim.contact.default_scene` and the viewer's default ``ground="auto"`` (the file's own
    world geometry, else a plane); no scene when ``ground`` is None and there is no terrain.
    ``kp``/``kd`` None: :func:`pbsim.control.motions.default_gains`.
    ``pose="stand"``: SPD holds (and starts from) :func:`poses.standing_pose`, else the file's
    default configuration.  ``motion``: a motion of :mod:`pbsim.control.motions` by name, tracked by SPD
    with ``kp``/``kd`` (default 30 M / M) from its first pose (:class:`~pbsim_viewer.motion.MotionSession`;
    an unknown name is an InputError listing the valid ones).  A floating base is placed on the ground /
    terrain.  ``base_pose`` (x, y, z, qw, qx, qy, qz): the floating base's position and orientation
    (world axes); it is lifted only as far as needed to clear the ground.  ``up="auto"`` (default)
    keeps an MJCF's own gravity and stands a URDF along its tallest axis (:func:`poses.detect_up`)."""
    from pbsim.control.motions import default_gains
    from pbsim_viewer.poses import detect_up, standing_pose

    model = model_path if isinstance(model_path, pbsim.Model) else pbsim.load(model_path, floating_base=floating)
    if up == "auto" and str(model.source).lower().endswith((".xml", ".mjcf")):
        up = None  # an MJCF says where gravity points
    elif up == "auto":
        up = detect_up(model)
    if up is not None and up not in UP_GRAVITY:
        raise pbsim.InputError(f"--up must be 'z', 'y' or 'auto', got {up!r}")
    if up is not None:
        model.gravity[:] = UP_GRAVITY[up]
    kp0, kd0 = default_gains(model)
    q0 = standing_pose(model) if pose == "stand" else None
    if base_pose is not None:
        bp = np.asarray(base_pose, float).reshape(-1)
        if bp.shape != (7,) or not np.all(np.isfinite(bp)) or np.linalg.norm(bp[3:]) < 1e-9:
            raise pbsim.InputError(f"--base-pose takes x,y,z,qw,qx,qy,qz (a non-zero quaternion); got {base_pose!r}")
        if not model.floating_base or int(model.jtype[0]) != 3:
            raise pbsim.InputError("--base-pose needs a floating base (add --floating-base)")
        q0 = np.array(model.default_configuration() if q0 is None else q0, float)
        q0[0:3] = bp[:3]
        q0[3:7] = bp[3:] / np.linalg.norm(bp[3:])
    if scene is None and ground in (None, "none") and terrain is None:
        scene = pbsim.make_scene(model, ground=None, mu=mu)  # no environment; bodies still touch each other
    if scene is None and (ground not in (None, "none") or terrain is not None):
        from pbsim.contact import sample_contact_points

        pts = sample_contact_points(model)
        gh = 0.0
        if not model.floating_base and len(pts):
            # a fixed base stays where the file puts it: lower the plane below its lowest contact point
            T = pbsim.forward_kinematics(model, model.default_configuration() if q0 is None else q0)
            X = np.einsum("nij,nj->ni", T[pts.body, :3, :3], pts.local) + T[pts.body, :3, 3]
            up = -np.asarray(model.gravity, float) / max(np.linalg.norm(model.gravity), 1e-12)
            gh = min(0.0, float((X @ up - pts.radius).min()) - 1e-3)
        scene = pbsim.make_scene(
            model, ground=None if ground == "none" else ground, terrain=terrain, mu=mu, points=pts, ground_height=gh
        )
    extra = {}
    if motion is not None:
        from pbsim.control.motions import make_motion
        from pbsim_viewer.motion import MotionSession

        extra["motion"] = make_motion(model, motion, dt=dt, kp=kp, kd=kd)
        q0 = extra["motion"].q_at(0.0)
    s = (MotionSession if motion is not None else Session)(
        model,
        scene=scene,
        integrator=integrator,
        dt=dt,
        kp=kp0 if kp is None else kp,
        kd=kd0 if kd is None else kd,
        q0=q0,
        **extra,
    )
    if model.floating_base and contact_available(model, s.scene):
        if base_pose is None:
            place_on_ground(s, terrain_triangles(terrain) if terrain is not None else None)
        else:  # the given pose, lifted only when it would start in the ground
            want = s.q0.copy()
            R = display_rotation(model)
            place_on_ground(s, terrain_triangles(terrain) if terrain is not None else None, xy=(R.T @ want[:3])[:2])
            if (R.T @ want[:3])[2] > (R.T @ s.q0[:3])[2]:
                s.q0 = want
                s.reset()
    return s


def view(
    model_path,
    screenshot=None,
    frames: int | None = None,
    *,
    floating: bool | None = None,
    scene=None,
    integrator: str | None = None,
    dt: float = 2e-3,
    kp: float | None = None,
    kd: float | None = None,
    play: bool | None = None,
    width: int = 1280,
    height: int = 720,
    headless: bool | None = None,
    options: dict | None = None,
    terrain=None,
    max_triangles: int = 0,
    ground: str | None = "auto",
    mu: float = 0.8,
    up: str = "auto",
    pose: str = "stand",
    camera: dict | None = None,
    record=None,
    motion: str | None = None,
    base_pose=None,
    keyframe=None,
    panel: bool = True,
    reload_fn=None,
) -> "Session":
    """Open the viewer on ``model_path`` (see :func:`make_session` for the physics arguments).

    Interactive by default.  With ``screenshot`` (a PNG path) and/or ``frames``, renders ``frames``
    frames (default 120) at 60 Hz simulated wall time, saves the screenshot, closes and returns the
    session; ``record`` (a .mp4 or .gif path) also writes every one of those frames to a 60 fps video.
    ``headless`` defaults to True when scripted and no $DISPLAY is set (EGL).
    ``terrain``: a z-up mesh file, both contact geometry (``make_scene(..., terrain=...)``) and
    drawn.  ``camera``: OrbitCamera attributes to override (yaw, pitch, distance).  A GIF is
    recorded at 50 frames/s (2 cs a frame, the shortest delay GIF players honour) and the
    simulation advances 1/50 s per frame, so it plays in real time.  ``keyframe``: a .npz of
    :meth:`Session.save_keyframe` to start from.  ``panel=False``: no panel (recordings).
    ``reload_fn``: returns the model re-read from its files (the reload key); a path given as
    ``model_path`` is re-read with :func:`pbsim.load`."""
    scripted = screenshot is not None or frames is not None or record is not None
    recorder = None
    if record is not None:
        from pbsim_viewer.record import FrameRecorder

        # checks the format (and ffmpeg) before any GL work
        recorder = FrameRecorder(record, fps=50.0 if str(record).lower().endswith(".gif") else 60.0)
    if headless is None:
        headless = scripted and not os.environ.get("DISPLAY")
    setup_gl(headless)

    def new_session(model):
        return make_session(
            model,
            floating=floating,
            scene=scene,
            integrator=integrator,
            dt=dt,
            kp=kp,
            kd=kd,
            ground=ground,
            terrain=terrain,
            mu=mu,
            up=up,
            pose=pose,
            motion=motion,
            base_pose=base_pose,
        )

    session = new_session(model_path)
    if keyframe is not None and not os.path.exists(os.fspath(keyframe)) and keyframe in session.model.keyframes:
        key = session.model.keyframes[keyframe]  # a key of the file's <keyframe>
        session.state = pbsim.State.make(session.model, q=key.q, v=key.v, t=0.0)
        session.last_good = session.state.copy()
        keyframe = None
    if keyframe is not None:
        session.load_keyframe(keyframe)
    if play if play is not None else True:
        session.play()
    v = Viewer(session, width, height, visible=not headless, terrain=terrain, max_triangles=max_triangles)
    if reload_fn is None and not isinstance(model_path, pbsim.Model):
        reload_fn = lambda: pbsim.load(model_path, floating_base=floating)  # noqa: E731
    if reload_fn is not None:
        v.reload_fn = lambda: new_session(reload_fn())
    v.opt.show_panel = bool(panel)
    v.opt.keyframe_path = os.fspath(keyframe) if keyframe is not None else v.opt.keyframe_path
    for k, val in (options or {}).items():
        setattr(v.opt, k, val)
    for k, val in (camera or {}).items():
        setattr(v.camera, k, float(val))
    v.keep_above_ground()
    if not scripted:
        v.run()
        return v.session
    fps = recorder.fps if recorder is not None else 60.0
    v.pump(frames if frames is not None else 120, wall_dt=1 / fps, recorder=recorder)
    if recorder is not None:
        recorder.close()
    if screenshot is not None:
        v.frame(1 / fps)
        v.save_screenshot(screenshot)
    v.close()
    return v.session


def build_parser(p: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    p = p or argparse.ArgumentParser(prog="pbsim view", description="Interactive pbsim viewer")
    p.add_argument("--screenshot", metavar="PNG", help="render, save a screenshot and exit")
    p.add_argument("--frames", type=int, help="number of frames to render before the screenshot / exit")
    p.add_argument("--record", metavar="VIDEO", help="write the rendered frames to a .mp4 or .gif (60 fps) and exit")
    p.add_argument("--integrator", help="integrator name (see `pbsim.integrators.available()`)")
    p.add_argument("--dt", type=float, default=2e-3)
    p.add_argument("--kp", type=float, default=None, help="SPD stiffness (default 30 N m/rad per kg of robot)")
    p.add_argument("--kd", type=float, default=None, help="SPD damping (default 1 N m s/rad per kg of robot)")
    # the same model arguments as `pbsim rollout` / `pbsim info` (generated names, base, inertia, packages);
    # --float / --fixed stay as silent aliases of --floating-base / --fixed-base
    g = add_model_args(p)
    g.add_argument("--float", dest="floating_base", action="store_const", const=True, help=argparse.SUPPRESS)
    g.add_argument("--fixed", dest="floating_base", action="store_const", const=False, help=argparse.SUPPRESS)
    p.add_argument(
        "--up",
        choices=["z", "y", "auto"],
        default="auto",
        help="the model's up axis: gravity along -up, ground and camera follow (auto, default: an MJCF's own "
        "gravity, a URDF's tallest axis)",
    )
    p.add_argument(
        "--base-pose",
        metavar="X,Y,Z,QW,QX,QY,QZ",
        help="floating base position and orientation (quaternion w first) to start from",
    )
    p.add_argument(
        "--keyframe",
        metavar="NPZ|NAME",
        help="start from a keyframe saved with the K key / panel, or the file's keyframe NAME (MJCF <key>)",
    )
    p.add_argument("--no-panel", action="store_true", help="no control panel (clean recordings and screenshots)")
    p.add_argument(
        "--ground",
        choices=["auto", "model", "plane", "none"],
        default="auto",
        help="auto (default): the file's own world geoms (MJCF floor), else a ground plane; model: only the "
        "file's; plane: a plane (the file's ignored); none",
    )
    p.add_argument("--terrain", metavar="MESH", help="terrain mesh (z-up STL/OBJ/OFF): contact geometry, drawn")
    p.add_argument("--mu", type=float, default=0.8, help="friction coefficient")
    p.add_argument(
        "--pose",
        choices=["stand", "default"],
        default="stand",
        help="configuration SPD holds: a standing pose where one is known (Robosimian), or the file's",
    )
    add_motion_arg(p)
    p.add_argument("--paused", action="store_true", help="start paused")
    p.add_argument("--headless", action="store_true", default=None, help="EGL, no window (needs --screenshot/--frames)")
    p.add_argument("--size", default="1280x720", help="window size WxH")
    p.add_argument("--camera", metavar="YAW,PITCH,DIST", help="initial camera angles (deg) and distance (m)")
    p.add_argument(
        "--show", default="", help="comma list of overlays to switch on: collision,normals,frames,com,forces"
    )
    p.add_argument(
        "--max-triangles",
        type=int,
        default=0,
        help="simplify dense meshes to about this many triangles (software GL); 0 = off",
    )
    return p


VALUE_FLAGS = ("--camera", "--base-pose")


def join_negative_values(argv):
    """``--camera -60,10,4`` -> ``--camera=-60,10,4`` (argparse takes a value that starts with
    '-' and is not a plain number for an option)."""
    import re
    import sys

    argv = list(sys.argv[1:] if argv is None else argv)
    out, k = [], 0
    while k < len(argv):
        a = argv[k]
        if a in VALUE_FLAGS and k + 1 < len(argv) and re.match(r"^-\.?\d", argv[k + 1]):
            out.append(f"{a}={argv[k + 1]}")
            k += 2
            continue
        out.append(a)
        k += 1
    return out


def main(argv=None) -> int:
    from pbsim.args import parse_args

    args = parse_args(build_parser(), join_negative_values(argv))
    w, h = (int(x) for x in args.size.lower().split("x"))
    cam = None
    if args.camera:
        vals = [float(x) for x in args.camera.split(",")]
        cam = dict(zip(("yaw", "pitch", "distance"), vals))
    base_pose = None
    if args.base_pose:
        try:
            base_pose = [float(x) for x in args.base_pose.split(",")]
        except ValueError:
            raise pbsim.InputError(f"--base-pose takes 7 numbers x,y,z,qw,qx,qy,qz; got {args.base_pose!r}") from None
    opts = {f"show_{k.strip()}": True for k in args.show.split(",") if k.strip()}
    model = model_from_args(args)
    view(
        model,
        base_pose=base_pose,
        keyframe=args.keyframe,
        panel=not args.no_panel,
        reload_fn=lambda: model_from_args(args),
        screenshot=args.screenshot,
        frames=args.frames,
        integrator=args.integrator,
        dt=args.dt,
        kp=args.kp,
        kd=args.kd,
        play=not args.paused,
        width=w,
        height=h,
        headless=args.headless,
        terrain=args.terrain,
        ground=args.ground,
        mu=args.mu,
        up=args.up,
        pose=args.pose,
        max_triangles=args.max_triangles,
        options=opts,
        camera=cam,
        record=args.record,
        motion=args.motion,
    )
    return 0
