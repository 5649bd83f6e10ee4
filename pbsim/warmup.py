"""``pbsim warmup``: compile the common kernels once, in parallel, so that first runs are fast.

Numba caches compiled kernels on disk (``~/.cache/pbsim/numba``, or ``$PBSIM_CACHE_DIR``), keyed
on numba's version and pbsim's kernel sources; a run that finds them there starts in about a
second.  Warming up runs tiny rollouts (a 3-link chain: the kernels' types do not depend on the
robot) for each integrator and configuration, one integrator per process, ``jobs`` processes at
a time, and reports what each compile cost.

``device="cuda"`` (``pbsim warmup --device cuda``) fills the CUDA kernel cache
(``~/.cache/pbsim/cuda``) instead: each integrator's step kernel for each configuration
(:data:`CUDA_CONFIGS`) and layout (:data:`CUDA_LAYOUTS`).  On a GPU machine it launches a small
``CudaBatch``, for the GPU's compute capability; without a GPU it builds the same kernels for
``cc`` with NVVM and nvJitLink (``numba-cuda[cu12]``), for a GPU of that compute capability whose
machine shares the cache folder and toolkit versions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

DEFAULT_INTEGRATORS = ("euler", "rk4", "pbad")
CUDA_INTEGRATORS = ("euler", "pbad")
CUDA_LAYOUTS = ("aos", "soa")
# the GPU runs worth warming: with ground contact (the gymnasium-style robots on their floor) and
# without any (each is a kernel build of its own: only the features a run uses are compiled)
CUDA_CONFIGS = {"contact": {"ground": "plane"}, "free": {}}
# (label, rollout keyword arguments): single trajectory, with ground contact, and a batch of 4
# (batches of 4 or more run the prange build of the batch driver, a compilation of its own)
CONFIGS = {"single": {}, "contact": {"ground": "plane"}, "batch": {"batch": 4}}

_CHILD = r"""
import json, sys, time
import pbsim, pbsim_models
from pbsim.jit import CompileWatch
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


_CUDA_CHILD = r"""
import json, sys, time
import pbsim, pbsim_models
from pbsim.backends import cuda as pc
name, configs, layouts, cc = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3].split(","), sys.argv[4]
m = pbsim_models.chain(3)
gpu = pc.available()
out = {}
for label, kw in configs.items():
    scene = pbsim.make_scene(m, ground=kw["ground"]) if "ground" in kw else None
    for lay in layouts:
        t0 = time.perf_counter()
        if gpu:
            b = pc.CudaBatch(m, name, scene, batch=4, layout=lay)
            b.set_state(None)
            b.advance(1, 0.01)
            b.synchronize()
        else:
            pc.build_offline(m, name, lay, cc=tuple(int(c) for c in cc.split(".")), scene=scene)
        out[f"{label}/{lay}"] = time.perf_counter() - t0
out["target"] = pc.device_name() if gpu else f"sm_{cc.replace('.', '')} (no GPU: NVVM + nvJitLink)"
print("WARMUP " + json.dumps(out))
"""


def _child_env():
    env = dict(os.environ)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    extra = [here, os.path.join(here, "models")]  # a source checkout; installed copies find them anyway
    env["PYTHONPATH"] = os.pathsep.join(extra + [env.get("PYTHONPATH", "")])
    return env


def warm_one(name: str, configs: dict, cuda_args=None) -> dict:
    """Compile ``name``'s kernels for ``configs`` in a fresh process; ``{config: seconds}``
    (``cuda_args``: ``(layouts, cc)`` for the CUDA kernels)."""
    t0 = time.perf_counter()
    if cuda_args is None:
        argv = [sys.executable, "-c", _CHILD, name, json.dumps(configs)]
    else:
        argv = [sys.executable, "-c", _CUDA_CHILD, name, json.dumps(configs), ",".join(cuda_args[0]), cuda_args[1]]
    r = subprocess.run(argv, capture_output=True, text=True, env=_child_env())
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("WARMUP ")]
    if r.returncode != 0 or not line:
        tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"error": tail[0], "wall": time.perf_counter() - t0}
    res = json.loads(line[0][len("WARMUP ") :])
    res["wall"] = time.perf_counter() - t0
    return res


def warmup(
    integrators=None,
    configs=None,
    jobs: int | None = None,
    report=print,
    device: str = "cpu",
    layouts=CUDA_LAYOUTS,
    cc: str = "9.0",
) -> dict:
    """Compile every (integrator, config) pair; returns ``{integrator: {config: seconds, "wall": s}}``.

    ``device="cuda"``: the CUDA step kernels for each config of :data:`CUDA_CONFIGS` and each
    of ``layouts``, on this machine's GPU, else for compute capability ``cc`` without one."""
    from pbsim.errors import InputError
    from pbsim.integrators import available

    if device not in ("cpu", "cuda"):
        raise InputError(f"device must be 'cpu' or 'cuda', got {device!r}")
    table = CONFIGS if device == "cpu" else CUDA_CONFIGS
    if integrators is None:
        integrators = DEFAULT_INTEGRATORS if device == "cpu" else CUDA_INTEGRATORS
    configs = tuple(table) if configs is None else configs
    known = available()
    bad = [n for n in integrators if n not in known]
    if bad:
        raise InputError(f"unknown integrator(s) {bad}; available: {', '.join(known)}")
    bad = [c for c in configs if c not in table]
    if bad:
        raise InputError(f"unknown warmup config(s) {bad}; available: {', '.join(table)}")
    cuda_args = None
    if device == "cuda":
        from pbsim.backends.cuda import LAYOUTS, supported_integrators

        bad = [n for n in integrators if n not in supported_integrators()]
        if bad:
            raise InputError(
                f"integrator(s) {bad} have no CUDA step kernel; supported: {', '.join(supported_integrators())}"
            )
        bad = [x for x in layouts if x not in LAYOUTS]
        if bad:
            raise InputError(f"unknown layout(s) {bad}; available: {', '.join(LAYOUTS)}")
        cuda_args = (tuple(layouts), str(cc))
    chosen = {c: table[c] for c in configs}
    jobs = max(1, int(jobs or os.cpu_count() or 1))
    t0 = time.perf_counter()
    results = {}
    with ThreadPoolExecutor(jobs) as pool:
        futs = {n: pool.submit(warm_one, n, chosen, cuda_args) for n in integrators}
        for n, f in futs.items():
            results[n] = r = f.result()
            if report:
                if "error" in r:
                    report(f"{n:<16} failed: {r['error']}")
                else:
                    parts = "  ".join(f"{c} {v:5.1f} s" for c, v in r.items() if c not in ("wall", "target"))
                    where = f" on {r['target']}" if "target" in r else ""
                    report(f"{n:<16} {parts}  (process {r['wall']:.1f} s){where}")
    if report:
        report(
            f"warmed up {len(integrators)} integrator(s) in {time.perf_counter() - t0:.1f} s with {jobs} process(es)"
            + (f"; CUDA kernel cache: {_cuda_cache_dir()}" if device == "cuda" else "")
        )
    return results


def _cuda_cache_dir():
    from pbsim.jit import cuda_cache_dir

    return cuda_cache_dir()
