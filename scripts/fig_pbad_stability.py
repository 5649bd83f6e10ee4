"""Stability of PBAD2 vs semi-implicit Euler (paper 000 claim): ball-joint chains of 10, 40, 100 links
released horizontally, 10 s at dt = 0.05 and 0.1.  Prints a table, writes docs/img/pbad_stability.png."""
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "models")]
import pbsim  # noqa: E402
import pbsim_models  # noqa: E402


def main(links=(10, 40, 100), dts=(0.05, 0.1), T=10.0):
    rows, curves = [], {}
    for n in links:
        model = pbsim_models.chain(n, joint="ball2")
        q0 = model.neutral()
        e0 = pbsim.energy(model, q0, np.zeros(model.nv)).sum()
        for dt in dts:
            steps = int(round(T / dt))
            for name in ("pbad", "euler"):
                t0 = time.perf_counter()
                tr = pbsim.rollout(model, name, dt=dt, steps=steps, q0=q0, on_nan="stop")
                wall = time.perf_counter() - t0
                E = tr.energy
                finite = bool(np.isfinite(tr.q).all() and not (tr.diverged is not None and tr.diverged.any()))
                rise = float(np.nanmax(E) - e0)
                rows.append((n, dt, name, finite, rise, float(E[-1]) if np.isfinite(E[-1]) else np.nan, wall))
                curves[(n, dt, name)] = (tr.t, E)
                print(f"{n:4d} {dt:5.2f} {name:6s} finite={finite!s:5s} max(E)-E0={rise:+.3e} E_end={rows[-1][5]:+.4g} "
                      f"wall={wall:.2f}s", flush=True)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(links), figsize=(5 * len(links), 4))
    for ax, n in zip(np.atleast_1d(axes), links):
        for (nn, dt, name), (t, E) in curves.items():
            if nn == n:
                ax.plot(t, E, label=f"{name} dt={dt}")
        ax.set_title(f"{n}-link ball chain")
        ax.set_xlabel("t [s]")
        ax.set_ylabel("total energy [J]")
        ax.set_ylim(-0.6 * n * n * 0.1 * 0.1 * 9.81, 1.0)
        ax.legend(fontsize=7)
    out = ROOT / "docs" / "img" / "pbad_stability.png"
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print("| links | dt | integrator | finite | max E - E0 | E(10 s) | wall [s] |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:+.2e} | {r[5]:+.4g} | {r[6]:.2f} |")
    print("wrote", out)


if __name__ == "__main__":
    main()
