"""Command line: ``pbsim info | rollout | view | convert``."""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from pbsim.errors import PbsimError


def load_model(spec: str, floating_base=None, fix_inertia=False, packages=()):
    """A robot file path, or the name of one of our generated models (chain10, snake36, ...)."""
    import os

    import pbsim

    if not os.path.exists(spec) and not spec.endswith((".urdf", ".xml", ".mjcf")):
        try:
            import pbsim_models
        except ImportError:  # pragma: no cover - installed with pbsim
            pbsim_models = None
        if pbsim_models is not None:
            try:
                return pbsim_models.by_name(spec)
            except KeyError as e:
                raise PbsimError(f"{spec!r} is neither a file nor a generated model: {e.args[0]}") from None
    kw = {"fix_inertia": fix_inertia}
    if packages:
        kw["package_map"] = dict(p.split("=", 1) for p in packages)
    if spec.endswith((".xml", ".mjcf")):
        kw.pop("package_map", None)
    return pbsim.load(spec, floating_base=floating_base, **kw)


def _model_args(p):
    p.add_argument("model", help="robot file (.urdf, .xml) or generated model name (chain10, snake36, spider, ...)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--floating-base", dest="floating_base", action="store_const", const=True, default=None,
                   help="give the root link a free joint")
    g.add_argument("--fixed-base", dest="floating_base", action="store_const", const=False,
                   help="weld the root link to the world")
    p.add_argument("--fix-inertia", action="store_true", help="project non-physical inertias instead of failing")
    p.add_argument("--package", action="append", default=[], metavar="NAME=PATH",
                   help="resolve package://NAME/ mesh paths under PATH (repeatable)")


def cmd_info(args):
    model = load_model(args.model, args.floating_base, args.fix_inertia, args.package)
    if args.json:
        print(model.to_json())
    else:
        print(model.summary())
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

    model = load_model(args.model, args.floating_base, args.fix_inertia, args.package)
    q0 = model.default_configuration()
    t0 = time.perf_counter()
    traj = pbsim.rollout(model, args.integrator, dt=args.dt, steps=args.steps, q0=q0, batch=args.batch,
                         progress=not args.quiet, record_every=args.record_every,
                         on_nan="stop" if args.batch else "raise")
    wall = time.perf_counter() - t0
    E = traj.energy
    B = args.batch or 1
    e0, e1 = (E[0], E[-1]) if E.ndim == 1 else (E[0, 0], E[-1, 0])
    sim_t = args.steps * args.dt
    summary = {
        "model": model.name, "nq": model.nq, "nv": model.nv, "integrator": args.integrator, "dt": args.dt,
        "steps": args.steps, "batch": B, "simulated_s": sim_t, "wall_s": wall,
        "realtime_factor": sim_t * B / wall if wall > 0 else float("inf"),
        "steps_per_s": args.steps * B / wall if wall > 0 else float("inf"),
        "energy_start": float(e0), "energy_end": float(e1),
        "energy_drift": float(e1 - e0),
    }
    if traj.diverged is not None:
        summary["diverged"] = int(traj.diverged.sum())
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


def cmd_integrators(args):
    import pbsim

    for n in pbsim.integrators.available():
        print(f"{n:<16} {pbsim.integrators.describe(n)}")


def build_parser():
    p = argparse.ArgumentParser(prog="pbsim", description="Articulated-robot simulation with large-timestep integrators")
    sub = p.add_subparsers(dest="cmd", required=True)
    pi = sub.add_parser("info", help="model summary: joint table with q/v indices, DOF, mass")
    _model_args(pi)
    pi.add_argument("--json", action="store_true", help="machine-readable summary")
    pi.add_argument("--tree", action="store_true", help="also print the kinematic tree")
    pi.set_defaults(fn=cmd_info)

    pr = sub.add_parser("rollout", help="headless rollout; prints a summary, writes a trajectory and a plot")
    _model_args(pr)
    pr.add_argument("--integrator", default="rk4", help="see `pbsim integrators` (default rk4)")
    pr.add_argument("--dt", type=float, default=1e-3, help="time step [s]")
    pr.add_argument("--steps", type=int, default=1000)
    pr.add_argument("--batch", type=int, default=None, help="simulate B copies at once")
    pr.add_argument("--record-every", type=int, default=1, help="keep every k-th frame")
    pr.add_argument("--out", help="write t, q, v, energy to this .npz")
    pr.add_argument("--plot", help="write an energy/velocity plot (PNG)")
    pr.add_argument("--json", action="store_true")
    pr.add_argument("--quiet", action="store_true", help="no progress bar")
    pr.set_defaults(fn=cmd_rollout)

    pl = sub.add_parser("integrators", help="list the registered integrators")
    pl.set_defaults(fn=cmd_integrators)
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        args.fn(args)
    except PbsimError as e:
        print(f"pbsim: error: {e}", file=sys.stderr)
        return 2
    except (FileNotFoundError, KeyError, ValueError) as e:
        print(f"pbsim: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
