"""Command line: ``pbsim info | rollout | view | convert | optimize | sweep | ...``."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


from pbsim.args import (  # noqa: F401 (re-exported: pbsim.cli.parse_args, add_model_args ... as before)
    MotionAction,
    add_model_args,
    add_motion_arg,
    load_model,
    model_from_args,
    motion_from_args,
    parse_args,
)
from pbsim.errors import PbsimError


def cmd_info(args):
    model = model_from_args(args)
    if args.json:
        print(model.to_json())
    else:
        from pbsim.model.contacts import contact_pairs_text

        print(model.summary())
        print(contact_pairs_text(model, detail=args.contacts))
        if args.tree:
            print()
            print(model.tree())


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


def cmd_view(args):
    try:
        import pbsim_viewer
    except ImportError as e:
        raise PbsimError(f"the viewer needs its extra: pip install 'pbsim[viewer]' ({e})") from None
    code = pbsim_viewer.main(args.rest)
    if code:
        raise SystemExit(code)


def cmd_convert(args):
    from pbsim.io.convert import convert

    src = args.input
    if not os.path.exists(src) and not src.endswith((".urdf", ".xml", ".mjcf")):  # a generated name
        if args.floating_base is not None:
            raise PbsimError(f"{src}: --floating-base/--fixed-base apply to robot files, not to generated models")
        src = load_model(src)
    rep = convert(
        src,
        args.output,
        mesh_format=args.mesh_format,
        convex_hull=args.convex_hull,
        simplify=args.simplify,
        floating_base=args.floating_base,
        capsules="cylinder+spheres" if args.ros_capsules else "capsule",
    )
    print(rep)


def cmd_integrators(args):
    import pbsim

    for n in pbsim.integrators.available():
        print(f"{n:<16} {pbsim.integrators.describe(n)}")
        spec = pbsim.integrators.describe_options(n)
        for o in spec.values():
            print(f"    {o.name}={o.default!r}  ({o.describe_kind()}) {o.doc}")
        if not spec:
            print("    (no options)")
        if pbsim.integrators.step_spec(n) is not None:
            print("    (one step kernel: also runs batched by CpuBatch and on device='cuda')")


def cmd_optimize(args):
    """``pbsim optimize TASK``: CMA-ES (pbsim.optim.cmaes) over pbsim.envs.gaits.SineGait, each
    generation one batched rollout; prints a line per generation and the result."""
    try:
        from pbsim.envs.gaits import plot_training, progress_printer, train_gait
        from pbsim.envs.tasks import TASKS
    except ImportError as e:
        raise PbsimError(f"pbsim optimize needs gymnasium ({e}): pip install 'pbsim[envs]'") from None
    names = {k.lower(): k for k in TASKS}
    task = names.get(args.task.lower())
    if task is None:
        raise PbsimError(f"unknown task {args.task!r}; tasks: {', '.join(TASKS)}")
    env_kw = {
        k: v
        for k, v in (("integrator", args.integrator), ("dt", args.dt), ("frame_skip", args.frame_skip))
        if v is not None
    }
    t0 = time.perf_counter()
    run = train_gait(
        task,
        generations=args.generations,
        popsize=args.popsize,
        sigma0=args.sigma,
        steps=args.steps,
        seed=args.seed,
        metric=args.metric,
        callback=progress_printer(),
        **env_kw,
    )
    i, b = run["initial"], run["best"]
    print(
        f"{task}: initial controller distance {i['distance']:+.4g} m return {i['returns']:+.4g}; best distance "
        f"{b['distance']:+.4g} m return {b['returns']:+.4g} (alive {b['alive_s']:.3g} s); "
        f"{time.perf_counter() - t0:.1f} s"
    )
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        run["result"].save(
            args.out,
            x0=run["x0"],
            task=task,
            steps=args.steps,
            initial_distance=i["distance"],
            best_distance=b["distance"],
        )
        print("wrote", args.out)
    if args.plot:
        os.makedirs(os.path.dirname(os.path.abspath(args.plot)), exist_ok=True)
        plot_training(args.plot, task, run)
        print("wrote", args.plot)


def _ray_options(args) -> dict:
    """``pbsim sweep``'s Ray settings as keyword arguments of run_sweep / run_cmaes."""
    return dict(
        address=args.address,
        workers=args.workers,
        threads=args.threads,
        max_retries=args.retries,
        timeout=args.timeout,
    )


def cmd_sweep(args):
    """``pbsim sweep``: a grid of batched rollouts as Ray tasks (pbsim.sweep); one row per point in
    a CSV/Parquet file, failed and diverged points included; exit status 1 when a point failed."""
    from pbsim import sweep as sw

    if args.cmaes and args.grid:
        raise PbsimError("--grid and --cmaes are two kinds of sweep: give one of them")
    if not args.cmaes:
        for flag, v in (
            ("--objective", args.objective),
            ("--maximize", args.maximize or None),
            ("--generations", args.generations),
            ("--popsize", args.popsize),
            ("--sigma", args.sigma),
            ("--seed", args.seed),
        ):
            if v is not None:
                raise PbsimError(f"{flag} applies to a CMA-ES sweep (--cmaes KEY=LO:HI ...)")
    grid, fixed, points = {}, {}, []
    if args.spec:
        spec = sw.load_spec(args.spec)
        grid, fixed, points = spec["grid"], spec["set"], spec["points"]
        if args.cmaes and (grid or points):
            raise PbsimError(f"{args.spec}: a spec's grid or points cannot be combined with --cmaes (its set can)")
    grid.update(sw.parse_grid(args.grid or []))
    for k, v in sw.parse_grid(args.set or []).items():
        if len(v) != 1:
            raise PbsimError(f"--set {k}: one value (use --grid for several)")
        fixed[k] = v[0]
    for k in ("integrator", "dt", "steps", "batch"):
        if getattr(args, k) is not None:
            fixed[k] = getattr(args, k)
    if args.model is not None:
        fixed["model"] = args.model
    cache = {}

    def models(name):  # loaded once per variant, here; the workers get the Model itself
        if name not in cache:
            cache[name] = load_model(name, fix_inertia=args.fix_inertia)
        return cache[name]

    if args.cmaes:
        return _sweep_cmaes(args, fixed, models)
    pts = sw.expand(grid, fixed, points)
    if any(p.get("model") is None for p in pts):
        raise PbsimError("no model: give MODEL, a 'model' grid key or a spec's model")

    keys = [k for k in grid if len({json.dumps(p.get(k), default=str) for p in pts}) > 1]

    def progress(done, total, row):
        if args.quiet:
            return
        what = " ".join(f"{k}={row.get(k)}" for k in keys) or f"point {row['index']}"
        extra = row.get("error") or row.get("divergence") or ""
        wall = row.get("wall_s")
        print(
            f"[{done}/{total}] {what}: {row['status']}"
            + (f" ({wall:.2f} s)" if isinstance(wall, float) else "")
            + (f" {extra[:160]}" if extra else ""),
            flush=True,
        )

    t0 = time.perf_counter()
    print(f"pbsim sweep: {len(pts)} points on Ray ({args.address or 'local'}, {args.workers} workers)", flush=True)
    rows = sw.run_sweep(pts, models, progress=progress, **_ray_options(args))
    print(f"{sw.summary(rows)}; {time.perf_counter() - t0:.1f} s wall")
    print("wrote", sw.write_rows(rows, args.out))
    if args.plot:
        print("wrote", sw.plot_rows(rows, args.plot))
    bad = [r for r in rows if r["status"] in ("error", "timeout")]
    if bad:
        print(
            f"pbsim sweep: {len(bad)} of {len(rows)} points failed (rows with their error in {args.out})",
            file=sys.stderr,
        )
        raise SystemExit(1)


def _sweep_cmaes(args, fixed, models):
    """``pbsim sweep --cmaes``: CMA-ES over continuous parameters (pbsim.sweep.run_cmaes), a Ray
    task per candidate; a line per generation, the best parameters at the end, every row in
    ``--out``; exit status 1 when no candidate had a finite objective."""
    import math

    from pbsim import sweep as sw

    if fixed.get("model") is None:
        raise PbsimError("no model: give MODEL or a spec's model")
    space = sw.parse_space(args.cmaes)
    objective = args.objective or sw.DEFAULT_OBJECTIVE
    generations = 10 if args.generations is None else args.generations
    sigma = 0.3 if args.sigma is None else args.sigma
    seed = 0 if args.seed is None else args.seed
    sp = sw.check_cmaes(space, fixed, objective)
    t0 = time.perf_counter()
    ranges = ", ".join(f"{k} in [{lo:g}, {hi:g}]" + (" (log)" if s == "log" else "") for k, (lo, hi, s) in sp.items())
    print(
        f"pbsim sweep: CMA-ES over {ranges}; {'maximize' if args.maximize else 'minimize'} {objective}; "
        f"{generations} generations x {args.popsize or 'cma default'} candidates on Ray "
        f"({args.address or 'local'}, {args.workers} workers)",
        flush=True,
    )

    def progress(done, total, row):
        if args.quiet:
            return
        what = " ".join(f"{k}={row.get(k):.4g}" for k in sp)
        extra = row.get("error") or row.get("divergence") or ""
        print(
            f"  [{row['generation']}.{row['candidate']}] {what}: {row['status']}"
            + (f" {objective}={row.get(objective):.4g}" if isinstance(row.get(objective), float) else "")
            + (f" {extra[:160]}" if extra else ""),
            flush=True,
        )

    def num(x):
        return f"{x:.6g}" if math.isfinite(x) else "-"

    def generation(g, rows, h):
        print(
            f"generation {g}/{generations}: best {num(h['best'][-1])}, median {num(h['median'][-1])}, "
            f"failed {int(h['failed'][-1])}/{len(rows)}; best so far {num(h['best_so_far'][-1])} "
            f"(sigma {h['sigma'][-1]:.3g}, {time.perf_counter() - t0:.1f} s)",
            flush=True,
        )

    res = sw.run_cmaes(
        space,
        fixed,
        models,
        objective=objective,
        maximize=args.maximize,
        generations=generations,
        popsize=args.popsize,
        sigma0=sigma,
        seed=seed,
        progress=progress,
        callback=generation,
        **_ray_options(args),
    )
    rows = res.rows
    print(f"{sw.summary(rows)}; {time.perf_counter() - t0:.1f} s wall; stop: {res.stop}")
    print("wrote", sw.write_rows(rows, args.out))
    if args.plot:
        print("wrote", sw.plot_cmaes(rows, args.plot, objective, res.space, args.maximize))
    if res.best is None:
        print(
            f"pbsim sweep: no candidate had a finite {objective} (rows with their status in {args.out})",
            file=sys.stderr,
        )
        raise SystemExit(1)
    r = res.best_row
    print(
        f"best {objective} = {res.best_value:.6g} (generation {r['generation']}, candidate {r['candidate']}): "
        + " ".join(f"{k}={v:.6g}" for k, v in res.best.items())
    )


def cmd_warmup(args):
    from pbsim.warmup import warmup

    names = [n for n in args.integrators.split(",") if n] if args.integrators else None
    configs = [c for c in args.configs.split(",") if c] if args.configs else None
    kw = {}
    if args.device == "cuda":
        kw = {"layouts": [x for x in (args.layouts or "aos,soa").split(",") if x], "cc": args.cc or "9.0"}
    elif args.layouts or args.cc:
        raise PbsimError("--layouts and --cc apply to --device cuda only")
    res = warmup(names, configs, jobs=args.jobs, device=args.device, **kw)
    if any("error" in r for r in res.values()):
        raise PbsimError("warmup failed for " + ", ".join(n for n, r in res.items() if "error" in r))


# flags of earlier versions, kept as aliases of the generated ones
OLD_FLAGS = {
    "init": ["--pbad-init"],
    "fallback": ["--pbad-fallback"],
    "energy_guard": ["--pbad-energy-guard"],
    "method": ["--vi-method"],
    "xtol": ["--vi-tol"],
    "max_iterations": ["--vi-max-iter"],
}


def _bool(text: str) -> bool:
    t = text.strip().lower()
    if t in ("1", "true", "yes", "on"):
        return True
    if t in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")


class _OptionFlag(argparse.Action):
    """Stores the value and the flag spelling used (for messages that quote the user's flag)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        used = dict(getattr(namespace, "_flag_used", None) or {})
        used[self.dest] = option_string
        namespace._flag_used = used


def add_integrator_args(p):
    """One flag per integrator option, generated from the union of every registered method's
    option spec (``--max-iterations`` for ``max_iterations`` ...), so a new method's options get
    flags with no edit here and every method names the same thing the same way.  A flag given
    for an integrator that lacks the option is an error naming the methods that have it."""
    from pbsim.integrators import available, describe_options

    uses: dict[str, list] = {}
    for n in available():
        for o in describe_options(n).values():
            if o.cli and o.kind in ("int", "float", "str", "bool"):
                uses.setdefault(o.name, []).append((n, o))
    g = p.add_argument_group("integrator options (each method's option spec; `pbsim integrators` lists them)")
    taken = {s for a in p._actions for s in a.option_strings}  # noqa: SLF001 - argparse has no public query
    for name, us in uses.items():
        kinds = {o.kind for _, o in us}
        kind = kinds.pop() if len(kinds) == 1 else "str"
        choices = None
        if all(o.choices for _, o in us):
            choices = list(dict.fromkeys(c for _, o in us for c in o.choices))
        flag = "--" + name.replace("_", "-")
        if flag in taken:  # an option named like a rollout flag
            flag = "--integrator-" + name.replace("_", "-")
        names = [flag] + [f for f in OLD_FLAGS.get(name, []) if f not in taken]
        doc = us[0][1].doc.replace("%", "%%")
        g.add_argument(
            *names,
            action=_OptionFlag,
            dest=f"opt_{name}",
            default=None,
            choices=choices,
            type={"int": int, "float": float, "bool": _bool}.get(kind, str),
            metavar=None if choices else name.upper(),
            help=f"{doc} [{', '.join(n for n, _ in us)}]",
        )
    g.add_argument("--vi-ig", dest="opt_ig", type=int, choices=[1, 2, 3], help=argparse.SUPPRESS)  # old --init
    p.set_defaults(_option_users={k: [n for n, _ in us] for k, us in uses.items()} | {"ig": ["variational"]})


def integrator_options_from_args(args) -> dict:
    """The integrator options given on the command line, checked against ``args.integrator``."""
    from pbsim.integrators import describe_options

    have = describe_options(args.integrator, aliases=True)
    opts = {}
    for name, users in args._option_users.items():
        val = getattr(args, f"opt_{name}", None)
        if val is None:
            continue
        if name not in have:
            flag = (getattr(args, "_flag_used", None) or {}).get(f"opt_{name}") or "--" + name.replace("_", "-")
            raise PbsimError(f"{flag} applies to {'/'.join(users)} only (not to --integrator {args.integrator})")
        opts[name] = val
    return opts


def build_parser():
    p = argparse.ArgumentParser(
        prog="pbsim", description="Articulated-robot simulation with large-timestep integrators"
    )
    from pbsim import __version__

    p.add_argument("--version", action="version", version=f"pbsim {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    pi = sub.add_parser("info", help="model summary: joint table with q/v indices, DOF, mass")
    add_model_args(pi)
    pi.add_argument("--json", action="store_true", help="machine-readable summary")
    pi.add_argument("--tree", action="store_true", help="also print the kinematic tree")
    pi.add_argument("--contacts", action="store_true", help="also list the contact pairs (which shapes may touch)")
    pi.set_defaults(fn=cmd_info)

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
        "actuator) schedule held between samples, or constant values 'u1,u2,...'",
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
    pr.add_argument("--keyframe", metavar="NAME", help="start from the file's keyframe NAME (MJCF <key>)")
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

    pv = sub.add_parser("view", help="interactive viewer (needs the [viewer] extra)", add_help=False)
    pv.add_argument("rest", nargs=argparse.REMAINDER)
    pv.set_defaults(fn=cmd_view)

    pc = sub.add_parser("convert", help="convert robot files: URDF <-> MJCF")
    pc.add_argument("input")
    pc.add_argument("output")
    pc.add_argument(
        "--mesh-format",
        choices=["stl", "obj"],
        default=None,
        help="convert meshes to this format (default: copy what the target reads, else STL)",
    )
    pc.add_argument("--convex-hull", action="store_true", help="replace collision meshes by their convex hulls")
    pc.add_argument("--simplify", type=int, metavar="FACES", help="decimate meshes to about FACES faces")
    g = pc.add_mutually_exclusive_group()
    g.add_argument("--floating-base", dest="floating_base", action="store_const", const=True, default=None)
    g.add_argument("--fixed-base", dest="floating_base", action="store_const", const=False)
    pc.add_argument(
        "--ros-capsules",
        action="store_true",
        help="write capsules as cylinder + 2 spheres (standard URDF) instead of pybullet <capsule>",
    )
    pc.set_defaults(fn=cmd_convert)

    pw = sub.add_parser("warmup", help="compile the common kernels once (in parallel) so first runs start fast")
    pw.add_argument(
        "--integrators", default=None, help="comma-separated (default euler,rk4,pbad; --device cuda: euler,pbad)"
    )
    pw.add_argument(
        "--configs",
        default=None,
        help="single, contact (ground plane), batch (B >= 4: the multi-core build) (default: all); "
        "--device cuda: contact, free (default: both)",
    )
    pw.add_argument("--jobs", type=int, default=None, help="processes at once (default: one per core)")
    pw.add_argument(
        "--device",
        default="cpu",
        choices=["cpu", "cuda"],
        help="cuda: fill the CUDA kernel cache (~/.cache/pbsim/cuda): on this machine's GPU, else for --cc "
        "with NVVM and nvJitLink (pip install 'pbsim[gpu]')",
    )
    pw.add_argument("--layouts", default=None, help="--device cuda: GPU layouts to build (default aos,soa)")
    pw.add_argument("--cc", default=None, help="--device cuda without a GPU: compute capability (default 9.0)")
    pw.set_defaults(fn=cmd_warmup)

    po = sub.add_parser("optimize", help="CMA-ES on a sine-gait controller of a ready task (needs gymnasium)")
    po.add_argument("task", help="Swimmer, Spider, Hopper, Walker2d or Humanoid (the pbsim/<task>-v0 environments)")
    po.add_argument("--generations", type=int, default=30)
    po.add_argument("--popsize", type=int, default=16, help="controllers per generation: one batched rollout")
    po.add_argument("--sigma", type=float, default=0.3, help="CMA-ES initial step size")
    po.add_argument("--steps", type=int, default=200, help="environment steps per rollout")
    po.add_argument("--metric", choices=("distance", "return"), default="distance")
    po.add_argument("--seed", type=int, default=0)
    po.add_argument("--integrator", default=None, help="the task's default when omitted (pbad, euler ...)")
    po.add_argument("--dt", type=float, default=None, help="integrator step [s] (the task's default when omitted)")
    po.add_argument("--frame-skip", type=int, default=None, help="integrator steps per environment step")
    po.add_argument("--out", default=None, help="write the best controller and the history (.npz)")
    po.add_argument("--plot", default=None, help="write the learning curve (.png)")
    po.set_defaults(fn=cmd_optimize)

    ps = sub.add_parser(
        "sweep", help="a parameter grid of batched rollouts on Ray, one result row per point (needs ray)"
    )
    ps.add_argument("model", nargs="?", help="robot file or generated model name (or a 'model' grid key)")
    ps.add_argument(
        "--grid",
        nargs="+",
        metavar="KEY=V1,V2",
        help="grid axes: integrator, dt, steps, batch, control (torque/pd/spd), kp, kd, ground, mu, stiffness, "
        "damping, noise, seed, model, or an integrator option; every combination is one task",
    )
    ps.add_argument(
        "--cmaes",
        nargs="+",
        metavar="KEY=LO:HI",
        help="instead of a grid, CMA-ES over these continuous parameters (at least 2: dt, kp, kd, mu, stiffness, "
        "damping, noise or a float integrator option) within [LO, HI]; a task per candidate",
    )
    ps.add_argument(
        "--objective",
        default=None,
        help="--cmaes: the row column to minimise (default energy_drift_max, the worst |E(T) - E(0)| of the batch)",
    )
    ps.add_argument("--maximize", action="store_true", help="--cmaes: maximise the objective instead")
    ps.add_argument("--generations", type=int, default=None, help="--cmaes: generations (default 10)")
    ps.add_argument("--popsize", type=int, default=None, help="--cmaes: candidates per generation (default cma's)")
    ps.add_argument("--sigma", type=float, default=None, help="--cmaes: initial step in the unit box (default 0.3)")
    ps.add_argument(
        "--seed", type=int, default=None, help="--cmaes: CMA-ES seed (default 0; the noise seed is --set seed=)"
    )
    ps.add_argument("--set", nargs="+", metavar="KEY=V", help="fixed parameters of every point")
    ps.add_argument("--spec", help="a JSON (or YAML) spec: {model, grid: {k: [..]}, set: {k: v}, points: [{..}]}")
    ps.add_argument("--integrator", default=None, help="fixed integrator (default rk4)")
    ps.add_argument("--dt", type=float, default=None, help="fixed time step (default 0.001)")
    ps.add_argument("--steps", type=int, default=None, help="steps per trajectory (default 1000)")
    ps.add_argument("--batch", type=int, default=None, help="trajectories per task (default 8)")
    ps.add_argument("--workers", type=int, default=2, help="tasks at once (the local Ray's CPUs) (default 2)")
    ps.add_argument("--threads", type=int, default=1, help="CPUs and numba threads per task (default 1)")
    ps.add_argument(
        "--address", default=None, help="an existing Ray cluster ('auto', or ray://HOST:10001); default: start one here"
    )
    ps.add_argument("--retries", type=int, default=3, help="retries of a task whose worker died (default 3)")
    ps.add_argument("--timeout", type=float, default=None, help="cancel a task after this many seconds")
    ps.add_argument("--out", default="sweep.csv", help="results: .csv, or .parquet (needs pyarrow)")
    ps.add_argument(
        "--plot", default=None, help="write energy drift and steps/s against dt (--cmaes: the learning curve) (.png)"
    )
    ps.add_argument("--fix-inertia", action="store_true", help="project non-physical inertias instead of failing")
    ps.add_argument("--quiet", action="store_true", help="no line per finished task")
    ps.set_defaults(fn=cmd_sweep)

    pl = sub.add_parser("integrators", help="list the registered integrators")
    pl.set_defaults(fn=cmd_integrators)
    return p


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["view"]:  # the viewer owns its arguments (and --help)
        return _run(cmd_view, argparse.Namespace(rest=argv[1:]))
    return _run(None, parse_args(build_parser(), argv))


def _run(fn, args):
    fn = fn or args.fn
    try:
        fn(args)
        sys.stdout.flush()
    except BrokenPipeError:  # `pbsim info X --json | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    except PbsimError as e:
        print(f"pbsim: error: {e}", file=sys.stderr)
        return 2
    except (FileNotFoundError, KeyError, ValueError) as e:
        print(f"pbsim: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
