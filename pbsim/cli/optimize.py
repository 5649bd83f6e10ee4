"""``pbsim optimize``: CMA-ES on a sine-gait controller of a ready gymnasium task."""

from __future__ import annotations

import os
import time

from pbsim.errors import PbsimError


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


def add_optimize(sub):
    """The ``optimize`` subcommand."""
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
