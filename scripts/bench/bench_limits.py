"""Cost of MuJoCo's limit constraint in the explicit steps (pbsim.dynamics.limits): wall time per
step of a chain resting on its joint limits against the same chain whose ranges are never reached.

The model: a 12-hinge chain held out horizontally, each joint limited to +-0.05 rad (``tight``):
under gravity the joints sag onto their limits within a few steps and rest there, 9 coupled limit
rows active at the end (MuJoCo's soft law lets the root joint sag to 0.16 rad under the chain's
weight; pbsim's euler ends at MuJoCo's state to 5 digits); ``wide``: the same ranges at +-3 rad,
never reached (the same compiled step, no rows).  Prints us/step of both, the median of the pairs' ratios, and the same
for the peer in the same run: MuJoCo on the two files with the same integrator and step (Euler
at 1 ms; RK4 for rk4), timed the same way (``--no-mujoco`` skips it).  Runs alternate,
``--repeats`` times each; the table holds medians.

    python scripts/bench/bench_limits.py [--steps 20000] [--repeats 7] [--methods euler rk4]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import pbsim
from bench_equality import load, time_mujoco_pair  # scripts/bench is on sys.path


def model_xml(half_range: float, integ: str = "Euler", n: int = 12) -> str:
    body, close = "", ""
    for i in range(n):
        pos = "0 0 1" if i == 0 else "0.1 0 0"
        body += (
            f'<body name="b{i}" pos="{pos}"><joint name="j{i}" axis="0 1 0" range="{-half_range} {half_range}"/>'
            f'<geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.01"/>'
        )
        close += "</body>"
    return (
        f'<mujoco><compiler angle="radian"/><option integrator="{integ}" timestep="0.001">'
        f'<flag contact="disable"/></option><worldbody>{body}{close}</worldbody></mujoco>'
    )


def run_time(model, integ: str, steps: int):
    t = time.perf_counter()
    tr = pbsim.rollout(model, integ, dt=1e-3, steps=steps, record_every=steps, scene=pbsim.Scene())
    return (time.perf_counter() - t) / steps, tr


def per_step(tight, wide, integ: str, steps: int, repeats: int):
    run_time(tight, integ, 10)  # compile
    run_time(wide, integ, 10)
    t_on, t_off, ratio = [], [], []
    for _ in range(repeats):
        a, tr = run_time(tight, integ, steps)
        c, _ = run_time(wide, integ, steps)
        t_on.append(a)
        t_off.append(c)
        ratio.append(a / c)
    on_limit = int((np.abs(tr.q[-1]) > 0.0499).sum())
    return np.median(t_off) * 1e6, np.median(t_on) * 1e6, float(np.median(ratio)), on_limit


def mujoco_per_step(integ: str, steps: int, repeats: int):
    try:
        import mujoco
    except ImportError:
        return None
    mi = "RK4" if integ == "rk4" else "Euler"
    pair = []
    for hr in (0.05, 3.0):
        m = mujoco.MjModel.from_xml_string(model_xml(hr, mi))
        d = mujoco.MjData(m)
        mujoco.mj_step(m, d, 10)
        pair.append((m, d))
    return time_mujoco_pair(pair[0], pair[1], steps, repeats)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--methods", nargs="+", default=["euler", "rk4"])
    ap.add_argument("--no-mujoco", action="store_true", help="skip the MuJoCo peer")
    a = ap.parse_args(argv)
    tight, wide = load(model_xml(0.05)), load(model_xml(3.0))
    print(f"{'method':<8} {'no rows us/step':>16} {'on limits us/step':>18} {'ratio':>6} {'rows at the end':>16}")
    for integ in a.methods:
        t0, t1, r, on = per_step(tight, wide, integ, a.steps, a.repeats)
        print(f"{integ:<8} {t0:>16.2f} {t1:>18.2f} {r:>6.2f} {on:>16d}")
        if not a.no_mujoco:
            p = mujoco_per_step(integ, a.steps, a.repeats)
            if p is not None:
                print(
                    f"{'MuJoCo':<8} {p[0]:>16.2f} {p[1]:>18.2f} {p[2]:>6.2f}  ({'RK4' if integ == 'rk4' else 'Euler'}, 1 ms)"
                )


if __name__ == "__main__":
    main()
