"""Paper 000 Fig. 2a/2b: total energy of a 10- and a 100-link ball2 chain released horizontally,
dt = 0.0025, for explicit Euler, semi-implicit Euler, RK2, RK3, PBAD2, PBAD3 (default: order-2
fallback), PBAD3 sub-stepping instead ("pbad3-sub") and a reference (RK4 at dt / 16, dashed);
Fig. 2c: wall time of a 10 s swing of the 10-link chain vs dt, PBAD2 vs semi-implicit Euler.
Usage: python scripts/figures/fig_pbad_fig2.py [T_seconds] [links...] [--load LINKS:NAME=FILE ...]
(defaults: 10 s, 10 100).  ``--load 100:pbad3-sub=state_4000.npz`` takes that curve from a
checkpoint of ``scripts/figures/pbad_energy_trace.py --save`` (the 100-link sub-stepping run takes long)
instead of running it."""

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "models")]
import pbsim  # noqa: E402
import pbsim_models  # noqa: E402


def main(T=10.0, links=(10, 100), dt=0.0025, load=None):
    load = load or {}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(links) + 1, figsize=(5 * (len(links) + 1), 4))
    print("| links | integrator | finite | E(end) | max E - E0 | wall [s] |")
    print("|---|---|---|---|---|---|")
    for ax, n in zip(axes, links):
        model = pbsim_models.chain(n, joint="ball2")
        q0 = model.neutral()
        for name in ("explicit_euler", "euler", "rk2", "rk3", "pbad", "pbad3", "pbad3-sub", "reference"):
            if (n, name) in load:
                z = np.load(load[(n, name)])
                E, d = np.asarray(z["E"]), float(z["dt"])
                if not np.isclose(d, dt):
                    raise SystemExit(f"{load[(n, name)]}: dt {d} is not {dt}")
                t = d * np.arange(1, len(E) + 1)
                fin = bool(np.isfinite(E).all())
                print(
                    f"| {n} | {name} | {fin} | {E[-1]:+.4g} | {np.nanmax(E) - float(z['e0']):+.3e} | "
                    f"(loaded, t = {t[-1]:.2f} s) |",
                    flush=True,
                )
                ax.plot(t, E, label=f"{name} (to {t[-1]:.1f} s)")
                continue
            integ, h, opts = name, dt, {}
            if name == "reference":  # the exact energy is constant: RK4 at dt / 16 keeps it to 0.05 %
                integ, h = "rk4", dt / 16  # of the scale (dt / 4 and / 8 blow up in the 100-link whips)
            elif name.endswith("-sub"):
                integ, opts = name[:-4], {"fallback": "substep"}
            t0 = time.perf_counter()
            tr = pbsim.rollout(
                model,
                integ,
                dt=h,
                steps=int(round(T / h)),
                q0=q0,
                on_nan="stop",
                record_every=4 * round(dt / h),
                **opts,
            )
            wall = time.perf_counter() - t0
            E = np.where(np.abs(tr.energy) < 1e6, tr.energy, np.nan)
            fin = not tr.diverged.any()
            print(
                f"| {n} | {name} | {fin} | {tr.energy[-1]:+.4g} | {np.nanmax(tr.energy) - tr.energy[0]:+.3e} | {wall:.2f} |",
                flush=True,
            )
            ax.plot(
                tr.t,
                E,
                "k--" if name == "reference" else "-",
                lw=1 if name == "reference" else 1.5,
                label=f"RK4, dt = {h:g}" if name == "reference" else name,
            )
        scale = pbsim_models.chain_energy_scale(n)  # diverged runs leave the plot
        ax.set_ylim(-0.6 * scale, 0.3 * scale)
        ax.set_title(f"Fig. 2: {n}-link chain, dt = {dt}")
        ax.set_xlabel("t [s]")
        ax.set_ylabel("total energy [J]")
        ax.legend(fontsize=7)
    # Fig. 2c
    model = pbsim_models.chain(10, joint="ball2")
    q0 = model.neutral()
    dts = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05)
    print("\n| dt | pbad wall [s] | euler wall [s] | euler finite | ratio euler/pbad |")
    print("|---|---|---|---|---|")
    wp, we = [], []
    for d in dts:
        res = []
        for name in ("pbad", "euler"):
            t0 = time.perf_counter()
            tr = pbsim.rollout(model, name, dt=d, steps=int(round(T / d)), q0=q0, on_nan="stop", record_every=50)
            res.append((time.perf_counter() - t0, not tr.diverged.any()))
        wp.append(res[0][0])
        we.append(res[1][0] if res[1][1] else np.nan)
        print(f"| {d} | {res[0][0]:.2f} | {res[1][0]:.2f} | {res[1][1]} | {res[1][0] / res[0][0]:.2f} |", flush=True)
    ax = axes[-1]
    ax.loglog(dts, wp, "o-", label="PBAD2")
    ax.loglog(dts, we, "s-", label="semi-implicit Euler (stable runs)")
    ax.set_xlabel("dt [s]")
    ax.set_ylabel(f"wall time for {T:g} s [s]")
    ax.legend()
    out = (
        ROOT
        / "docs"
        / "img"
        / ("pbad_fig2.png" if tuple(links) == (10, 100) else "pbad_fig2_" + "_".join(map(str, links)) + ".png")
    )
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print("wrote", out)


if __name__ == "__main__":
    args, load = [], {}
    it = iter(sys.argv[1:])
    for a in it:
        if a == "--load":
            key, f = next(it).split("=", 1)
            n, name = key.split(":")
            load[(int(n), name)] = f
        else:
            args.append(a)
    T = float(args[0]) if args else 10.0
    links = tuple(int(a) for a in args[1:]) or (10, 100)
    main(T, links, load=load)
