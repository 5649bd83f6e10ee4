"""Fig. 6 of paper 002 (NMDP) on the Robosimian jump: framerate and outer-iteration histograms.

The four NMDP variants (``nmdp``, ``nmdp_zo``, ``pbd_nmdp``, ``pbd_nmdp_zo``) at dt = 50 ms and
``ne_mdp`` at its largest stable dt (7 ms: it diverges from 8 ms on this jump, docs/benchmarks/nmdp.md;
``--ne-dt``), on the jump of ``scripts/figures/nmdp_robosimian.py`` (same robot, scene, gains) for
``--seconds`` of simulated time from the standing pose (2.5 s by default: the crouch, the push, the
flight and the landing of the first jump).  Per step: the framerate (simulated steps per second of
wall time, ``1 / wall``, Python loop included, one thread), the outer PGM iterations (ne_mdp: its
QP's iterations, a different unit) and the smallest ``alpha``.  Printed: per method the median /
mean framerate, the real-time factor (``dt / median wall``), the iterations' mean / max, the smallest
``alpha dt`` (B-T7: >= 12.5 ms for the zeroth-order variants) and the ZO / FO ratio of the mean
outer iterations; written: ``docs/benchmarks/nmdp_fig6.png`` and the series to ``--npz``.

    python scripts/figures/fig_nmdp_fig6.py [--seconds 2.5] [--dt 50] [--ne-dt 7] [--npz fig6.npz] [--plot-only fig6.npz]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from nmdp_robosimian import build, simulate  # noqa: E402

OUT = ROOT.parents[1] / "docs" / "benchmarks" / "nmdp_fig6.png"
NMDP = ("nmdp", "nmdp_zo", "pbd_nmdp", "pbd_nmdp_zo")


def stats(r):
    w = np.asarray(r["wall"])
    its = np.asarray(r["its"])
    amin = np.asarray(r["amin"])
    return dict(
        fps_med=1.0 / np.median(w),
        fps_mean=float(np.mean(1.0 / w)),
        rt=r["dt"] / np.median(w),
        its_mean=float(its.mean()),
        its_max=int(its.max()),
        amin_dt=float(amin.min() * r["dt"]),
        sub=float((amin < 1).mean() * 100),
        steps=len(w),
        done=bool(r["done"]),
        why=r["why"],
    )


def report(runs):
    print("| method | dt [ms] | steps | completed | median fps | mean fps | real-time factor | outer its mean / max | "
          "min alpha dt [ms] | sub-stepped [%] |")  # fmt: skip
    print("|---|---:|---:|---|---:|---:|---:|---|---:|---:|")
    S = {}
    for r in runs:
        s = stats(r)
        S[r["method"]] = s
        print(f"| {r['method']} | {r['dt'] * 1e3:g} | {s['steps']} | {'yes' if s['done'] else 'NO: ' + s['why']} | "
              f"{s['fps_med']:.1f} | {s['fps_mean']:.1f} | {s['rt']:.2f} | {s['its_mean']:.1f} / {s['its_max']} | "
              f"{s['amin_dt'] * 1e3:.2f} | {s['sub']:.1f} |")  # fmt: skip
    for zo, fo in (("nmdp_zo", "nmdp"), ("pbd_nmdp_zo", "pbd_nmdp")):
        if zo in S and fo in S:
            ok = S[zo]["amin_dt"] >= 0.0125 - 1e-12
            print(f"{zo}: min alpha dt {S[zo]['amin_dt'] * 1e3:.2f} ms (B-T7 >= 12.5 ms: {'PASS' if ok else 'FAIL'}); "
                  f"ZO/FO mean outer iterations {S[zo]['its_mean'] / S[fo]['its_mean']:.2f}")  # fmt: skip
    return S


def plot(runs, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    fps_all = np.concatenate([1.0 / np.asarray(r["wall"]) for r in runs])
    fb = np.logspace(np.log10(fps_all.min() * 0.9), np.log10(fps_all.max() * 1.1), 40)
    its_max = max(int(np.max(r["its"])) for r in runs if r["method"] in NMDP)
    ib = np.arange(0, its_max + 2) - 0.5 if its_max < 60 else np.linspace(0, its_max + 1, 50)
    for r in runs:
        lab = f"{r['method']} ({r['dt'] * 1e3:g} ms)"
        wt = np.full(len(r["wall"]), 1.0 / len(r["wall"]))  # fractions: ne_mdp has 7x the steps
        ax[0].hist(1.0 / np.asarray(r["wall"]), bins=fb, weights=wt, histtype="step", lw=1.5, label=lab)
        if r["method"] in NMDP:
            ax[1].hist(r["its"], bins=ib, weights=wt, histtype="step", lw=1.5, label=lab)
    ax[0].set_xscale("log")
    ax[0].set_xlabel("framerate [steps / s of wall time, one core]")
    ax[0].set_ylabel("fraction of steps")
    ax[1].set_ylabel("fraction of steps")
    for d in sorted({r["dt"] for r in runs}):
        ax[0].axvline(1.0 / d, ls=":", lw=0.8, color="gray")
        ax[0].text(1.0 / d, ax[0].get_ylim()[1] * 0.97, f" real time\n at {d * 1e3:g} ms", fontsize=7, va="top")
    ax[0].set_title("framerate (dotted: real time, 1/dt)")
    ax[1].set_xlabel("outer PGM iterations per step (all sub-steps)")
    ax[1].set_title("outer iterations (NMDP variants, 50 ms)")
    for a in ax:
        a.legend(fontsize=8)
    fig.suptitle(f"Robosimian jump, {runs[0]['t'][-1]:.1f} s simulated (Fig. 6 of paper 002, ours)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.5)
    ap.add_argument("--dt", type=float, default=50.0, help="the NMDP variants' dt [ms]")
    ap.add_argument("--ne-dt", type=float, default=7.0, help="ne_mdp's dt [ms] (its largest stable one)")
    ap.add_argument("--methods", default=",".join((*NMDP, "ne_mdp")))
    ap.add_argument("--npz", help="write the series here")
    ap.add_argument("--plot-only", help="plot a saved --npz, simulate nothing")
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args(argv)
    keys = ("t", "wall", "its", "amin")
    if a.plot_only:
        z = np.load(a.plot_only, allow_pickle=True)
        runs = list(z["runs"])
    else:
        model, scene, q0 = build()
        runs = []
        for m in a.methods.split(","):
            dt = (a.ne_dt if m == "ne_mdp" else a.dt) * 1e-3
            simulate(m, model, scene, q0, "jump", dt, 3 * dt)  # compile outside the timed run
            r = simulate(m, model, scene, q0, "jump", dt, a.seconds)
            runs.append({k: r[k] for k in (*keys, "method", "dt", "done", "why")})
            print(f"{m} {dt * 1e3:g} ms: {len(r['wall'])} steps, median wall {np.median(r['wall']) * 1e3:.1f} ms",
                  flush=True)  # fmt: skip
        if a.npz:
            np.savez(a.npz, runs=np.array(runs, dtype=object))
    report(runs)
    plot(runs, a.out)


if __name__ == "__main__":
    main()
