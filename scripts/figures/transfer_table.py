"""Paper 003 Fig. 7-style transfer table, with a CMA-ES controller in place of an RL policy
(issue #21; the RL example is not done yet): train an open-loop sine gait for pbsim/Hopper-v0
under one integrator (default pbfd at dt 8 ms), then evaluate the best controller under others
(ne_dry, euler, pbad ...) at their own dt.  Prints a markdown table of return and forward
distance per evaluator.

    python scripts/figures/transfer_table.py
    python scripts/figures/transfer_table.py --train pbad --generations 20
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "models")]
from pbsim.envs.gaits import gait_rollout, train_gait  # noqa: E402

# evaluator: (integrator, dt, frame_skip); the same 8 ms per environment step
EVALUATORS = [("pbfd", 0.008, 1), ("pbad", 0.008, 1), ("euler", 0.002, 4), ("ne_dry", 0.002, 4), ("euler", 0.001, 8)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="Hopper")
    ap.add_argument("--train", default="pbfd")
    ap.add_argument("--dt", type=float, default=0.008)
    ap.add_argument("--frame-skip", type=int, default=1)
    ap.add_argument("--generations", type=int, default=15)
    ap.add_argument("--popsize", type=int, default=16)
    ap.add_argument("--steps", type=int, default=250, help="8 ms environment steps (250: 2 s)")
    a = ap.parse_args()
    t0 = time.perf_counter()
    run = train_gait(
        a.task,
        generations=a.generations,
        popsize=a.popsize,
        steps=a.steps,
        metric="return",
        integrator=a.train,
        dt=a.dt,
        frame_skip=a.frame_skip,
    )
    x = run["result"].x
    print(
        f"trained on {a.train} dt {a.dt} x {a.frame_skip}: {a.generations} x {a.popsize} rollouts, "
        f"{time.perf_counter() - t0:.0f} s; initial return {run['initial']['returns']:.1f}, best "
        f"{run['best']['returns']:.1f}"
    )
    print("| evaluated with | dt x frame_skip | return | distance [m] | alive [s] | diverged |")
    print("|---|---|---|---|---|---|")
    for name, dt, fs in EVALUATORS:
        try:
            r = gait_rollout(a.task, run["gait"], x[None], a.steps, integrator=name, dt=dt, frame_skip=fs)
            print(
                f"| {name} | {dt} x {fs} | {r['returns'][0]:.1f} | {r['distance'][0]:+.3f} | {r['alive_s'][0]:.2f} | "
                f"{bool(r['diverged'][0])} |",
                flush=True,
            )
        except Exception as e:
            print(f"| {name} | {dt} x {fs} | error: {type(e).__name__}: {str(e)[:80]} | | | |", flush=True)
    return np.array(x)


if __name__ == "__main__":
    main()
