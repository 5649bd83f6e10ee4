"""``pbsim view``: its arguments, and :func:`view`, which opens the window on a session (or renders scripted frames).

GL is imported only inside :func:`setup_gl` / :class:`~pbsim_viewer.window.Viewer`, so ``import pbsim_viewer``
works on a server with no display.  Headless rendering: ``setup_gl(headless=True)`` before anything
imports ``pyglet.gl`` (sets ``pyglet.options['headless']`` and ``PYOPENGL_PLATFORM=egl``).
The window is :mod:`pbsim_viewer.window` (its keyboard and mouse: :mod:`pbsim_viewer.interaction`);
a session from a file, its scene and placement: :mod:`pbsim_viewer.start`.
"""

from __future__ import annotations

import argparse
import os

import pbsim
from pbsim.args import add_model_args, add_motion_arg, model_from_args
from pbsim_viewer.session import Session
from pbsim_viewer.start import (
    UP_GRAVITY,
    contact_available,
    display_rotation,
    has_plane,
    make_session,
    place_on_ground,
    place_on_terrain,
    terrain_top,
    terrain_triangles,
)
from pbsim_viewer.window import Viewer

# the names this module has always offered (the window, the session's start) beside its own
__all__ = [
    "UP_GRAVITY",
    "VALUE_FLAGS",
    "Session",
    "Viewer",
    "build_parser",
    "contact_available",
    "display_rotation",
    "has_plane",
    "join_negative_values",
    "main",
    "make_session",
    "place_on_ground",
    "place_on_terrain",
    "setup_gl",
    "terrain_top",
    "terrain_triangles",
    "view",
]


def setup_gl(headless: bool = False):
    """Configure pyglet (and PyOpenGL) before the first GL import; returns the pyglet module."""
    import pyglet

    if headless:
        pyglet.options["headless"] = True
        os.environ["PYOPENGL_PLATFORM"] = "egl"
    pyglet.options["shadow_window"] = False
    return pyglet


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
