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
from pbsim.cli import add_model_args, add_motion_arg, model_from_args
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
    """True when ``scene`` has environment geometry and contact points for this model."""
    try:
        return scene is not None and scene.kernel_arrays(model).npts > 0
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
        lo = min((T0[:, 2, 3].min(), self.scene_renderer.ground_z))
        extent = float(np.ptp(T0[:, :3, 3], axis=0).max()) if len(T0) else 1.0
        com0 = self._com(T0)
        self.scene_renderer.marker = float(np.clip(0.012 * extent, 0.005, 0.05))
        self.scene_renderer.normal_length = float(np.clip(0.1 * extent, 0.05, 0.5))
        self.camera = OrbitCamera(target=com0, distance=max(2.6 * extent, 1.2), pitch=20.0)
        # aim between the centre of mass and the lowest point, so feet and ground are in view
        self.camera.target[2] = max(0.5 * (com0[2] + lo), lo + 0.2)
        self.follow_offset = self.camera.target - com0
        self.window.push_handlers(
            on_key_press=self.on_key_press,
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
            s.pause()
            s.step_once()
        elif symbol == key.R:
            s.reset()
        elif symbol == key.ESCAPE:
            self.opt.quit = True
            self.window.close()
            return True
        return None

    def on_mouse_drag(self, x, y, dx, dy, buttons, modifiers):
        from pyglet.window import key, mouse

        if self._gui_wants_mouse():
            return
        if buttons & mouse.LEFT and not modifiers & key.MOD_SHIFT:
            self.camera.orbit(dx, dy)
        else:
            self.camera.pan(dx, dy, self.window.height)

    def on_mouse_scroll(self, x, y, sx, sy):
        if not self._gui_wants_mouse():
            self.camera.zoom(sy)

    def on_draw(self):
        pass  # drawing happens in frame(); pyglet's on_draw only flips

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
            r = pbsim.contact_query(s.model, s.scene, q)
        except Exception:  # noqa: BLE001 - drawing only
            return None
        return r["X"][0] @ self.R, r["d"][0] > 0, r["n"][0] @ self.R

    def frame(self, wall_dt: float | None = None):
        """Advance the session by ``wall_dt`` of real time (measured when None) and draw once."""
        gl, imgui = self.gl, self.imgui
        now = time.perf_counter()
        if wall_dt is None:
            wall_dt = min(now - self._last, 0.1)
        self._last = now
        s = self.session
        if not (s.playing and s.first_use_notice()):  # a frame with the compile notice first
            s.update(wall_dt)
        T = self.body_poses(s.q)
        com = self._com(T)
        if self.opt.follow:
            self.camera.follow(com + self.follow_offset, 0.15)
        self.window.switch_to()
        fw, fh = self.window.get_framebuffer_size()
        sx = fw / max(self.window.width, 1)
        gl.glViewport(0, 0, fw, fh)
        gl.glClearColor(0.12, 0.13, 0.16, 1.0)
        gl.glClear(gl.GL_COLOR_BUFFER_BIT | gl.GL_DEPTH_BUFFER_BIT)
        x0 = int(PANEL_WIDTH * sx)
        vw = max(fw - x0, 1)
        gl.glViewport(x0, 0, vw, fh)
        VP = self.camera.projection(vw / max(fh, 1)) @ self.camera.view()
        self.scene_renderer.draw(T, VP, self.opt, com=com, contacts=self._contacts(s.q))
        gl.glViewport(0, 0, fw, fh)
        io = imgui.get_io()
        io.delta_time = float(max(wall_dt, 1e-4))
        imgui.new_frame()
        draw_panel(s, self.opt)
        imgui.render()
        self.gui.render(imgui.get_draw_data())

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
            self.window.flip()

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
    up: str = "z",
    pose: str = "stand",
    motion: str | None = None,
) -> Session:
    """Load ``model_path`` (a file, or a loaded :class:`pbsim.Model`) and wrap it in a :class:`Session`
    with a contact scene.

    ``floating=None``: the file decides (a URDF without a ``world`` link floats).  ``up``: "z",
    "y" (gravity along -y, e.g. the DeepMimic humanoid) or "auto" (:func:`poses.detect_up`);
    set before the scene is made, so plane and terrain face -gravity.  ``scene``: an explicit
    :class:`pbsim.Scene`; otherwise ``pbsim.make_scene(model, ground, terrain, mu)`` with the rule
    of :func:`pbsim.contact.default_scene` and the viewer's default ``ground="auto"`` (the file's own
    world geometry, else a plane); no scene when ``ground`` is None and there is no terrain.  ``kp``/``kd`` None: :func:`poses.default_gains`.
    ``pose="stand"``: SPD holds (and starts from) :func:`poses.standing_pose`, else the file's
    default configuration.  ``motion``: a motion of :mod:`pbsim.control.motions` by name, tracked by SPD
    with ``kp``/``kd`` (default 30 M / M) from its first pose (:class:`~pbsim_viewer.motion.MotionSession`;
    an unknown name is an InputError listing the valid ones).  A floating base is placed on the ground /
    terrain."""
    from pbsim_viewer.poses import default_gains, detect_up, standing_pose

    model = model_path if isinstance(model_path, pbsim.Model) else pbsim.load(model_path, floating_base=floating)
    if up == "auto":
        up = detect_up(model)
    if up not in UP_GRAVITY:
        raise pbsim.InputError(f"--up must be 'z', 'y' or 'auto', got {up!r}")
    model.gravity[:] = UP_GRAVITY[up]
    kp0, kd0 = default_gains(model)
    q0 = standing_pose(model) if pose == "stand" else None
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
        place_on_ground(s, terrain_triangles(terrain) if terrain is not None else None)
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
    up: str = "z",
    pose: str = "stand",
    camera: dict | None = None,
    record=None,
    motion: str | None = None,
) -> "Session":
    """Open the viewer on ``model_path`` (see :func:`make_session` for the physics arguments).

    Interactive by default.  With ``screenshot`` (a PNG path) and/or ``frames``, renders ``frames``
    frames (default 120) at 60 Hz simulated wall time, saves the screenshot, closes and returns the
    session; ``record`` (a .mp4 or .gif path) also writes every one of those frames to a 60 fps video.
    ``headless`` defaults to True when scripted and no $DISPLAY is set (EGL).
    ``terrain``: a z-up mesh file, both contact geometry (``make_scene(..., terrain=...)``) and
    drawn.  ``camera``: OrbitCamera attributes to override (yaw, pitch, distance)."""
    scripted = screenshot is not None or frames is not None or record is not None
    recorder = None
    if record is not None:
        from pbsim_viewer.record import FrameRecorder

        recorder = FrameRecorder(record, fps=60.0)  # checks the format (and ffmpeg) before any GL work
    if headless is None:
        headless = scripted and not os.environ.get("DISPLAY")
    setup_gl(headless)
    session = make_session(
        model_path,
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
    )
    if play if play is not None else True:
        session.play()
    v = Viewer(session, width, height, visible=not headless, terrain=terrain, max_triangles=max_triangles)
    for k, val in (options or {}).items():
        setattr(v.opt, k, val)
    for k, val in (camera or {}).items():
        setattr(v.camera, k, float(val))
    if not scripted:
        v.run()
        return session
    v.pump(frames if frames is not None else 120, recorder=recorder)
    if recorder is not None:
        recorder.close()
    if screenshot is not None:
        v.frame(1 / 60)
        v.save_screenshot(screenshot)
    v.close()
    return session


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
        default="z",
        help="the model's up axis: gravity along -up, ground and camera follow (auto: tallest axis)",
    )
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
    p.add_argument("--show", default="", help="comma list of overlays to switch on: collision,normals,frames,com")
    p.add_argument(
        "--max-triangles",
        type=int,
        default=0,
        help="simplify dense meshes to about this many triangles (software GL); 0 = off",
    )
    return p


def main(argv=None) -> int:
    from pbsim.cli import parse_args

    args = parse_args(build_parser(), argv)
    w, h = (int(x) for x in args.size.lower().split("x"))
    cam = None
    if args.camera:
        vals = [float(x) for x in args.camera.split(",")]
        cam = dict(zip(("yaw", "pitch", "distance"), vals))
    opts = {f"show_{k.strip()}": True for k in args.show.split(",") if k.strip()}
    model = model_from_args(args)
    view(
        model,
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
