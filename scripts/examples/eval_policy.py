"""Evaluate one policy on a pbsim environment with every contact-capable integrator (issue #21).

The policy is a fixed feedback law for pbsim/Hopper-v0 (joints held near zero by a PD on the
observation, ``--policy pd``), or a linear policy ``a = W obs + b`` from an .npz (``--policy
FILE``, keys W, b: what scripts/examples/train_hopper_ppo.py writes).  Each integrator runs the same episodes
(``--episodes``, seeds 0..) through the native vector environment; prints a markdown table of
return, episode length, diverged episodes and env steps/s.

    python scripts/examples/eval_policy.py                        # every integrator, hopper, pd policy
    python scripts/examples/eval_policy.py --integrators euler pbfd --dt 0.002 --frame-skip 4
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "models")]
from pbsim.envs.evaluate import evaluate_policy  # noqa: E402

# integrators that take contact from a scene (variational has no contact yet)
CONTACT_INTEGRATORS = [
    "euler",
    "explicit_euler",
    "rk2",
    "rk3",
    "rk4",
    "pbad",
    "pbad3",
    "pbad4",
    "pbfd",
    "pbd_friction",
    "ne_dry",
    "ne_mdp",
    "nmdp",
    "nmdp_zo",
    "pbd_nmdp",
    "pbd_nmdp_zo",
]


def pd_policy(obs):
    """Hopper: obs = [z, torso angle, thigh, leg, foot, 6 velocities]; hold the joints at zero."""
    q, v = obs[:, 2:5], obs[:, 8:11]
    return np.clip(-3.0 * q - 0.3 * v, -1.0, 1.0)


def linear_policy(path):
    d = np.load(path)
    W, b = d["W"], d["b"]
    mu, sd = (d["obs_mean"], d["obs_std"]) if "obs_mean" in d else (0.0, 1.0)

    def policy(obs):
        return np.clip(((obs - mu) / sd) @ W.T + b, -1.0, 1.0)

    return policy


def run(integrators, task="Hopper", policy=pd_policy, episodes=4, steps=None, dt=0.002, frame_skip=4, quiet=False):
    rows = []
    for name in integrators:
        t0 = time.perf_counter()
        try:
            r = evaluate_policy(
                task, policy, episodes=episodes, max_steps=steps, integrator=name, dt=dt, frame_skip=frame_skip
            )
        except Exception as e:  # a method that cannot run this task: reported, the table goes on
            rows.append(dict(integrator=name, error=f"{type(e).__name__}: {e}"[:120]))
            if not quiet:
                print(f"| {name} | error: {rows[-1]['error']} |", flush=True)
            continue
        row = dict(
            integrator=name,
            ret=float(r["returns"].mean()),
            ret_sd=float(r["returns"].std()),
            length=float(r["lengths"].mean()),
            diverged=int(r["diverged"].sum()),
            sps=r["env_steps_per_s"],
            wall=time.perf_counter() - t0,
        )
        rows.append(row)
        if not quiet:
            print(
                f"| {name} | {row['ret']:.1f} +- {row['ret_sd']:.1f} | {row['length']:.0f} | {row['diverged']} | "
                f"{row['sps']:.0f} | {row['wall']:.1f} |",
                flush=True,
            )
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="Hopper")
    ap.add_argument("--integrators", nargs="*", default=CONTACT_INTEGRATORS)
    ap.add_argument("--policy", default="pd", help="'pd' or an .npz with W, b (obs_mean, obs_std)")
    ap.add_argument("--episodes", type=int, default=4)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--dt", type=float, default=0.002)
    ap.add_argument("--frame-skip", type=int, default=4)
    a = ap.parse_args()
    policy = pd_policy if a.policy == "pd" else linear_policy(a.policy)
    print(f"{a.task}, policy {a.policy}, {a.episodes} episodes of <= {a.steps} steps, dt {a.dt} x {a.frame_skip}")
    print("| integrator | return | length | diverged | env steps/s | wall [s] (incl. compile) |")
    print("|---|---|---|---|---|---|")
    run(a.integrators, a.task, policy, a.episodes, a.steps, a.dt, a.frame_skip)


if __name__ == "__main__":
    main()
