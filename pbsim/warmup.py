"""``pbsim warmup``: compile the common kernels once, in parallel, so that first runs are fast.

Numba caches compiled kernels on disk (``~/.cache/pbsim/numba``, or ``$PBSIM_CACHE_DIR``), keyed
on numba's version and pbsim's kernel sources; a run that finds them there starts in about a
second.  Warming up runs tiny rollouts (a 3-link chain: the kernels' types do not depend on the
robot) for each integrator and configuration, one integrator per process, ``jobs`` processes at
a time, and reports what each compile cost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

DEFAULT_INTEGRATORS = ("euler", "rk4", "pbad")
# (label, rollout keyword arguments): single trajectory, with ground contact, and a batch of 4
# (batches of 4 or more run the prange build of the batch driver, a compilation of its own)
CONFIGS = {"single": {}, "contact": {"ground": "plane"}, "batch": {"batch": 4}}

_CHILD = r"""
import json, sys, time
import pbsim, pbsim_models
from pbsim.backends.kernel import CompileWatch
name, configs = sys.argv[1], json.loads(sys.argv[2])
m = pbsim_models.chain(3)
out = {}
for label, kw in configs.items():
    kw = dict(kw)
    scene = pbsim.make_scene(m, ground=kw.pop("ground")) if "ground" in kw else None
    with CompileWatch(name, notice=False) as cw:
        pbsim.rollout(m, name, dt=0.01, steps=2, scene=scene, **kw)
    out[label] = cw.seconds
print("WARMUP " + json.dumps(out))
"""


def _child_env():
    env = dict(os.environ)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    extra = [here, os.path.join(here, "models")]  # a source checkout; installed copies find them anyway
    env["PYTHONPATH"] = os.pathsep.join(extra + [env.get("PYTHONPATH", "")])
    return env


def warm_one(name: str, configs: dict) -> dict:
    """Compile ``name``'s kernels for ``configs`` in a fresh process; ``{config: seconds}``."""
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-c", _CHILD, name, json.dumps(configs)], capture_output=True, text=True, env=_child_env()
    )
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("WARMUP ")]
    if r.returncode != 0 or not line:
        tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"error": tail[0], "wall": time.perf_counter() - t0}
    res = json.loads(line[0][len("WARMUP ") :])
    res["wall"] = time.perf_counter() - t0
    return res


def warmup(integrators=DEFAULT_INTEGRATORS, configs=tuple(CONFIGS), jobs: int | None = None, report=print) -> dict:
    """Compile every (integrator, config) pair; returns ``{integrator: {config: seconds, "wall": s}}``."""
    from pbsim.errors import InputError
    from pbsim.integrators import available

    known = available()
    bad = [n for n in integrators if n not in known]
    if bad:
        raise InputError(f"unknown integrator(s) {bad}; available: {', '.join(known)}")
    bad = [c for c in configs if c not in CONFIGS]
    if bad:
        raise InputError(f"unknown warmup config(s) {bad}; available: {', '.join(CONFIGS)}")
    chosen = {c: CONFIGS[c] for c in configs}
    jobs = max(1, int(jobs or os.cpu_count() or 1))
    t0 = time.perf_counter()
    results = {}
    with ThreadPoolExecutor(jobs) as pool:
        futs = {n: pool.submit(warm_one, n, chosen) for n in integrators}
        for n, f in futs.items():
            results[n] = r = f.result()
            if report:
                if "error" in r:
                    report(f"{n:<16} failed: {r['error']}")
                else:
                    parts = "  ".join(f"{c} {r[c]:5.1f} s" for c in chosen)
                    report(f"{n:<16} {parts}  (process {r['wall']:.1f} s)")
    if report:
        report(
            f"warmed up {len(integrators)} integrator(s) in {time.perf_counter() - t0:.1f} s with {jobs} process(es)"
        )
    return results
