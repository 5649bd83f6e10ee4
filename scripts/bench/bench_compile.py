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
  together  ``--procs`` processes (default 4) started at once on one cold cache, each the
            integrator's first use (a sweep's or a vector env's workers): the compilations of
            all of them and the wall time until the last is done (pbsim.jit.lock makes the
            others wait for the first one's build and load it)
  readme    the README's main job (``pbsim rollout chain40 --integrator pbad --dt 0.05 --steps 200
            --out --plot``) end to end, process start to exit

    python scripts/bench/bench_compile.py [--integrators euler,rk4,pbad,pbad3,variational]
                                    [--cases alone,second,batch16,plane,together,readme] [--procs 4]
                                    [--src DIR] [--json out.json]

``--device cuda``: the CUDA step kernels, stage by stage, with no GPU (NVVM and nvJitLink are
host libraries: ``pip install "numba-cuda[cu12]"``).  Each build runs in a fresh process with a
cold cache folder: the frontend (typing and lowering of the kernel and every device function),
NVVM to PTX, NVVM to LTO-IR and the nvJitLink LTO (lto=True only), ptxas (inside nvJitLink),
then ptxas's ``-v`` report (registers, stack frame, spills of the kernel and of the out-of-line
functions).  A second process then loads the same kernel from the disk cache ("cached").
Builds (``--builds``):
  before    what main built until now: every feature compiled, lto=True (numba-cuda's default
            with nvJitLink), everything inlined
  lto_off   the same with lto=False
  after     what CudaBatch builds now: the run's features only, lto=False, the default
            noinline set (pbsim.jit.CUDA_NOINLINE_DEFAULT)
  after_all every feature, lto=False, the default noinline set
  noinline=A+B+...  the run's features, lto=False, these functions out of line (none: "noinline=")

    python scripts/bench/bench_compile.py --device cuda [--integrators euler,pbad] [--builds before,after]
                                    [--layout aos] [--cc 9.0] [--json out.json]

``--device cuda --on-gpu`` (on a GPU machine): the time from process start to the first
synchronized step of a ``CudaBatch`` (gymnasium's humanoid with its floor when ``--mjcf`` is
given, else the swimmer on a plane), with the stages (frontend, NVVM, link = ptxas, load = the
module load), in a fresh process with a cold cache, then in a second process on the same cache.
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

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

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
    return child_result(r.returncode, r.stdout, r.stderr)


def child_result(rc, out, err):
    """The rows a CHILD printed on its ``RESULT`` line; RuntimeError with its output's tail if none."""
    line = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
    if rc != 0 or not line:
        raise RuntimeError((err or out)[-2000:])
    return json.loads(line[0][len("RESULT ") :])


def together(src, cache, name, procs):
    """``procs`` children started at once on one cold cache: (compilations of all, wall s to the last)."""
    t0 = time.perf_counter()
    ps = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, json.dumps([[name, {}]])],
            env=child_env(src, cache),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tempfile.gettempdir(),
        )
        for _ in range(procs)
    ]
    res = []
    for p in ps:
        out, err = p.communicate()
        res.append(child_result(p.returncode, out, err)[0])
    wall = time.perf_counter() - t0
    return {
        "compile_s": sum(r["compile_s"] for r in res),
        "compilations": sum(r["compilations"] for r in res),
        "wall_s": wall,
    }


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


# the stage timer both CUDA children wrap numba-cuda's compile stages with
TIMED = r"""
T = collections.defaultdict(float)
depth = [0]
def timed(name, f, outer_only=False):
    def w(*a, **k):
        if outer_only and depth[0]:
            return f(*a, **k)
        depth[0] += outer_only
        t0 = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            T[name] += time.perf_counter() - t0
            depth[0] -= outer_only
    return w
"""

CUDA_CHILD = (
    r"""
import json, os, re, sys, time, collections
cfg = json.loads(sys.argv[1])
"""
    + TIMED
    + r"""t_start = time.perf_counter()
import numba.cuda.dispatcher as D
import numba.cuda.compiler as C
import numba.cuda.codegen as CG
import numba.cuda.cudadrv.driver as DRV
D.compile_cuda = timed("frontend", D.compile_cuda, outer_only=True)
_nv = CG.nvvm.compile_ir
def compile_ir(ir, **opts):
    return timed("nvvm_ltoir" if "gen-lto" in opts else "nvvm_ptx", _nv)(ir, **opts)
CG.nvvm.compile_ir = compile_ir
DRV._Linker.complete = timed("link", DRV._Linker.complete)
_opts = DRV._Linker._get_linker_options
def _get(self, ptx):
    o = _opts(self, ptx)
    o.ptxas_options = ["-v"]
    return o
DRV._Linker._get_linker_options = _get
import pbsim_models
from pbsim.backends import cuda as pc
from pbsim.backends import cuda_cache as pc_cache
from pbsim.backends.cuda import build_offline
pc.JIT_OPTIONS["lto"] = bool(cfg["lto"])
pc_cache.NOTICE = None
m = pbsim_models.swimmer()
from pbsim.contact import make_scene
scene = make_scene(m, ground="plane")
t0 = time.perf_counter()
r = build_offline(m, cfg["integrator"], cfg["layout"], cc=tuple(cfg["cc"]), scene=scene, features=cfg["features"])
log = r["linker_log"] or ""
regs = [int(x) for x in re.findall(r"Used (\d+) registers", log)]
stack = [int(x) for x in re.findall(r"(\d+) bytes stack frame", log)]
spill = [int(x) for x in re.findall(r"(\d+) bytes spill stores", log)]
funcs = len(re.findall(r"Compiling entry function|Function properties for", log))
ptx = "".join(r["kernel"].library._ptx_cache.get(pc._lib_cc(cfg["cc"]), []))
out = {k: round(v, 2) for k, v in T.items()}
out.update(hit=r["hit"], build_s=round(r["seconds"], 2), process_s=round(time.perf_counter() - t_start, 2),
           ptx_chars=r["ptx_chars"], cubin_bytes=r["cubin_bytes"], cubin_sha=r["cubin_sha"],
           kernel_regs=regs[0] if regs else None, max_regs=max(regs) if regs else None,
           max_stack=max(stack) if stack else None, spill_stores=sum(spill) if spill else None,
           ptx_funcs=len(re.findall(r"^\.(?:visible |weak )?\.func", ptx, flags=re.M)),
           step=dict(r["key"]).get("step"))
print("RESULT " + json.dumps(out), flush=True)
"""
)

GPU_CHILD = (
    r"""
import json, sys, time, collections
t_start = time.perf_counter()
cfg = json.loads(sys.argv[1])
"""
    + TIMED
    + r"""import numba.cuda.dispatcher as D
import numba.cuda.codegen as CG
import numba.cuda.cudadrv.driver as DRV
D.compile_cuda = timed("frontend", D.compile_cuda, outer_only=True)
_nv = CG.nvvm.compile_ir
CG.nvvm.compile_ir = lambda ir, **o: timed("nvvm", _nv)(ir, **o)
DRV._Linker.complete = timed("link", DRV._Linker.complete)
DRV.Context.create_module_image = timed("load", DRV.Context.create_module_image)
import pbsim, pbsim_models
from pbsim.backends import cuda as pc
if cfg["mjcf"]:
    from pbsim.contact import default_scene
    m = pbsim.load(cfg["mjcf"])
    scene = default_scene(m)
else:
    from pbsim.contact import make_scene
    m = pbsim_models.swimmer()
    scene = make_scene(m, ground="plane")
t0 = time.perf_counter()
b = pc.CudaBatch(m, cfg["integrator"], scene, batch=cfg["batch"], layout=cfg["layout"])
b.set_state(None)
b.advance(1, 0.01)
b.synchronize()
hits = getattr(b.kernel("steps")._cache, "hits", 0)
out = {n: round(v, 2) for n, v in T.items()}
out.update(first_step_s=round(time.perf_counter() - t0, 2), process_s=round(time.perf_counter() - t_start, 2),
           hit=bool(hits), device=pc.device_name(), layout=b.layout, features=b.features)
print("RESULT " + json.dumps(out), flush=True)
"""
)

CUDA_BUILDS = {
    "before": {"lto": True, "noinline": "none", "features": "all"},
    "lto_off": {"lto": False, "noinline": "none", "features": "all"},
    "after": {"lto": False, "noinline": "default", "features": None},
    "after_all": {"lto": False, "noinline": "default", "features": "all"},
}


def cuda_child(src, cache, cfg):
    env = child_env(src, cache)
    env["PBSIM_CUDA_NOINLINE"] = cfg["noinline"]
    r = subprocess.run(
        [sys.executable, "-c", CUDA_CHILD, json.dumps(cfg)],
        env=env,
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
    )
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    if r.returncode != 0 or not line:
        raise RuntimeError((r.stderr or r.stdout)[-3000:])
    return json.loads(line[0][len("RESULT ") :])


def main_on_gpu(a):
    """Process start to first step on a GPU, cold and from the disk cache (see the docstring)."""
    print(f"src {a.src}; {os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}", flush=True)
    head = "| kernel | layout | process | frontend s | NVVM s | link (ptxas) s | load s | first step s | process start to first step s |"
    print(head + "\n" + "|---" * (head.count("|") - 1) + "|", flush=True)
    for name in [n for n in a.integrators.split(",") if n]:
        for lay in a.layout.split(","):
            cache = tempfile.mkdtemp(prefix="pbsim_cuda_gpu_")
            cfg = {"integrator": name, "layout": lay, "batch": a.batch, "mjcf": a.mjcf}
            try:
                for which in ("cold", "cached"):
                    env = child_env(a.src, cache)
                    r = subprocess.run(
                        [sys.executable, "-c", GPU_CHILD, json.dumps(cfg)], env=env, capture_output=True, text=True
                    )
                    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
                    if r.returncode != 0 or not line:
                        print(
                            f"| {name} | {lay} | {which} | failed: {(r.stderr or r.stdout).strip()[-300:]} |",
                            flush=True,
                        )
                        break
                    o = json.loads(line[0][len("RESULT ") :])
                    odd = "" if o["hit"] == (which == "cached") else f" (unexpected {'hit' if o['hit'] else 'miss'})"
                    print(
                        f"| {name} | {lay} | {which}{odd} "
                        f"| {o.get('frontend', 0):.1f} | {o.get('nvvm', 0):.1f} | {o.get('link', 0):.1f} | {o.get('load', 0):.2f} "
                        f"| {o['first_step_s']:.2f} | **{o['process_s']:.2f}** |",
                        flush=True,
                    )
            finally:
                shutil.rmtree(cache, ignore_errors=True)
    return 0


def main_cuda(a):
    """Stage times of the CUDA step kernels without a GPU (see the module docstring)."""
    if a.on_gpu:
        return main_on_gpu(a)
    names = [n for n in a.integrators.split(",") if n]
    builds = [b for b in a.builds.split(",") if b]
    cc = tuple(int(x) for x in a.cc.split("."))
    import numba

    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "from pbsim.backends.cuda import toolkit_missing, toolchain_versions;"
            "m = toolkit_missing(); print('MISSING', m) if m else print('VERSIONS', toolchain_versions())",
        ],
        env=child_env(a.src, tempfile.gettempdir()),
        capture_output=True,
        text=True,
    )
    if "VERSIONS" not in probe.stdout:
        print(f"no CUDA toolkit libraries here: {(probe.stdout + probe.stderr).strip()[-500:]}")
        return 1
    print(
        f"src {a.src}; {os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}; numba {numba.__version__}; "
        f"sm_{cc[0]}{cc[1]}; {probe.stdout.split('VERSIONS', 1)[1].strip()}",
        flush=True,
    )
    print("model: swimmer + plane contact (the kernels are generic over models); layout " + a.layout, flush=True)
    head = (
        "| kernel | build | frontend s | NVVM s | NVVM LTO-IR s | link (LTO+ptxas) s | total s | cached (2nd process) s "
        "| PTX chars | .func | regs (kernel / max) | max stack B | spill stores B |"
    )
    print(head, flush=True)
    print("|---" * (head.count("|") - 1) + "|", flush=True)
    rows = []
    for name in names:
        for b in builds:
            if b.startswith("noinline="):
                cfg = {"lto": False, "noinline": b.split("=", 1)[1].replace("+", ",") or "none", "features": None}
            else:
                cfg = dict(CUDA_BUILDS[b])
            cfg.update(integrator=name, layout=a.layout, cc=cc)
            cache = tempfile.mkdtemp(prefix="pbsim_cuda_cc_")
            try:
                cold = cuda_child(a.src, cache, cfg)
                warm = cuda_child(a.src, cache, cfg)
            except RuntimeError as e:
                print(f"| {name} | {b} | failed: {str(e).strip().splitlines()[-1][:120]} |", flush=True)
                continue
            finally:
                shutil.rmtree(cache, ignore_errors=True)
            total = sum(cold.get(k, 0.0) for k in ("frontend", "nvvm_ptx", "nvvm_ltoir", "link"))
            same = warm["hit"] and warm["cubin_sha"] == cold["cubin_sha"]
            rows.append({"integrator": name, "build": b, "cold": cold, "warm": warm, "total_s": total})

            def f(x):
                return "-" if not x else f"{x:.1f}"

            print(
                f"| {name} | {b} | {f(cold.get('frontend'))} | {f(cold.get('nvvm_ptx'))} | "
                f"{f(cold.get('nvvm_ltoir'))} | {f(cold.get('link'))} | **{total:.1f}** | "
                f"{warm['build_s']:.2f}{'' if same else ' (MISS)'} | {cold['ptx_chars']:,} | {cold['ptx_funcs']} | "
                f"{cold['kernel_regs']} / {cold['max_regs']} | {cold['max_stack']} | {cold['spill_stores']} |",
                flush=True,
            )
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--builds", default="before,after", help="--device cuda: " + ", ".join(CUDA_BUILDS))
    ap.add_argument("--layout", default="aos", help="--device cuda: aos or soa")
    ap.add_argument("--cc", default="9.0", help="--device cuda: compute capability to build for")
    ap.add_argument("--on-gpu", action="store_true", help="--device cuda: time to first step on this GPU")
    ap.add_argument("--mjcf", default=None, help="--on-gpu: model file (gymnasium's humanoid.xml)")
    ap.add_argument("--batch", type=int, default=16384, help="--on-gpu: batch size")
    ap.add_argument("--integrators", default=None)
    ap.add_argument("--cases", default="alone,second,batch16,plane,readme")
    ap.add_argument("--src", default=ROOT, help="checkout whose pbsim is measured (default: this one)")
    ap.add_argument("--json", help="also write the rows to this JSON file")
    ap.add_argument("--procs", type=int, default=4, help="case together: processes started at once")
    a = ap.parse_args(argv)
    if a.device == "cuda":
        a.integrators = a.integrators or "euler,pbad"
        return main_cuda(a)
    a.integrators = a.integrators or "euler,rk4,pbad,pbad3,variational"
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
                elif case == "together":
                    emit(name, f"together x{a.procs} (all)", together(a.src, cache, name, a.procs))
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
    sys.exit(main())
