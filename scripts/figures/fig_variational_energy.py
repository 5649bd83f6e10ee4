"""Paper 004 Fig. 2b and the issue's long-horizon test: total energy of a 10-body revolute chain
(``pbsim_models.chain(10)``) under gravity, no actuation, over 100 s (10^5 steps at dt = 1 ms).

Is the variational integrator's energy error bounded (no secular drift)?  The script answers with
statistics instead of a start/end comparison, for two initial conditions:

- ``horizontal``: released from rest at q = 0 (straight, horizontal: the paper's violent, chaotic whip);
- ``mild``: released from rest straight, 40 degrees from hanging (q_0 = 50 deg, others 0).

For each variational run (RIQN + DRNEA, one compiled ``rollout`` call per run): max |E-E0| and mean
E-E0 in each of 10 windows of 10 s, a least-squares line fitted to E-E0(t) over the whole run and over
the last 90 s (after the first window's transient), the fitted change over the run (slope x span)
next to the fluctuation (std of E-E0 about the line).  Error sources are separated by extra runs:
the same 100 s at dt = 2, 0.5 and 0.25 ms (an O(dt^2) bounded error scales 4x per factor 2 of dt,
a drift from round-off or solver tolerance would not) and at dt = 1 ms with a 1000x looser update
tolerance (1e-9 instead of 1e-12; identical statistics mean the tolerance is not what limits it).
A run in which RIQN hits max_iter (the horizontal whip at 2 ms) is reported and left out.
Peers in the same run: semi-implicit Euler (``euler``) and RK4 at dt = 1 ms, both initial conditions
in one batch of 2 (their steps are driven from Python, the slow part of the script; ``--peer-steps``
shortens them).  Prints the tables, writes docs/img/fig_variational_energy.png.
Usage: python scripts/figures/fig_variational_energy.py [--T 100] [--dt 0.001] [--windows 10] [--peer-steps N]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[2]), str(Path(__file__).resolve().parents[2] / "models")]
import pbsim_models  # noqa: E402
from pbsim.dynamics import api  # noqa: E402
from pbsim.integrators.base import State, make  # noqa: E402

N = 10


def initial_conditions():
    q_h = np.zeros(N)
    q_m = np.zeros(N)
    q_m[0] = np.deg2rad(50.0)  # hanging is q_0 = 90 deg (joint axis +y, chain along +x, gravity -z)
    return {"horizontal": q_h, "mild": q_m}


def run_variational(model, q0s, dt, steps, tol, max_iter=50):
    """Both initial conditions in one batch, one compiled rollout call.  Returns (E0 (2,), E (2, steps),
    CPU s, mean iterations, first step that did not converge or -1)."""
    integ = make("variational", model, on_fail="ignore", tol=tol, max_iter=max_iter)
    s = State.make(model, q=np.stack(q0s))
    E0 = np.sum(api.energy(model, np.stack(q0s), np.zeros((len(q0s), model.nv))), axis=1)
    t0 = time.process_time()
    _, _, vo, E, its = integ.rollout(s, None, dt, steps)
    bad = (its >= max_iter) | ~np.isfinite(E)
    first = np.array([np.flatnonzero(b)[0] if b.any() else -1 for b in bad])
    rate = dt * np.abs(vo).max(axis=2)  # (2, steps): largest joint rotation per step
    return E0, E, time.process_time() - t0, its.mean(axis=1), first, rate


def run_explicit(name, model, q0s, dt, steps):
    integ = make(name, model)
    s = State.make(model, q=np.stack(q0s))
    E = np.empty((len(q0s), steps))
    t0 = time.process_time()
    for k in range(steps):
        s, d = integ.step(s, None, dt)
        E[:, k] = d.energy
    return E, time.process_time() - t0


def stats(e, dt, nwin):
    """Window max |e|, window mean e, and linear-trend summaries of e(t) (t = step * dt)."""
    n = e.size
    t = dt * np.arange(1, n + 1)
    edges = np.linspace(0, n, nwin + 1).astype(int)
    wmax = np.array([np.abs(e[a:b]).max() for a, b in zip(edges[:-1], edges[1:])])
    wmean = np.array([e[a:b].mean() for a, b in zip(edges[:-1], edges[1:])])
    out = {"wmax": wmax, "wmean": wmean, "rms": float(np.sqrt(np.mean(e * e))), "final": float(e[-1])}
    for key, a in (("all", 0), ("late", edges[1])):
        c = np.polyfit(t[a:], e[a:], 1)
        out[f"slope_{key}"] = float(c[0])
        out[f"change_{key}"] = float(c[0] * (t[-1] - t[a]))
        out[f"std_{key}"] = float(np.std(e[a:] - np.polyval(c, t[a:])))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--T", type=float, default=100.0, help="simulated seconds")
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--windows", type=int, default=10)
    ap.add_argument("--peers", default="euler,rk4")
    ap.add_argument("--peer-steps", type=int, default=None, help="steps of the peers (default: all)")
    a = ap.parse_args()
    model = pbsim_models.chain(N)
    ics = initial_conditions()
    names = list(ics)
    q0s = [ics[k] for k in names]
    runs = [
        ("1 ms", a.dt, 1e-12),
        ("1 ms tol 1e-9", a.dt, 1e-9),
        ("2 ms", 2 * a.dt, 1e-12),
        ("0.5 ms", 0.5 * a.dt, 1e-12),
        ("0.25 ms", 0.25 * a.dt, 1e-12),
    ]
    res = {}  # (ic, run label) -> stats
    series = {}
    cpu = {}
    its = {}
    E0 = None
    for lab, dt, tol in runs:
        steps = int(round(a.T / dt))
        E0, E, c, it, first, rate = run_variational(model, q0s, dt, steps, tol)
        cpu[lab] = c
        for j, ic in enumerate(names):
            e = E[j] - E0[j]
            if first[j] >= 0:  # RIQN did not converge (max_iter) from this step on: no statistics
                print(
                    f"variational {lab}, {ic}: RIQN did not converge at step {first[j]} (t = {first[j] * dt:.2f} s); "
                    f"run excluded"
                )
                res[ic, lab] = None
                continue
            res[ic, lab] = stats(e, dt, a.windows)
            its[ic, lab] = it[j]
            k = int(np.argmax(np.abs(np.diff(e))))
            res[ic, lab]["jump"] = (float(e[k + 1] - e[k]), (k + 2) * dt, float(rate[j, k + 1]), float(rate[j].max()))
            series[ic, lab] = (dt, e)
    psteps = a.peer_steps or int(round(a.T / a.dt))
    for name in [p for p in a.peers.split(",") if p]:
        E, c = run_explicit(name, model, q0s, a.dt, psteps)
        cpu[name] = c
        for j, ic in enumerate(names):
            e = E[j] - E0[j]
            series[ic, name] = (a.dt, e)
            res[ic, name] = stats(e, a.dt, a.windows) if np.isfinite(e).all() else None
    W = a.T / a.windows
    print(
        f"10-link chain under gravity, {a.T:g} s; windows of {W:g} s; E0 = "
        + ", ".join(f"{ic} {E0[j]:.4f} J" for j, ic in enumerate(names))
    )
    print(
        "CPU s (both initial conditions): "
        + ", ".join(f"{k} {v:.1f}" for k, v in cpu.items())
        + (f"  (peers: {psteps} steps)" if psteps != int(round(a.T / a.dt)) else "")
    )
    for ic in names:
        print(f"\n== {ic} release ==")
        print(
            f"{'run':>16} {'it/step':>7} {'RMS E-E0':>10} {'final':>10} {'trend/run':>10} {'std':>9} "
            f"{'trend/std':>9} {'late trend':>10} {'late std':>9} {'l.tr/std':>8}"
        )
        for lab in [r[0] for r in runs] + [p for p in a.peers.split(",") if p]:
            s = res[ic, lab]
            if s is None:
                print(f"{lab:>16} (no statistics: diverged / did not converge)")
                continue
            it = f"{its[ic, lab]:7.2f}" if (ic, lab) in its else f"{'-':>7}"
            print(
                f"{lab:>16} {it} {s['rms']:10.3e} {s['final']:10.3e} {s['change_all']:10.3e} {s['std_all']:9.2e} "
                f"{abs(s['change_all']) / s['std_all']:9.2f} {s['change_late']:10.3e} {s['std_late']:9.2e} "
                f"{abs(s['change_late']) / s['std_late']:8.2f}"
            )
        print(f"  window max |E-E0| ({W:g} s windows)")
        for lab in [r[0] for r in runs] + [p for p in a.peers.split(",") if p]:
            s = res[ic, lab]
            if s is not None:
                print(f"{lab:>16} " + " ".join(f"{x:8.2e}" for x in s["wmax"]))
        print("  window mean E-E0")
        for lab in [r[0] for r in runs] + [p for p in a.peers.split(",") if p]:
            s = res[ic, lab]
            if s is not None:
                print(f"{lab:>16} " + " ".join(f"{x:9.2e}" for x in s["wmean"]))
        print(
            "  largest one-step change of E-E0 (variational): "
            + "; ".join(
                f"{lab}: {res[ic, lab]['jump'][0]:.2e} J at t = {res[ic, lab]['jump'][1]:.2f} s, where max dt*|qdot| = "
                f"{res[ic, lab]['jump'][2]:.3f} (run max {res[ic, lab]['jump'][3]:.3f})"
                for lab in [r[0] for r in runs]
                if res[ic, lab] is not None
            )
        )
        pairs = [("2 ms", "1 ms"), ("1 ms", "0.5 ms"), ("0.5 ms", "0.25 ms")]
        print(
            "  O(dt^2) check (4 = second order): "
            + ", ".join(
                f"{x} / {y}: RMS {res[ic, x]['rms'] / res[ic, y]['rms']:.2f}, mean window max "
                f"{res[ic, x]['wmax'].mean() / res[ic, y]['wmax'].mean():.2f}"
                for x, y in pairs
                if res[ic, x] is not None and res[ic, y] is not None
            )
        )
        rt, r1 = res[ic, "1 ms tol 1e-9"], res[ic, "1 ms"]
        print(f"  tolerance check (1 ms): RMS tol 1e-9 / tol 1e-12 = {rt['rms'] / r1['rms']:.3f}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(2, 2, figsize=(12, 8))
    col = {
        "euler": "C0",
        "rk4": "C1",
        "2 ms": "C2",
        "1 ms": "C3",
        "1 ms tol 1e-9": "C7",
        "0.5 ms": "C4",
        "0.25 ms": "C5",
    }
    for j, ic in enumerate(names):
        for lab in ["euler", "rk4", "2 ms", "1 ms", "0.5 ms", "0.25 ms"]:
            if (ic, lab) not in series or res[ic, lab] is None:
                continue
            dt, e = series[ic, lab]
            t = dt * np.arange(1, e.size + 1)
            st = max(1, e.size // 20000)
            name = lab if lab in ("euler", "rk4") else "variational " + lab
            ax[0, j].plot(t[::st], e[::st], lw=0.6, label=name, color=col[lab])
        ax[0, j].set_yscale("symlog", linthresh=1e-4 if ic == "horizontal" else 1e-7)
        ax[0, j].set_xlabel("t [s]")
        ax[0, j].set_ylabel("E - E0 [J]")
        ax[0, j].legend(fontsize=7)
        ax[0, j].set_title(f"10-body chain, {ic} release (Fig. 2b)")
        wc = (np.arange(a.windows) + 0.5) * W
        for lab in ["2 ms", "1 ms", "1 ms tol 1e-9", "0.5 ms", "0.25 ms"]:
            if res[ic, lab] is None:
                continue
            ax[1, j].semilogy(wc, res[ic, lab]["wmax"], "o-", label=f"max|E-E0| {lab}", color=col[lab])
        ax[1, j].set_xlabel("window centre [s]")
        ax[1, j].set_ylabel("window max |E - E0| [J]")
        ax[1, j].legend(fontsize=7)
        ax[1, j].set_title(f"variational, {ic}: per-window max")
    out = Path(__file__).resolve().parents[2] / "docs" / "img" / "fig_variational_energy.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print("wrote", out)


if __name__ == "__main__":
    main()
