"""Train the swimmer to swim with CMA-ES (paper 000 Fig. 5a; issue #21).

A sine gait per joint (shared frequency, amplitude, phase, offset: 10 parameters) drives the
stable-PD joint targets of pbsim/Swimmer-v0 (PBAD at dt = 0.05 with the anisotropic drag); each
CMA-ES generation is one batched rollout of the whole population (10 s episodes).  The initial
controller is a weak travelling wave (amplitude 0.3 rad, phase lag pi/4).  Prints the initial and
the best forward distance, writes docs/img/train_swimmer.png and docs/controllers/swimmer_cmaes.npz.

    python scripts/examples/train_swimmer.py                  # 30 generations x 16
    python scripts/examples/train_swimmer.py --generations 5  # a quick look
"""

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "models")]
from pbsim.envs.gaits import plot_training, progress_printer, train_gait  # noqa: E402


def main(task="Swimmer", name="swimmer", default_generations=30, default_steps=200):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generations", type=int, default=default_generations)
    ap.add_argument("--popsize", type=int, default=16)
    ap.add_argument("--sigma", type=float, default=0.3)
    ap.add_argument("--steps", type=int, default=default_steps)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--integrator", default="pbad")
    ap.add_argument("--dt", type=float, default=0.05)
    ap.add_argument("--out", default=str(ROOT / "docs" / "controllers" / f"{name}_cmaes.npz"))
    ap.add_argument("--plot", default=str(ROOT / "docs" / "img" / f"train_{name}.png"))
    a = ap.parse_args()
    t0 = time.perf_counter()
    run = train_gait(
        task,
        generations=a.generations,
        popsize=a.popsize,
        sigma0=a.sigma,
        steps=a.steps,
        seed=a.seed,
        callback=progress_printer(),
        integrator=a.integrator,
        dt=a.dt,
    )
    wall = time.perf_counter() - t0
    i, b = run["initial"], run["best"]
    T = a.steps * run["dt"]
    ratio = f"{b['distance'] / i['distance']:.1f}x" if abs(i["distance"]) > 1e-3 else "from standing still"
    print(
        f"{task} ({a.integrator}, dt {a.dt}, {T:g} s episodes): initial controller {i['distance']:+.3f} m, "
        f"best after {len(run['result'].history['generation'])} generations x {a.popsize} "
        f"{b['distance']:+.3f} m ({ratio}), alive {b['alive_s']:.2f} s; "
        f"{wall:.0f} s wall"
    )
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    run["result"].save(
        a.out,
        x0=run["x0"],
        task=task,
        integrator=a.integrator,
        dt=a.dt,
        steps=a.steps,
        initial_distance=i["distance"],
        best_distance=b["distance"],
    )
    plot_training(a.plot, task, run, f"{task}: CMA-ES ({a.integrator}, dt {a.dt}), forward distance in {T:g} s")
    print("wrote", a.out, "and", a.plot)
    return run


if __name__ == "__main__":
    main()
