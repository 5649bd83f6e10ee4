"""``pbsim rollout``: a headless rollout from the command line, its summary, trajectory file and plot."""

from __future__ import annotations

import json
import os
import time

from pbsim.args import add_model_args, add_motion_arg, model_from_args, motion_from_args
from pbsim.cli.options import add_integrator_args, integrator_options_from_args
from pbsim.errors import PbsimError


def _plot(path, traj, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
    E = traj.energy if traj.energy.ndim == 1 else traj.energy[:, 0]
    ax[0].plot(traj.t, E)
    ax[0].set_xlabel("t [s]")
    ax[0].set_ylabel("total energy [J]")
    ax[0].set_title("energy")
    V = traj.v if traj.v.ndim == 2 else traj.v[:, 0]
    ax[1].plot(traj.t, V[:, : min(8, V.shape[1])])
    ax[1].set_xlabel("t [s]")
    ax[1].set_ylabel("v (first DOFs)")
    ax[1].set_title("velocities")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def cmd_rollout(args):
    import pbsim

    model = model_from_args(args)
    q0 = model.default_configuration()
    v0 = act0 = None
    if args.keyframe is not None:  # a key of the file's <keyframe>: its q, v and activations
        from pbsim.model.keyframes import keyframe

        key = keyframe(model, args.keyframe)
        q0, v0 = key.q.copy(), key.v.copy()
        act0 = key.act.copy() if model.na else None
    control = None
    if args.motion is not None:
        if args.ctrl is not None or args.target:
            raise PbsimError("--motion is a reference of its own; it cannot be combined with --ctrl/--target")
        control = motion_from_args(model, args)
        q0 = control.q_at(0.0)
    elif args.ctrl is not None:
        if args.control != "torque" or args.target:
            raise PbsimError("--ctrl drives the model's actuators; it cannot be combined with --control/--target")
        from pbsim.control.schedule import CtrlSchedule

        control = CtrlSchedule.from_arg(model, args.ctrl)
    elif args.control != "torque" or args.target:
        from pbsim.control import control_from_args
        from pbsim.control.motions import default_gains

        # --control pd/spd without gains: the documented mass-scaled defaults (was kp = 0: no control at all)
        kp0, kd0 = default_gains(model) if args.control in ("pd", "spd") else (0.0, 0.0)
        control = control_from_args(
            model,
            control=args.control,
            solver=args.spd_solver,
            kp=kp0 if args.kp is None else args.kp,
            kd=kd0 if args.kd is None else args.kd,
            target=args.target,
            dt=args.dt,
            clamp=args.clamp,
            root=args.root,
            root_kp=args.root_kp,
            root_kd=args.root_kd,
            loop=args.loop,
            predict=args.spd_predict,
        )
    if control is None and args.keyframe is not None:  # mj_resetDataKeyframe sets the key's ctrl too
        from pbsim.control.control import Control, idle_ctrl

        u = idle_ctrl(model, key.ctrl)
        control = None if u is None else Control(ctrl=u)
    from pbsim.contact import default_scene

    kw = {} if args.contact_points is None else {"max_per_body": args.contact_points}
    scene = default_scene(  # the rule rollout(scene=None) and the viewer share
        model,
        ground=None if args.ground == "none" else args.ground,
        terrain=args.terrain,
        mu=args.mu,
        stiffness=args.stiffness,
        damping=args.damping,
        spacing=args.terrain_spacing,
        body_contact=args.body_contact == "on",
        self_collision=args.self_collision,
        **kw,
    )
    if args.motion is not None and scene is not None:
        q0 = rest_on_environment(model, scene, q0)
    opts = integrator_options_from_args(args)
    if args.device == "cuda":
        opts.update({k: v for k, v in (("layout", args.layout), ("schedule", args.schedule)) if v is not None})
    elif args.layout or args.schedule:
        raise PbsimError("--layout and --schedule apply to --device cuda only")
    t0 = time.perf_counter()
    traj = pbsim.rollout(
        model,
        args.integrator,
        dt=args.dt,
        steps=args.steps,
        q0=q0,
        v0=v0,
        batch=args.batch,
        control=control,
        scene=scene,
        progress=not args.quiet,
        record_every=args.record_every,
        on_nan="stop" if args.batch else "raise",
        device=args.device,
        act0=act0,
        **opts,
    )
    compile_s = float(traj.info.get("compile_s", 0.0))
    wall = time.perf_counter() - t0 - compile_s  # the simulation's own time (first-run compile apart)
    E = traj.energy
    B = args.batch or 1
    e0, e1 = (E[0], E[-1]) if E.ndim == 1 else (E[0, 0], E[-1, 0])
    sim_t = args.steps * args.dt
    summary = {
        "model": model.name,
        "nq": model.nq,
        "nv": model.nv,
        "integrator": args.integrator,
        "dt": args.dt,
        "steps": args.steps,
        "batch": B,
        "simulated_s": sim_t,
        "wall_s": wall,
        "compile_s": compile_s,
        "realtime_factor": sim_t * B / wall if wall > 0 else float("inf"),
        "steps_per_s": args.steps * B / wall if wall > 0 else float("inf"),
        "energy_start": float(e0),
        "energy_end": float(e1),
        "energy_drift": float(e1 - e0),
    }
    if traj.diverged is not None:
        summary["diverged"] = int(traj.diverged.sum())
    for path in (args.out, args.plot):  # --out runs/a.npz: make runs/ (as convert makes its folder)
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if args.out:
        traj.save(args.out)
        summary["out"] = args.out
    if args.plot:
        _plot(args.plot, traj, f"{model.name}: {args.integrator}, dt={args.dt:g}")
        summary["plot"] = args.plot
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        w = max(len(k) for k in summary)
        for k, v in summary.items():
            print(f"{k:<{w}}  {v:.6g}" if isinstance(v, float) else f"{k:<{w}}  {v}")


def rest_on_environment(model, scene, q0, clearance=1e-3):
    """A floating model lifted along -gravity until no contact point is deeper than ``-clearance``
    (a motion's first pose may have its feet in the ground)."""
    import numpy as np

    import pbsim

    if not model.floating_base or not len(scene.contact_points().body):
        return q0
    d = pbsim.contact_query(model, scene, q0)["d"][0]
    if d.size and d.max() > 0:
        q0 = np.array(q0, dtype=float)
        g = np.asarray(model.gravity, float)
        q0[:3] += -g / max(np.linalg.norm(g), 1e-12) * (float(d.max()) + clearance)
    return q0


def add_rollout(sub):
    """The ``rollout`` subcommand: run, control and contact flags, one flag per integrator option."""
    pr = sub.add_parser("rollout", help="headless rollout; prints a summary, writes a trajectory and a plot")
    add_model_args(pr)
    pr.add_argument("--integrator", default="rk4", help="see `pbsim integrators` (default rk4)")
    pr.add_argument("--dt", type=float, default=1e-3, help="time step [s]")
    pr.add_argument("--steps", type=int, default=1000)
    pr.add_argument("--batch", type=int, default=None, help="simulate B copies at once")
    pr.add_argument("--record-every", type=int, default=1, help="keep every k-th frame")
    pr.add_argument("--out", help="write t, q, v, energy to this .npz")
    pr.add_argument("--plot", help="write an energy/velocity plot (PNG)")
    pr.add_argument("--json", action="store_true")
    pr.add_argument("--quiet", action="store_true", help="no progress bar")
    pr.add_argument(
        "--device",
        default="cpu",
        choices=["cpu", "cuda"],
        help="cuda: run the batch on an NVIDIA GPU (pip install 'pbsim[gpu]')",
    )
    pr.add_argument(
        "--layout",
        choices=["auto", "aos", "soa"],
        help="GPU memory layout (device cuda only; default auto: SoA for large batches)",
    )
    pr.add_argument(
        "--schedule",
        choices=["kernel", "launch"],
        help="GPU schedule of iterative solvers: whole solve per launch, or one iteration per "
        "launch across all trajectories (paper 000 Fig. 1) (device cuda only)",
    )
    c = pr.add_argument_group("control (paper 001)")
    c.add_argument(
        "--control",
        default="torque",
        choices=["torque", "pd", "spd"],
        help="joint control: zero torque, plain PD or stable PD (default torque)",
    )
    c.add_argument(
        "--spd-solver",
        default="maba",
        choices=["maba", "sf", "df"],
        help="SPD solve: linear-time MABA, sparse (SF) or dense (DF) factorization",
    )
    c.add_argument(
        "--spd-predict",
        default="linear",
        choices=["linear", "exact"],
        help="SPD position prediction: first-order q + dt v (paper Eq. 4) or exact q (+) dt v",
    )
    c.add_argument(
        "--ctrl",
        metavar="FILE|VALUES",
        help="drive the model's actuators (MJCF <actuator>): a .npz (t, ctrl) / .csv (t + one column per "
        "actuator) schedule held between samples, or constant values 'u1,u2,...' (default: 0, or the "
        "--keyframe's ctrl, as MuJoCo: position servos hold their joints at 0)",
    )
    c.add_argument(
        "--kp",
        default=None,
        help='number or "joint=value,pattern*=value" (default with --control pd/spd: 30 N m/rad per kg of '
        "robot, the viewer's and --motion's; else 0)",
    )
    c.add_argument("--kd", default=None, help="like --kp (default with --control pd/spd: 1 N m s/rad per kg)")
    c.add_argument("--target", help="reference motion file (.npz/.csv with joint-name columns)")
    add_motion_arg(c)
    c.add_argument(
        "--root",
        default="passive",
        choices=["passive", "hog", "as_given"],
        help="free root: passive, or 'hand of God' SPD (sec. 4.1)",
    )
    c.add_argument("--root-kp", type=float, default=20000.0)
    c.add_argument("--root-kd", type=float, default=2000.0)
    c.add_argument("--clamp", action="store_true", help="clamp torques to the model's effort limits")
    c.add_argument("--loop", action="store_true", help="loop the reference motion")
    k = pr.add_argument_group("contact")
    k.add_argument(
        "--ground",
        default="model",
        choices=["plane", "auto", "model", "none"],
        help="model (default): the file's own world geoms (MJCF floor, hfields), no contact if it has "
        "none; plane: a ground plane along -gravity; auto: the file's world geoms, else a plane; none",
    )
    k.add_argument("--terrain", help="terrain mesh (STL/OBJ/OFF), turned into a signed-distance grid")
    k.add_argument("--terrain-spacing", type=float, default=0.02, help="grid spacing [m]")
    k.add_argument("--mu", type=float, default=0.8, help="Coulomb friction coefficient")
    k.add_argument("--stiffness", type=float, help="normal stiffness per contact point [N/m] (default: from mass)")
    k.add_argument("--damping", type=float, help="normal damping per contact point [N s/m]")
    k.add_argument("--contact-points", type=int, help="max contact points per body")
    pr.add_argument(
        "--keyframe",
        metavar="NAME",
        help="start from the file's keyframe NAME (MJCF <key>): its qpos, qvel, act, and its ctrl "
        "unless a control is given",
    )
    k.add_argument(
        "--body-contact",
        default="on",
        choices=["on", "off"],
        help="contact between bodies (self-collision, objects) as the file's rules say; off: environment only",
    )
    k.add_argument(
        "--self-collision",
        action="store_true",
        help="URDF: non-adjacent links touch each other (pybullet's URDF_USE_SELF_COLLISION)",
    )
    add_integrator_args(pr)
    pr.set_defaults(fn=cmd_rollout)
