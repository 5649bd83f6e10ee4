"""Batched stepping and batched dynamics per call, for comparing batch drivers across checkouts.

Prints one table: an SPD + ground-contact euler step on B=64 chain10 states, a PBAD step on B=16,
and batched ABA on 1000 chain40 states (best of repeats, per call / per state, all numba threads).
Run it on two checkouts interleaved to compare (``--src DIR`` puts DIR first on the path of a
child process; the numba cache folder is per source tree, so each keeps its own builds):

    python scripts/bench/bench_batch.py [--src DIR] [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

CHILD = r"""
import time, numpy as np, pbsim, pbsim_models
rng = np.random.default_rng(0)
out = []
for name, B, steps, dt in (("euler", 64, 300, 1e-3), ("pbad", 16, 50, 1e-2)):
    m = pbsim_models.chain(10)
    integ = pbsim.integrators.make(name, m, pbsim.make_scene(m, ground="plane"))
    st = pbsim.State.make(m, np.stack([m.random_configuration(rng) for _ in range(B)]))
    ctrl = pbsim.Control(mode="spd", kp=20.0, kd=2.0)
    integ.step(st, ctrl, dt)  # compile or load
    best = 1e9
    for rep in range(3):
        s = st.copy()
        t0 = time.perf_counter()
        for k in range(steps):
            s, d = integ.step(s, ctrl, dt)
        best = min(best, (time.perf_counter() - t0) / steps)
    out.append((f"{name} step, SPD + contact, chain10, B={B}", 1e6 * best, "us/call"))
m = pbsim_models.chain(40)
Q = np.stack([m.random_configuration(rng) for _ in range(1000)])
V, T = rng.standard_normal((1000, m.nv)), np.zeros((1000, m.nv))
pbsim.aba(m, Q, V, T)
best = 1e9
for rep in range(5):
    t0 = time.perf_counter()
    pbsim.aba(m, Q, V, T)
    best = min(best, time.perf_counter() - t0)
out.append(("aba, chain40, B=1000", 1e6 * best / 1000, "us/state"))
for row in out:
    print("ROW|%s|%.2f|%s" % row)
"""


def run(src):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([src, os.path.join(src, "models"), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(r.stderr[-2000:])
    return [ln.split("|")[1:] for ln in r.stdout.splitlines() if ln.startswith("ROW|")]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", action="append", help="checkout(s) to measure (default: this one); repeatable")
    ap.add_argument("--repeat", type=int, default=1, help="interleaved rounds over the checkouts")
    a = ap.parse_args(argv)
    srcs = a.src or [ROOT]
    print(f"load {os.getloadavg()[0]:.1f}; {os.cpu_count()} cpus")
    print("| checkout | case | time | unit |\n|---|---|---|---|")
    for _ in range(a.repeat):
        for src in srcs:
            for case, t, unit in run(src):
                print(f"| {os.path.basename(os.path.normpath(src))} | {case} | {float(t):.2f} | {unit} |", flush=True)


if __name__ == "__main__":
    main()
