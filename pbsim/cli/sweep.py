"""``pbsim sweep``: a grid, spec or CMA-ES search of batched rollouts on Ray (:mod:`pbsim.sweep`), from the command line."""

from __future__ import annotations

import json
import sys
import time

from pbsim.args import load_model
from pbsim.errors import PbsimError


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


def add_sweep(sub):
    """The ``sweep`` subcommand: grid, spec, CMA-ES and Ray flags."""
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
