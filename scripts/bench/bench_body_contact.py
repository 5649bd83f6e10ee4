"""Cost of contact between bodies (issue 28): wall time per step, with and without it, one trajectory
on one thread, against MuJoCo (``mujoco.rollout``, its Euler integrator at the same dt) on the
same file.

    python scripts/bench/bench_body_contact.py [--seconds 2] [--methods euler,pbad,pbfd,nmdp] [--png out.png]

Models: gymnasium's humanoid dropped from its qpos0 (MuJoCo's rules: self-collision, 109 body-body
items; "without": ``make_scene(body_contact=False)``, floor contact only) and a stack of 10 boxes
(each yawed 15 deg from the one below; "without" they fall through each other, so its "without"
column is the cost of the same number of steps of a different motion).  dt: 2 ms for euler (and
MuJoCo), 20 ms for the implicit methods.  Compilation is excluded (each run twice, the second timed).  The
"ratio" is with / without; issue 28's target is <= 2 for euler and pbad on the humanoid.
Prints a markdown table; ``--png`` draws it as bars.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings

import numpy as np

import pbsim
from pbsim.contact import make_scene

DT = {"euler": 0.002, "pbad": 0.02, "pbfd": 0.02, "nmdp": 0.02, "pbd_nmdp": 0.02}


def stack_xml(n: int = 10, half: float = 0.05) -> str:
    bodies = "".join(
        f'<body name="b{i}" pos="0 0 {half + i * (2 * half + 0.002):.4f}" euler="0 0 {15 * i}"><freejoint/>'
        f'<geom type="box" size="{half} {half} {half}" mass="0.5"/></body>'
        for i in range(n)
    )
    return (
        f'<mujoco><option timestep="0.002" integrator="Euler"/><worldbody>'
        f'<geom name="floor" type="plane" size="5 5 0.1"/>{bodies}</worldbody></mujoco>'
    )


def models() -> dict:
    import gymnasium

    out = {"humanoid": os.path.join(os.path.dirname(gymnasium.__file__), "envs/mujoco/assets/humanoid.xml")}
    p = os.path.join(tempfile.mkdtemp(), "stack10.xml")
    with open(p, "w") as f:
        f.write(stack_xml())
    out["stack10"] = p
    return out


def pbsim_cost(m, method, scene, seconds):
    """(wall seconds per step, steps) of ``rollout``, the second of two identical runs (the first
    compiles whatever the run reaches: the compiled loop, and the integrator's own step for the steps
    it hands back to Python)."""
    dt = DT[method]
    n = int(round(seconds / dt))
    q0 = m.default_configuration()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pbsim.rollout(m, method, dt=dt, steps=n, q0=q0, scene=scene, on_nan="stop")
        t = time.perf_counter()
        pbsim.rollout(m, method, dt=dt, steps=n, q0=q0, scene=scene, on_nan="stop")
    return (time.perf_counter() - t) / n, n


def mujoco_cost(path, dt, seconds):
    """Wall seconds per step of ``mujoco.rollout`` (Euler, ``dt``) from qpos0, one thread."""
    import mujoco
    from mujoco import rollout

    mj = mujoco.MjModel.from_xml_path(path)
    mj.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    mj.opt.timestep = dt
    d = mujoco.MjData(mj)
    state = np.zeros(mujoco.mj_stateSize(mj, mujoco.mjtState.mjSTATE_FULLPHYSICS))
    mujoco.mj_getState(mj, d, state, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    n = int(round(seconds / dt))
    ctrl = np.zeros((1, n, mj.nu))
    rollout.rollout(mj, d, state[None], ctrl[:, :2])
    t = time.perf_counter()
    rollout.rollout(mj, d, state[None], ctrl)
    return (time.perf_counter() - t) / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0, help="simulated seconds per run")
    ap.add_argument("--methods", default="euler,pbad,pbfd,nmdp")
    ap.add_argument("--png", help="write the table as a bar chart")
    a = ap.parse_args()
    import numba

    numba.set_num_threads(1)
    rows = []
    for name, path in models().items():
        m = pbsim.load(path)
        with_bc = make_scene(m)
        without = make_scene(m, body_contact=False)
        items = with_bc.kernel_arrays(m).nitem
        mj_euler = mujoco_cost(path, DT["euler"], a.seconds)
        for method in a.methods.split(","):
            try:
                w, n = pbsim_cost(m, method, with_bc, a.seconds)
                wo, _ = pbsim_cost(m, method, without, a.seconds)
            except Exception as e:  # noqa: BLE001 - a row says why
                rows.append((name, method, items, None, None, None, None, f"{type(e).__name__}: {str(e)[:60]}"))
                continue
            mj = mujoco_cost(path, DT[method], a.seconds) if method != "euler" else mj_euler
            rows.append((name, method, items, w, wo, w / wo, w / mj, ""))
    print(
        "| model | method | dt (ms) | items | us/step with | us/step without | ratio with/without | "
        "x MuJoCo Euler (same dt) | note |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, method, items, w, wo, r, x, note in rows:
        if w is None:
            print(f"| {name} | {method} | {DT[method] * 1e3:g} | {items} | - | - | - | - | {note} |")
        else:
            print(
                f"| {name} | {method} | {DT[method] * 1e3:g} | {items} | {w * 1e6:.1f} | {wo * 1e6:.1f} | {r:.2f} | "
                f"{x:.1f} | {note} |"
            )
    if a.png:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        ok = [r for r in rows if r[3] is not None]
        labels = [f"{r[0]}\n{r[1]}" for r in ok]
        xs = np.arange(len(ok))
        fig, ax = plt.subplots(figsize=(max(6, len(ok) * 1.1), 4))
        ax.bar(xs - 0.2, [r[3] * 1e6 for r in ok], 0.4, label="with contact between bodies")
        ax.bar(xs + 0.2, [r[4] * 1e6 for r in ok], 0.4, label="without")
        ax.set_xticks(xs, labels, fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("wall us per step (1 thread)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(a.png, dpi=120)
        print(f"wrote {a.png}")


if __name__ == "__main__":
    main()
