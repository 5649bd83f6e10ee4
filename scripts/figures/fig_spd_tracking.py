"""Paper 001 Sec. 4.1, Fig. 5-6: SPD tracking error vs time step for DF and MABA.

Humanoid (34 DOF) tracking our walking gait and our 72-DOF dog (pbsim_models.dog, standing in
for the paper's dog) trotting, with kp = 75000,
kd = 4000 on internal joints and kp = 20000, kd = 2000 "hand of God" on the root; error = mean
norm of (end effector - root) simulated minus reference (right ankle / right front toe).  Plain PD with the
same gains is run at dt = 1/30 for contrast.

    python scripts/figures/fig_spd_tracking.py [--seconds 2]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
sys.path[:0] = [os.path.join(ROOT, "models"), ROOT]
import pbsim  # noqa: E402
from pbsim_models.dog import dog as dog_model  # noqa: E402
from pbsim.control import motions  # noqa: E402


def ee_error(m, ee, tr, ref):
    errs = []
    for t, q in zip(tr.t, tr.q):
        if not np.isfinite(q).all():
            return np.inf
        Ts = pbsim.forward_kinematics(m, q)
        Tr = pbsim.forward_kinematics(m, ref.q_at(t))
        es = Ts[0, :3, :3].T @ (Ts[ee, :3, 3] - Ts[0, :3, 3])
        er = Tr[0, :3, :3].T @ (Tr[ee, :3, 3] - Tr[0, :3, 3])
        errs.append(np.linalg.norm(es - er))
    return float(np.mean(errs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--png", default="docs/img/spd_tracking.png")
    a = ap.parse_args()
    import pybullet_data

    hum = pbsim.load(os.path.join(pybullet_data.getDataPath(), "humanoid/humanoid.urdf"), floating_base=True)
    dog = dog_model()
    cases = [
        ("humanoid (right ankle)", hum, hum.body_index("right_ankle"), motions.humanoid_gait),
        ("dog72 (right front toe)", dog, dog.body_index("right_front_toe"), motions.dog_trot),
    ]
    dts = [1 / 300, 1 / 240, 1 / 120, 1 / 60, 1 / 30]
    table = {}
    for name, m, ee, motion in cases:
        for mode, solver in (("spd", "df"), ("spd", "maba"), ("pd", "maba")):
            for dt in dts if mode == "spd" else [1 / 30]:
                ref = motion(
                    m, kp=75000, kd=4000, root="hog", root_kp=20000, root_kd=2000, mode=mode, solver=solver, dt=dt
                )
                steps = int(round(a.seconds / dt))
                tr = pbsim.rollout(
                    m,
                    "euler",
                    dt=dt,
                    steps=steps,
                    q0=ref.q_at(0),
                    v0=ref.v_at(0),
                    control=ref,
                    on_nan="stop",
                    record_every=max(1, steps // 60),
                )
                err = np.inf if tr.diverged[0] else ee_error(m, ee, tr, ref)
                table[(name, mode.upper() + ("-" + solver.upper() if mode == "spd" else ""), dt)] = err
    print(f"Tracking error (mean |ee - root| sim vs ref, m), {a.seconds:g} s, semi-implicit Euler")
    print("| model | controller | " + " | ".join(f"1/{round(1 / d)}" for d in dts) + " |")
    print("|---|---|" + "---|" * len(dts))
    for name, *_ in cases:
        for ctl in ("SPD-DF", "SPD-MABA", "PD"):
            cells = [table.get((name, ctl, d)) for d in dts]
            print(
                f"| {name} | {ctl} | "
                + " | ".join("-" if c is None else ("diverged" if not np.isfinite(c) else f"{c:.4g}") for c in cells)
                + " |"
            )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axs = plt.subplots(1, 2, figsize=(10, 4))
    for ax, (name, *_) in zip(axs, cases):
        for ctl, st in (("SPD-DF", "s-"), ("SPD-MABA", "o--")):
            ax.loglog(dts, [table[(name, ctl, d)] for d in dts], st, label=ctl)
        ax.set_xlabel("dt (s)")
        ax.set_ylabel("tracking error (m)")
        ax.set_title(name + ("; PD diverges at 1/30" if not np.isfinite(table[(name, "PD", 1 / 30)]) else ""))
        ax.legend()
    fig.tight_layout()
    os.makedirs(os.path.dirname(a.png), exist_ok=True)
    fig.savefig(a.png, dpi=110)
    print(f"wrote {a.png}")


if __name__ == "__main__":
    main()
