"""Stability of PBAD vs semi-implicit Euler (paper 000 claim): ball-joint chains of 10, 40, 100 links
released horizontally, 10 s at dt = 0.05 and 0.1.  Prints a table (max E - E0 also relative to the
scale m g L n^2 / 2), writes docs/img/pbad_stability.png (or pbad_stability_<names>.png).
Usage: python scripts/figures/fig_pbad_stability.py [names,comma,separated] [links,...] [dts,...] [T]
(defaults: pbad,euler  10,40,100  0.05,0.1  10).  High-order rows also report rejected (aliased or
non-converged) full steps, the number of sub-steps taken and of order-2 fallback steps; a name
ending in "-sub" (pbad3-sub, pbad4-sub) runs with fallback="substep" (split such steps) instead
of the default order-2 fallback ("-fb", as in earlier tables, names the default explicitly)."""

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "models"), str(ROOT / "scripts" / "figures")]
import pbsim  # noqa: E402
import pbsim_models  # noqa: E402


def verdict(rise, scale, emin):
    """'within 1%' (|E - E0| <= 1% all along), 'one-sided' (never above E0 + 1%), or 'neither'."""
    if rise <= 0.01 * scale and emin >= -0.01 * scale:
        return "within 1%"
    return "one-sided (<= E0 + 1%)" if rise <= 0.01 * scale else "neither"


def main(names=("pbad", "euler"), links=(10, 40, 100), dts=(0.05, 0.1), T=10.0):
    from fig_pbad_highorder import run as run_highorder

    rows, curves = [], {}
    for n in links:
        model = pbsim_models.chain(n, joint="ball2")
        q0 = model.neutral()
        e0 = pbsim.energy(model, q0, np.zeros(model.nv)).sum()
        scale = pbsim_models.chain_energy_scale(n)
        for dt in dts:
            steps = int(round(T / dt))
            for name in names:
                extra = ""
                if name.split("-")[0] in ("pbad3", "pbad4"):
                    opts = {"fallback": "substep" if name.endswith("-sub") else "pbad2"}
                    r = run_highorder(n, dt, name.split("-")[0], T, verbose=False, **opts)
                    E = r["E"]
                    t = dt * np.arange(1, len(E) + 1)
                    finite, wall = r["finite"], r["wall"]
                    extra = (
                        f"conv {r['conv']:.2f}, rejected {r['rejected']}/{r['steps']}, "
                        f"sub-steps {r['substeps']}, fallback {r['fallback']}"
                    )
                else:
                    t0 = time.perf_counter()
                    tr = pbsim.rollout(model, name, dt=dt, steps=steps, q0=q0, on_nan="stop")
                    wall = time.perf_counter() - t0
                    E, t = tr.energy, tr.t
                    finite = bool(np.isfinite(tr.q).all() and not (tr.diverged is not None and tr.diverged.any()))
                rise = float(np.nanmax(E) - e0)
                emin = float(np.nanmin(E) - e0)
                end = float(E[-1]) if np.isfinite(E[-1]) else np.nan
                v = verdict(rise, scale, emin) if finite else "diverged"
                rows.append((n, dt, name, finite, rise, 100 * rise / scale, end, wall, v, extra))
                curves[(n, dt, name)] = (t, E)
                print(
                    f"{n:4d} {dt:5.2f} {name:6s} finite={finite!s:5s} max(E)-E0={rise:+.3e} "
                    f"({100 * rise / scale:+.2f}% of {scale:.3g} J) E_end={end:+.4g} wall={wall:.2f}s {v} {extra}",
                    flush=True,
                )
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
        ax.set_ylim(-0.6 * n * n * 0.1 * 0.1 * 9.81, 0.3 * n * n * 0.1 * 0.1 * 9.81)
        ax.legend(fontsize=7)
    tag = (
        ""
        if tuple(names) == ("pbad", "euler") and tuple(links) == (10, 40, 100)
        else "_" + "_".join(names) + "_" + "_".join(map(str, links))
    )
    out = ROOT / "docs" / "img" / f"pbad_stability{tag}.png"
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print("| links | dt | integrator | finite | max E - E0 | % of m g L n^2/2 | E(10 s) | wall [s] | energy | notes |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:+.2e} | {r[5]:+.2f} | {r[6]:+.4g} | {r[7]:.2f} | {r[8]} | "
            f"{r[9]} |"
        )
    print("wrote", out)


if __name__ == "__main__":
    a = sys.argv[1:]
    main(
        tuple(a[0].split(",")) if a else ("pbad", "euler"),
        tuple(int(x) for x in a[1].split(",")) if len(a) > 1 else (10, 40, 100),
        tuple(float(x) for x in a[2].split(",")) if len(a) > 2 else (0.05, 0.1),
        float(a[3]) if len(a) > 3 else 10.0,
    )
