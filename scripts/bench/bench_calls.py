"""Step cost with the kernels internal to each build (pbsim.jit.DriverLibrary) against the same
code with numba's default linkage (``PBSIM_INTERNALIZE=0``), in the same run.

numba passes a namedtuple argument as its flattened fields and links the kernels below a batch
driver with ``linkonce_odr`` linkage, so every kernel call LLVM did not inline copied the whole
model and workspace (~1000 words).  With the kernels internal, LLVM drops the arguments a callee
does not read and inlines kernels called once.  Each (setting, method, model) runs in a fresh
process with the setting's own cache folder (kept between runs: ``--cache``), one thread, alternating ``--rounds`` times; the first
rollout's wall time (compile, or the cache's load) is reported beside the step's median cost over
``--repeats`` rollouts.  Models: ``chains`` (two free 6-link pendulum chains, no contact), ``humanoid``
(gymnasium's, on its floor, from qpos0).

    python scripts/bench/bench_calls.py [--methods euler,rk4,pbad,pbfd] [--models chains,humanoid]
                                        [--steps 20000] [--repeats 5] [--rounds 3] [--cache /tmp/pbsim_bench_calls]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np


CHILD = r"""
import json, sys, time, os
import numpy as np
import pbsim
method, model, steps, repeats, dt = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
if model == "chains":  # bench_equality.py's two 6-link chains, no constraint
    sys.path.insert(0, os.path.dirname(sys.argv[6]))
    from bench_equality import chain_xml, load
    m = load('<mujoco><option><flag contact="disable"/></option><worldbody>' + chain_xml("a", 0.0)
             + chain_xml("b", 0.1) + "</worldbody></mujoco>")
    scene = None
    q0 = m.default_configuration()
    q0[0] = 0.3
else:
    from pathlib import Path
    import gymnasium
    m = pbsim.load(Path(gymnasium.__file__).parent / "envs/mujoco/assets/humanoid.xml")
    scene = pbsim.default_scene(m)
    q0 = m.default_configuration()
t = time.perf_counter()
pbsim.rollout(m, method, scene=scene, dt=dt, steps=2, q0=q0)
first = time.perf_counter() - t
ts = []
for _ in range(repeats):
    t = time.perf_counter()
    pbsim.rollout(m, method, scene=scene, dt=dt, steps=steps, q0=q0, record_every=steps)
    ts.append((time.perf_counter() - t) / steps)
print(json.dumps(dict(first=first, us=float(np.median(ts)) * 1e6)))
"""


def run(setting: str, method: str, model: str, a) -> dict:
    env = dict(
        os.environ,
        NUMBA_NUM_THREADS="1",
        PBSIM_INTERNALIZE="1" if setting == "internal" else "0",
        PBSIM_CACHE_DIR=os.path.join(a.cache, setting),
    )
    explicit = method in ("euler", "rk4")
    dt = a.dt if model == "chains" or explicit else a.dt_implicit
    steps = a.steps if explicit else max(a.steps // 10, 10)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, method, model, str(steps), str(a.repeats), str(dt), os.path.abspath(__file__)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        return dict(first=float("nan"), us=float("nan"), error=out.stderr.strip().splitlines()[-1:])
    return json.loads(lines[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--methods", default="euler,rk4,pbad,pbfd")
    ap.add_argument("--models", default="chains,humanoid")
    ap.add_argument("--steps", type=int, default=20000, help="steps per explicit rollout (implicit methods: a tenth)")
    ap.add_argument("--repeats", type=int, default=5, help="timed rollouts per process (their median)")
    ap.add_argument(
        "--rounds", type=int, default=3, help="processes per setting, alternating (medians; the ratio: of the pairs')"
    )
    ap.add_argument("--dt", type=float, default=1e-3, help="explicit methods' step (and every method on chains)")
    ap.add_argument("--dt-implicit", type=float, default=0.02, help="the implicit methods' step on the humanoid")
    ap.add_argument("--cache", default="/tmp/pbsim_bench_calls")
    a = ap.parse_args()
    print(
        "| model | method | us/step internal | us/step linkonce_odr | speed-up | first run [s] internal / linkonce_odr |"
    )
    print("|---|---|---|---|---|---|")
    for model in a.models.split(","):
        for method in a.methods.split(","):
            rounds = [{s: run(s, method, model, a) for s in ("internal", "external")} for _ in range(a.rounds)]
            med = {s: float(np.median([r[s]["us"] for r in rounds])) for s in ("internal", "external")}
            ratio = float(np.median([r["external"]["us"] / r["internal"]["us"] for r in rounds]))
            first = {s: rounds[0][s]["first"] for s in ("internal", "external")}
            print(
                f"| {model} | {method} | {med['internal']:.2f} | {med['external']:.2f} | {ratio:.2f}x | "
                f"{first['internal']:.1f} / {first['external']:.1f} |",
                flush=True,
            )
            for r in rounds:
                for s in r:
                    if "error" in r[s]:
                        print(f"  {s}: {r[s]['error']}", file=sys.stderr)


if __name__ == "__main__":
    main()
