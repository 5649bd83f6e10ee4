"""Issue 30's pbfd experiment: gymnasium's humanoid dropped onto its floor, counted diverged.

Every start is the file's qpos0 (root 1.4 m up, standing on the floor: the robot, unactuated,
collapses onto it) with random joint velocities ``vel * N(0, 1)`` rad/s (numpy
``default_rng(seed)``, one row per start; the root's velocity zero), run ``seconds`` simulated
seconds of pbfd at each ``dt`` through one path:

- ``--path batch``: ``CpuBatch`` (``--device cpu``) or ``CudaBatch`` (``--device cuda``), the
  whole run in one ``advance`` call; diverged by the shared rule on the final state
  (``diverged()``: non-finite, a joint beyond the speed bound, or an energy gain past 10x the
  model's energy scale);
- ``--path rollout``: ``pbsim.rollout(..., on_nan="stop")`` (the rule after every step).

One table row per (path, dt): starts, diverged, the lowest final root height, the steps the step
kernel redid as sub-steps (its fallback, issue 30; "-" where the code has none), the starts whose
last step is still unconverged, wall seconds (compilation included on a first run).

    python scripts/checks/pbfd_drops.py                                   # CpuBatch, 64 starts, dt 0.02
    python scripts/checks/pbfd_drops.py --dt 0.005,0.02,0.05 --path batch,rollout
    python scripts/checks/pbfd_drops.py --device cuda --batch 16384 --dt 0.02 --mjcf humanoid.xml
    python scripts/checks/pbfd_drops.py --batch 16384 --chunk 1024   # a row per 1,024 starts as they finish, then the total
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

import pbsim  # noqa: E402
from pbsim.contact import default_scene  # noqa: E402
from pbsim.integrators.divergence import check_run  # noqa: E402


def humanoid_path() -> str:
    import gymnasium

    return str(Path(gymnasium.__file__).parent / "envs/mujoco/assets/humanoid.xml")


def starts(model, batch: int, vel: float, seed: int):
    """(q0, v0): qpos0 in every row, joint velocities ``vel * N(0, 1)`` (the root's zero)."""
    q0 = np.tile(model.default_configuration(), (batch, 1))
    v0 = np.zeros((batch, model.nv))
    v0[:, 6:] = vel * np.random.default_rng(seed).standard_normal((batch, model.nv - 6))
    return q0, v0


def run_batch(model, scene, q0, v0, dt, steps, device, method, options):
    if device == "cuda":
        from pbsim.backends.cuda import CudaBatch

        cb = CudaBatch(model, method, scene, len(q0), **options)
    else:
        from pbsim.backends.cpu import CpuBatch

        cb = CpuBatch(model, method, scene, len(q0), **options)
    cb.set_state(q0, v0)
    cb.advance(steps, dt)
    cb.synchronize()
    q, v = cb.state()
    div, _ = cb.diverged()
    info = cb.solver_info()
    fb = cb.fallback_steps() if hasattr(cb, "fallback_steps") else None
    return q, np.asarray(div, bool), fb, info[:, 2] < 0.5


def run_rollout(model, scene, q0, v0, dt, steps, method, options):
    tr = pbsim.rollout(model, method, dt=dt, steps=steps, q0=q0, v0=v0, scene=scene, on_nan="stop", **options)
    q, v = tr.q[-1], tr.v[-1]
    div = np.asarray(tr.diverged, bool) | np.asarray(check_run(model, q0, v0, q, v)[0], bool)
    return q, div, tr.info.get("fallback_steps"), None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--path", default="batch", help="batch, rollout or both (comma-separated)")
    ap.add_argument("--batch", type=int, default=64, help="number of starts")
    ap.add_argument("--dt", default="0.02", help="step(s) [s], comma-separated")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--vel", type=float, default=0.01, help="joint velocity scale [rad/s]")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mjcf", default=None, help="the humanoid's MJCF (default: gymnasium's humanoid.xml)")
    ap.add_argument("--method", default="pbfd")
    ap.add_argument("--substep", type=int, default=None, help="the method's fallback levels (default: its own)")
    ap.add_argument(
        "--chunk",
        type=int,
        default=0,
        help="run the starts in chunks of this many (0: all at once), a row per chunk and the total",
    )
    a = ap.parse_args(argv)
    model = pbsim.load(a.mjcf or humanoid_path())
    scene = default_scene(model)
    q0, v0 = starts(model, a.batch, a.vel, a.seed)
    options = {} if a.substep is None else {"substep": a.substep}
    print(
        f"pbfd drops: {a.method} on {Path(a.mjcf or humanoid_path()).name} ({model.nv} DOF), {a.batch} starts, "
        f"joint velocities {a.vel} N(0,1) rad/s (seed {a.seed}), {a.seconds:g} s, options {options}",
        flush=True,
    )
    print(
        "| path | device | starts | dt [s] | diverged | min root z [m] | fallback steps (starts) | "
        "unconverged last step | wall [s] |"
    )
    print("|---|---|---|---|---|---|---|---|---|", flush=True)
    for path in a.path.split(","):
        if path not in ("batch", "rollout"):
            raise SystemExit(f"--path: batch or rollout, got {path!r}")
        if path == "rollout" and a.device != "cpu":
            raise SystemExit("--path rollout runs on the CPU here (use --path batch with --device cuda)")
        for dt in (float(x) for x in a.dt.split(",")):
            steps = int(round(a.seconds / dt))
            n = a.batch if a.chunk <= 0 else a.chunk
            parts = []
            for c0 in range(0, a.batch, n):
                sl = slice(c0, min(c0 + n, a.batch))
                t0 = time.perf_counter()
                if path == "batch":
                    out = run_batch(model, scene, q0[sl], v0[sl], dt, steps, a.device, a.method, options)
                else:
                    out = run_rollout(model, scene, q0[sl], v0[sl], dt, steps, a.method, options)
                parts.append(out + (time.perf_counter() - t0,))
                if a.chunk > 0:
                    row(a, path, dt, sl.stop - sl.start, *parts[-1], label=f" [{sl.start}:{sl.stop}]")
            q = np.concatenate([p[0] for p in parts])
            div = np.concatenate([p[1] for p in parts])
            fb = None if parts[0][2] is None else np.concatenate([np.atleast_1d(p[2]) for p in parts])
            unconv = None if parts[0][3] is None else np.concatenate([p[3] for p in parts])
            row(a, path, dt, a.batch, q, div, fb, unconv, sum(p[4] for p in parts))


def row(a, path, dt, starts, q, div, fb, unconv, wall, label=""):
    """One table row."""
    z = q[:, 2]
    zmin = f"{np.nanmin(z):.3g}" if np.isfinite(z).any() else "nan"
    if np.isnan(z).any():
        zmin += f" ({int(np.isnan(z).sum())} NaN)"
    fbs = "-" if fb is None else f"{int(np.sum(fb))} ({int(np.count_nonzero(fb))})"
    unc = "-" if unconv is None else str(int(np.count_nonzero(unconv)))
    name = "rollout" if path == "rollout" else "CpuBatch" if a.device == "cpu" else "CudaBatch"
    print(
        f"| {name}{label} | {a.device} | {starts} | {dt:g} | {int(np.sum(div))} | {zmin} | {fbs} | {unc} | "
        f"{wall:.1f} |",
        flush=True,
    )


if __name__ == "__main__":
    main()
