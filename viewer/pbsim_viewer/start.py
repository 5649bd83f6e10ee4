"""A viewer session from a robot file: up axis, contact scene, start pose, the floating base placed on the ground."""

from __future__ import annotations

import numpy as np

import pbsim
from pbsim_viewer.session import Session


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
