"""Time per step of ``ne_dry`` (Newton-Euler + dry friction, Lemke LCP) on one thread, numba warm.

Scenes (paper 003's benchmarks, our constants):

- ``box``: a 0.4 x 0.4 x 0.1 m, 1 kg box sliding on the plane at 1 m/s (8 bottom contact points);
- ``chain10``: a free-floating 10-link chain (capsules 0.1 m, 0.1 kg, the papers' 2-DOF joints,
  nv = 24, 30 contact points) dropped flat on the plane with a random twist;
- ``slope10``: the same chain sliding off a 30 deg slope (mu 0.3).

Each runs ``--steps`` steps through ``CpuBatch(batch=1)`` (the step kernel alone, no per-step
Python) and through ``Integrator.step`` (with the per-step Python and diagnostics), after a
warm-up; reported: microseconds per step, mean active contacts, mean and max Lemke pivots, steps
whose LCP was not solved.  ``--dts`` also runs slope10 for ``--T`` seconds at each dt and
reports whether it stays finite and the deepest penetration (the largest stable dt).

    python scripts/bench/bench_ne_dry.py [--steps 2000] [--dts 0.001,0.0025,0.005,0.01,0.02] [--T 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "models"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import numba
import numpy as np

from pbsim.backends.cpu import CpuBatch
from pbsim.contact import Plane, Scene, make_scene, sample_contact_points
from pbsim.integrators import State, make
from pbsim_models.parts import floating_chain, free_box as box


def scenes():
    m = box()
    q0 = m.neutral()
    q0[2] = 0.05
    yield "box", m, make_scene(m, mu=0.5), q0, np.r_[1.0, 0, 0, 0, 0, 0]
    c = floating_chain()
    q0 = c.neutral()
    q0[2] = 0.01
    v0 = np.zeros(c.nv)
    v0[6:] = 0.5 * np.sin(np.arange(c.nv - 6))
    yield "chain10", c, make_scene(c, mu=0.5), q0, v0
    a = np.radians(30)
    n = np.array([-np.sin(a), 0.0, np.cos(a)])
    sc = Scene(environment=[Plane(n, 0.0)], points=sample_contact_points(c), mu=0.3)
    q0 = c.neutral()
    q0[:3] = 0.01 * n
    q0[3:7] = [np.cos(a / 2), 0.0, -np.sin(a / 2), 0.0]
    yield "slope10", c, sc, q0, np.zeros(c.nv)


def bench(name, m, sc, q0, v0, steps, dt=1e-3):
    integ = make("ne_dry", m, sc)
    s = State.make(m, q0, v0)
    s, _ = integ.step(s, None, dt)  # warm-up (compile / load)
    act, piv, bad = [], [], 0
    t0 = time.perf_counter()
    for _ in range(steps):
        s, d = integ.step(s, None, dt)
        act.append(d.extra["active_contacts"][0])
        piv.append(d.iterations[0])
        bad += int(not d.converged[0])
    t_step = (time.perf_counter() - t0) / steps
    cb = CpuBatch(m, "ne_dry", scene=sc, batch=1)
    cb.set_state(q0, v0)
    cb.advance(1, dt)
    cb.set_state(q0, v0)
    t0 = time.perf_counter()
    cb.advance(steps, dt)
    t_kernel = (time.perf_counter() - t0) / steps
    print(
        f"| {name} | {m.nv} | {len(sc.contact_points().body)} | {np.mean(act):.1f} | {t_kernel * 1e6:.0f} | "
        f"{t_step * 1e6:.0f} | {np.mean(piv):.1f} | {max(piv)} | {bad} |"
    )


def dt_sweep(dts, T):
    ((name, c, sc, q0, v0),) = [s for s in scenes() if s[0] == "slope10"]
    print("\n| dt [s] | steps | finite | max penetration [m] | unsolved LCPs | wall [s] |\n|---|---|---|---|---|---|")
    for dt in dts:
        integ = make("ne_dry", c, sc)
        s = State.make(c, q0, v0)
        n = int(round(T / dt))
        worst, bad, ok = 0.0, 0, True
        t0 = time.perf_counter()
        for _ in range(n):
            s, d = integ.step(s, None, dt)
            if d.nan.any() or not np.isfinite(s.q).all() or np.abs(s.v).max() > 1e3:
                ok = False
                break
            worst = max(worst, float(d.penetration[0]))
            bad += int(not d.converged[0])
        print(f"| {dt:g} | {n} | {ok} | {worst:.2e} | {bad} | {time.perf_counter() - t0:.1f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--dts", default="")
    ap.add_argument("--T", type=float, default=2.0)
    args = ap.parse_args()
    numba.set_num_threads(1)
    print(
        "| scene | nv | contact points | mean active | us/step (CpuBatch) | us/step (Integrator.step) | "
        "mean pivots | max pivots | unsolved LCPs |\n|---|---|---|---|---|---|---|---|---|"
    )
    for sc in scenes():
        bench(*sc, args.steps)
    if args.dts:
        dt_sweep([float(x) for x in args.dts.split(",")], args.T)


if __name__ == "__main__":
    main()
