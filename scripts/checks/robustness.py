"""Issue 30's matrix: every contact-capable integrator x a corpus of robots x dt 5 / 20 / 50 ms x
8 random starts, through ``pbsim.rollout`` and through ``CpuBatch``.

Each robot (``--robots``; the corpus: gymnasium's walkers and humanoid, pybullet_data's
quadrupeds and DeepMimic humanoid, our generated robots, the Robosimian from ``../shared``, skipped
when a file is absent) is dropped onto a plane from its file's configuration: a floating base
whose lowest contact point is lower than ``--lift`` (1 cm) above the ground is raised to it
(gymnasium's ant, 0.75 m up in its file, drops from there: lowered onto the floor, its legs,
which start 30 degrees past their ankles' ranges, snap into range and throw it 2 m up, in MuJoCo
too; the planar walkers start as their files say, feet on the floor); the starts add ``--vel`` (0.01 rad/s)
``N(0, 1)`` joint velocities (numpy ``default_rng(seed)``, one row per start; a floating base
at rest).  The scene: ``pbsim.default_scene(model, ground="auto")`` (the file's own floor, else a
plane), bodies touching each other as the contact rules say; no control (the file's actuators
at ctrl 0).

Per (robot, method, dt, path), over the starts:

- ``div``: diverged (the shared rule, docs/reliability.md: non-finite, a joint past the speed
  bound, an energy gain past 10x the model's energy scale), ``rollout(on_nan="stop")`` after
  every step, the same rule (``check_run``, as ``CpuBatch.diverged()``) after every batch step;
- ``sub``: steps whose solver stalled and that the step kernel redid as sub-steps (pbfd,
  pbd_friction: ``fallback_steps``; "-" for methods without the fallback); ``unc``: steps left
  unconverged (rollout: ``info["unconverged_steps"]``; CpuBatch: ``solver_info`` after each step);
- ``pen``: the deepest contact point over the run [mm] (bound: ``Scene.max_penetration``, 50 mm);
- ``rest``: the largest |rest height - the same method's 1 ms rest height| over the starts [mm],
  the rest height being the centre of mass's height averaged over the last 0.2 s, the 1 ms
  reference run through ``rollout`` from the same start; ``n1cm``: how many starts rest within
  1 cm of it (computed over the starts that did not diverge);
- ``s/s``: wall seconds per simulated second per trajectory, on one thread
  (``NUMBA_NUM_THREADS=1``; compile excluded: a 2-step run of each path first, and what rollout's
  compile watch reports, ``info["compile_s"]``).

A method a path refuses (a method without a batch kernel in ``CpuBatch``) gets "refused" and the
reason.  Prints a Markdown table and writes JSON (``--json``) and a heat-map PNG (``--png``): one
panel per quantity, methods x (robot, dt), the batch path's cells.

    NUMBA_NUM_THREADS=1 python scripts/checks/robustness.py [--robots humanoid,ant,a1] [--methods pbad,pbfd]
        [--dts 5,20,50] [--starts 8] [--T 2] [--json out.json] [--png docs/img/robustness.png]
    python scripts/checks/robustness.py --plot out1.json,out2.json --png docs/img/robustness.png  # merge, plot
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this tree's pbsim

import pbsim  # noqa: E402
from pbsim.errors import PbsimError  # noqa: E402
from pbsim.integrators.divergence import check_run  # noqa: E402

# every method that takes contact with the environment, implicit ones first
METHODS = (
    "pbad", "pbad3", "pbad4", "pbfd", "pbd_friction", "nmdp", "nmdp_zo", "pbd_nmdp", "pbd_nmdp_zo", "ne_dry",
    "ne_mdp", "variational", "euler", "rk4",
)  # fmt: skip
REST_WINDOW = 0.2  # s
REF_DT = 1e-3


def _gym(name):
    import gymnasium

    return Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / name


def _pyb(name):
    import pybullet_data

    return Path(pybullet_data.getDataPath()) / name


ROBOTS = {  # name -> (collection, path)
    "humanoid": ("gymnasium", lambda: _gym("humanoid.xml")),
    "ant": ("gymnasium", lambda: _gym("ant.xml")),
    "hopper": ("gymnasium", lambda: _gym("hopper.xml")),
    "walker2d": ("gymnasium", lambda: _gym("walker2d.xml")),
    "a1": ("pybullet_data", lambda: _pyb("a1/a1.urdf")),
    "aliengo": ("pybullet_data", lambda: _pyb("aliengo/aliengo.urdf")),
    "deepmimic": ("pybullet_data", lambda: _pyb("humanoid/humanoid.urdf")),
    "quad18": ("pbsim models", lambda: ROOT / "models" / "heldout" / "quad18.xml"),
    "spider": ("pbsim models", lambda: ROOT / "models" / "generated" / "spider.xml"),
    "robosimian": (
        "../shared",
        lambda: ROOT.parent / "shared" / "robots" / "robosimian" / "robosimian_caesar_new.urdf",
    ),
}


def setup(name, lift):
    """``(model, scene, q0)`` of a corpus robot, or None when its file is absent."""
    try:
        path = Path(ROBOTS[name][1]())
    except ImportError:
        return None
    if not path.exists():
        return None
    m = pbsim.load(str(path))
    sc = pbsim.default_scene(m, ground="auto")
    q0 = np.array(m.default_configuration(), float)
    if m.floating_base:
        r = pbsim.contact_query(m, sc, q0)
        low = float((r["X"][0][:, 2] - sc.points.radius).min())
        q0[2] += max(lift - low, 0.0)  # raised, never lowered: the ant's file holds it 0.75 m up
    return m, sc, q0


def starts(m, q0, n, vel, seed):
    Q0 = np.tile(q0, (n, 1))
    V0 = np.zeros((n, m.nv))
    j0 = 6 if m.floating_base else 0
    V0[:, j0:] = vel * np.random.default_rng(seed).standard_normal((n, m.nv - j0))
    return Q0, V0


def com_height(m, Q):
    """Centre-of-mass height of each row of ``Q`` (B, nq)."""
    T = pbsim.forward_kinematics(m, Q)
    c = np.einsum("bkij,kj->bki", T[:, :, :3, :3], m.com) + T[:, :, :3, 3]
    return (c[:, :, 2] * m.mass).sum(1) / m.mass.sum()


def run_rollout(m, sc, Q0, V0, method, dt, T):
    steps = int(round(T / dt))
    nw = max(1, int(round(REST_WINDOW / dt)))
    pbsim.rollout(m, method, dt=dt, steps=2, q0=Q0, v0=V0, scene=sc, on_nan="stop")  # compile / load
    t0 = time.perf_counter()
    tr = pbsim.rollout(m, method, dt=dt, steps=steps, q0=Q0, v0=V0, scene=sc, on_nan="stop")
    # less what rollout's watch saw compiling: a stalled step the loop hands to Integrator.step
    # compiles that path on its first use (walker2d pbad at 20 ms read 1.28 s/s with it, 0.007 batch)
    wall = time.perf_counter() - t0 - float(tr.info.get("compile_s", 0.0))
    q = np.asarray(tr.q)  # (steps + 1, B, nq)
    rest = np.mean([com_height(m, q[-1 - k]) for k in range(nw)], axis=0)
    div = np.asarray(tr.diverged, bool).reshape(-1)
    info = tr.info
    fb = info.get("fallback_steps")
    return dict(
        div=div,
        rest=rest,
        pen=np.asarray(info.get("max_penetration", np.full(len(Q0), np.nan)), float).reshape(-1),
        unc=int(np.sum(info.get("unconverged_steps", 0))),
        sub=None if fb is None else int(np.sum(fb)),
        wall=wall / (len(Q0) * steps * dt),
    )


def run_batch(m, sc, Q0, V0, method, dt, T):
    from pbsim.backends.cpu import CpuBatch
    from pbsim.contact.depth import max_depth_batch
    from pbsim.dynamics.workspace import work_for

    steps = int(round(T / dt))
    nw = max(1, int(round(REST_WINDOW / dt)))
    B = len(Q0)
    cb = CpuBatch(m, method, sc, B)
    cb.set_state(Q0, V0)
    cb.advance(2, dt)  # compile / load
    cb.set_state(Q0, V0)
    ks, w = sc.kernel_arrays(m), work_for(m, B)
    pen, depth = np.zeros(B), np.zeros(B)
    div = np.zeros(B, bool)
    unc, rest, wall = 0, np.zeros(B), 0.0
    for k in range(steps):
        t0 = time.perf_counter()
        cb.advance(1, dt)
        wall += time.perf_counter() - t0
        q, v = cb.state()
        bad = np.asarray(check_run(m, Q0, V0, q, v)[0], bool)
        div |= bad
        info = cb.solver_info()
        if info is not None:
            unc += int(np.count_nonzero((info[:, 2] < 0.5) & ~div))
        qc = np.ascontiguousarray(np.where(div[:, None], Q0, q))  # a diverged row is left out
        if ks.npts > 0 or ks.nitem > 0:
            max_depth_batch(m.k, ks, w, qc, depth)
            pen = np.where(div, pen, np.maximum(pen, depth))
        if k >= steps - nw:
            rest += com_height(m, qc) / nw
    fb = cb.fallback_steps()
    return dict(
        div=div, rest=rest, pen=pen, unc=unc, sub=None if fb is None else int(np.sum(fb)), wall=wall / (B * steps * dt)
    )


def reference(m, sc, Q0, V0, method, T):
    """The 1 ms rest heights (through rollout)."""
    r = run_rollout(m, sc, Q0, V0, method, REF_DT, T)
    return np.where(r["div"], np.nan, r["rest"])


def cell(path, m, sc, Q0, V0, method, dt, T, ref):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = (run_rollout if path == "rollout" else run_batch)(m, sc, Q0, V0, method, dt, T)
    except PbsimError as e:
        return dict(refused=str(e).splitlines()[0][:160])
    ok = ~r["div"] & np.isfinite(ref)
    d = np.abs(r["rest"] - ref)[ok] * 1e3
    return dict(
        div=int(r["div"].sum()),
        sub=r["sub"],
        unc=r["unc"],
        pen=float(np.nanmax(np.where(r["div"], np.nan, r["pen"]))) * 1e3 if (~r["div"]).any() else float("nan"),
        rest=float(d.max()) if d.size else float("nan"),
        n1cm=int(np.count_nonzero(d <= 10.0)),
        nok=int(ok.sum()),
        wall=r["wall"],
    )


def fmt(c):
    if "refused" in c:
        return "refused | | | | | |"
    sub = "-" if c["sub"] is None else str(c["sub"])
    return (
        f"{c['div']} | {sub} / {c['unc']} | {c['pen']:.1f} | {c['rest']:.1f} | {c['n1cm']}/{c['nok']} | {c['wall']:.3g}"
    )


def shown(rows):
    """Per (robot, method, dt) the row the table and the plot show: the batch path's, else
    rollout's (the batch path refuses a method without a batch kernel); refused cells left out."""
    best = {}
    for r in rows:
        k = (r["robot"], r["method"], r["dt"])
        if "refused" not in r["cell"] and (k not in best or r["path"] == "batch"):
            best[k] = r
    return best


def plot(rows, png):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(shown(rows).values())
    methods = list(dict.fromkeys(r["method"] for r in rows))
    robots = list(dict.fromkeys(r["robot"] for r in rows))
    cols = sorted(dict.fromkeys((r["robot"], r["dt"]) for r in rows), key=lambda c: (robots.index(c[0]), c[1]))
    panels = [
        ("div", "diverged of the starts", "Reds", None),
        ("pen", "deepest penetration [mm] (bound 50)", "viridis", 50),
        ("rest", "max |rest - 1 ms rest| [mm]", "magma", 50),
        ("wall", "wall / simulated [s/s]", "cividis", None),
    ]
    fig, axes = plt.subplots(len(panels), 1, figsize=(max(8, 0.45 * len(cols) + 3), 3.2 * len(panels) + 1))
    for ax, (key, title, cmap, vmax) in zip(axes, panels):
        A = np.full((len(methods), len(cols)), np.nan)
        for r in rows:
            v = r["cell"].get(key)
            A[methods.index(r["method"]), cols.index((r["robot"], r["dt"]))] = np.nan if v is None else v
        data = np.log10(np.maximum(A, 1e-3)) if key == "wall" else A
        im = ax.imshow(
            data,
            aspect="auto",
            cmap=cmap,
            vmin=(np.log10(0.003) if key == "wall" else 0),
            vmax=(np.log10(30) if key == "wall" else vmax),
        )
        for i in range(A.shape[0]):
            for j in range(A.shape[1]):
                if np.isfinite(A[i, j]):
                    light = im.norm(data[i, j]) > 0.6 if cmap != "Reds" else im.norm(data[i, j]) < 0.5
                    ax.text(j, i, f"{A[i, j]:.2g}", ha="center", va="center", fontsize=6, color="k" if light else "w")
        ax.set_yticks(range(len(methods)), methods, fontsize=7)
        ax.set_xticks(range(len(cols)), [f"{r} {d:g}" for r, d in cols], rotation=90, fontsize=7)
        ax.set_title(title + (" (log10)" if key == "wall" else ""), fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.02)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def _same(x, y):
    """Equal numbers (NaN equal to NaN; floats to 1e-9 relative: the rest averages sum in another order)."""
    if x is None or y is None:
        return x is y
    return x == y or (x != x and y != y) or abs(x - y) <= 1e-9 * (1.0 + abs(x))


def summary(rows):
    """A compact Markdown table: one row per (robot, method), per dt ``diverged / deepest mm /
    starts within 1 cm of the 1 ms rest / s/s`` of the batch path (rollout's where the batch path
    refuses the method), and whether the two paths agree in every cell."""
    cells = {(r["robot"], r["method"], r["dt"], r["path"]): r["cell"] for r in rows}
    best = shown(rows)
    dts = sorted({r["dt"] for r in rows})
    out = [
        "| robot | method | " + " | ".join(f"{d:g} ms: div / pen / 1 cm / s/s" for d in dts) + " | rollout = batch |",
        "|---|---|" + "---|" * (len(dts) + 1),
    ]
    for robot, method in dict.fromkeys((r["robot"], r["method"]) for r in rows):
        parts, same = [], "yes"
        for d in dts:
            b, ro = cells.get((robot, method, d, "batch")), cells.get((robot, method, d, "rollout"))
            if b is not None and "refused" in b:
                same = "no batch kernel"
            elif b is not None and ro is not None and "refused" not in ro:
                if not all(_same(b[k], ro[k]) for k in ("div", "pen", "rest", "sub", "unc")):
                    same = "no"
            if (robot, method, d) not in best:
                parts.append("-")
                continue
            c = best[robot, method, d]["cell"]
            pen = "-" if c["pen"] != c["pen"] else f"{c['pen']:.0f}"
            parts.append(f"{c['div']} / {pen} / {c['n1cm']}/{c['nok']} / {c['wall']:.2g}")
        out.append(f"| {robot} | {method} | " + " | ".join(parts) + f" | {same} |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robots", default=",".join(ROBOTS))
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--dts", default="5,20,50", help="ms")
    ap.add_argument("--paths", default="rollout,batch")
    ap.add_argument("--starts", type=int, default=8)
    ap.add_argument("--T", type=float, default=2.0, help="simulated seconds per run")
    ap.add_argument("--vel", type=float, default=0.01, help="random joint velocity scale [rad/s]")
    ap.add_argument("--lift", type=float, default=0.01, help="a floating base's lowest contact point at release [m]")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None)
    ap.add_argument("--png", default=None)
    ap.add_argument("--plot", default=None, help="only merge these JSON files (comma-separated) into --png")
    a = ap.parse_args(argv)
    if a.plot:
        rows = {}
        for f in a.plot.split(","):  # a later file's cell replaces an earlier one's
            for r in json.loads(Path(f).read_text()):
                rows[(r["robot"], r["method"], r["dt"], r["path"])] = r
        rows = list(rows.values())
        print(summary(rows))
        if a.png:
            plot(rows, a.png)
        return
    rows = []
    print(
        "| robot | DOF | method | dt [ms] | path | diverged | sub-stepped / unconverged steps | max pen [mm] | "
        "max rest diff [mm] | within 1 cm | s/s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    for robot in a.robots.split(","):
        got = setup(robot, a.lift)
        if got is None:
            print(f"| {robot} | absent ({ROBOTS[robot][0]}) |", flush=True)
            continue
        m, sc, q0 = got
        Q0, V0 = starts(m, q0, a.starts, a.vel, a.seed)
        for method in a.methods.split(","):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ref = reference(m, sc, Q0, V0, method, a.T)
            except PbsimError as e:
                print(f"| {robot} | {m.nv} | {method} | | | refused: {str(e).splitlines()[0][:120]} |", flush=True)
                continue
            for dt in (float(x) for x in a.dts.split(",")):
                for path in a.paths.split(","):
                    c = cell(path, m, sc, Q0, V0, method, dt * 1e-3, a.T, ref)
                    rows.append(dict(robot=robot, nv=m.nv, method=method, dt=dt, path=path, cell=c))
                    print(f"| {robot} | {m.nv} | {method} | {dt:g} | {path} | {fmt(c)} |", flush=True)
                    if a.json:
                        Path(a.json).write_text(json.dumps(rows))
    if a.png:
        plot(rows, a.png)


if __name__ == "__main__":
    main()
