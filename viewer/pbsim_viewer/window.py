"""The pyglet window: the 3-D scene and the ImGui panel around a session, drawn once per frame."""

from __future__ import annotations

import os
import time

import numpy as np

import pbsim
from pbsim_viewer.camera import OrbitCamera
from pbsim_viewer.interaction import ViewerInput
from pbsim_viewer.panel import PANEL_WIDTH, ViewOptions, draw_panel
from pbsim_viewer.session import Session
from pbsim_viewer.start import contact_available, display_rotation, has_plane, terrain_triangles


class Viewer(ViewerInput):
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
