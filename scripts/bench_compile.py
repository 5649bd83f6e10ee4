"""First-run compile time per integrator: cold numba cache, fresh process, 2-core machine.

Each case runs in a new process with its own empty cache folder (``PBSIM_CACHE_DIR``), so it
measures what a user pays on a fresh install.  The child counts numba's ``numba:compile`` events
(raised only on a cache miss) itself, so the same script measures an older checkout too
(``--src DIR``: put DIR first on the child's path).

Cases:
  alone     the integrator's first use on chain40 (single trajectory, no contact)
  second    its first use after ``pbad`` ran once on the same cache (what a second integrator costs)
  batch16   a batch of 16 after the single-trajectory run (the multi-core build of the driver)
  plane     with a ground plane after the plain run (contact compiles only what it adds)
  readme    the README's main job (``pbsim rollout chain40 --integrator pbad --dt 0.05 --steps 200
            --out --plot``) end to end, process start to exit

    python scripts/bench_compile.py [--integrators euler,rk4,pbad,pbad3,variational]
                                    [--cases alone,second,batch16,plane,readme] [--src DIR] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

CHILD = r"""
import json, sys, time
from numba.core import event as ev
t_start = time.perf_counter()
state = {"depth": 0, "t0": 0.0, "sec": 0.0, "n": 0}
class L(ev.Listener):
    def on_start(self, e):
        if state["depth"] == 0:
            state["t0"] = time.perf_counter()
        state["depth"] += 1
        state["n"] += 1
    def on_end(self, e):
        state["depth"] -= 1
        if state["depth"] == 0:
            state["sec"] += time.perf_counter() - state["t0"]
ev.register("numba:compile", L())
import numpy as np
import pbsim, pbsim_models
m = pbsim_models.chain(40)
out = []
for name, kw in json.loads(sys.argv[1]):
    kw = dict(kw)
    scene = pbsim.make_scene(m, ground=kw.pop("ground")) if "ground" in kw else None
    state["sec"], state["n"] = 0.0, 0
    t0 = time.perf_counter()
    pbsim.rollout(m, name, dt=0.01, steps=3, scene=scene, **kw)
    out.append({"compile_s": state["sec"], "compilations": state["n"], "wall_s": time.perf_counter() - t0})
print("RESULT " + json.dumps(out))
"""


def child_env(src, cache):
    env = dict(os.environ)
    env["PBSIM_CACHE_DIR"] = cache
    env["PYTHONPATH"] = os.pathsep.join([src, os.path.join(src, "models"), env.get("PYTHONPATH", "")])
    return env


def run_child(src, cache, runs):
    r = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(runs)],
        env=child_env(src, cache),
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
    )
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    if r.returncode != 0 or not line:
        raise RuntimeError((r.stderr or r.stdout)[-2000:])
    return json.loads(line[0][len("RESULT ") :])


def readme_job(src, cache):
    """The README's main job, process start to exit (after `pip install .`)."""
    work = tempfile.mkdtemp(prefix="pbsim_readme_")
    t0 = time.perf_counter()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pbsim",
            "rollout",
            "chain40",
            "--integrator",
            "pbad",
            "--dt",
            "0.05",
            "--steps",
            "200",
            "--out",
            "traj.npz",
            "--plot",
            "energy.png",
            "--quiet",
        ],
        env=child_env(src, cache),
        capture_output=True,
        text=True,
        cwd=work,
    )
    wall = time.perf_counter() - t0
    shutil.rmtree(work, ignore_errors=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    return wall


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--integrators", default="euler,rk4,pbad,pbad3,variational")
    ap.add_argument("--cases", default="alone,second,batch16,plane,readme")
    ap.add_argument("--src", default=ROOT, help="checkout whose pbsim is measured (default: this one)")
    ap.add_argument("--json", help="also write the rows to this JSON file")
    a = ap.parse_args(argv)
    names = [n for n in a.integrators.split(",") if n]
    cases = [c for c in a.cases.split(",") if c]
    rows = []

    def fresh():
        return tempfile.mkdtemp(prefix="pbsim_cc_")

    print(f"src {a.src}; cold cache per case; {os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}", flush=True)
    print("| integrator | case | compile s | compilations | first-call wall s |", flush=True)
    print("|---|---|---|---|---|", flush=True)

    def emit(name, case, res):
        rows.append({"integrator": name, "case": case, **res})
        print(f"| {name} | {case} | {res['compile_s']:.1f} | {res['compilations']} | {res['wall_s']:.1f} |", flush=True)

    for name in names:
        for case in cases:
            if case == "readme":
                continue
            cache = fresh()
            try:
                if case == "alone":
                    emit(name, case, run_child(a.src, cache, [[name, {}]])[0])
                elif case == "second":
                    if name == "pbad":
                        continue
                    emit(name, case, run_child(a.src, cache, [["pbad", {}], [name, {}]])[1])
                elif case == "batch16":
                    emit(name, case, run_child(a.src, cache, [[name, {}], [name, {"batch": 16}]])[1])
                elif case == "plane":
                    if name.startswith("variational"):
                        continue
                    emit(name, case, run_child(a.src, cache, [[name, {}], [name, {"ground": "plane"}]])[1])
            except RuntimeError as e:
                print(f"| {name} | {case} | failed: {str(e).strip().splitlines()[-1][:80]} | | |", flush=True)
            finally:
                shutil.rmtree(cache, ignore_errors=True)
    if "readme" in cases:
        cache = fresh()
        wall = readme_job(a.src, cache)
        shutil.rmtree(cache, ignore_errors=True)
        rows.append({"integrator": "pbad", "case": "readme", "wall_s": wall})
        print(f"\nREADME main job (pbad, chain40, 200 steps, --out --plot), process start to exit: {wall:.1f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
