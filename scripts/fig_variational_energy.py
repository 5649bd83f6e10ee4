"""Paper 004 Fig. 2b: total energy of a 10-body revolute chain (``pbsim_models.chain(10)``) under
gravity, no actuation: the variational integrator (RIQN + DRNEA) keeps the energy error bounded,
semi-implicit Euler drifts.  Default: 10^5 steps at dt = 1 ms (100 s); the table reports
max |E - E0| over a window at the start and one at the end of the run (no secular drift means the
two are alike) and the mean E - E0 in each window.  Peer: semi-implicit Euler (``euler``) and RK4 in
the same run.  Writes docs/img/fig_variational_energy.png.
Usage: python scripts/fig_variational_energy.py [--steps 100000] [--dt 0.001] [--window 10000]"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[1] / "models")]
import pbsim_models  # noqa: E402
from pbsim.dynamics import api  # noqa: E402
from pbsim.integrators.base import State, make  # noqa: E402


def run_variational(model, q0, dt, steps):
    integ = make("variational", model, on_fail="raise")
    s = State.make(model, q=q0)
    E0 = float(np.sum(api.energy(model, q0, np.zeros(model.nv))))  # kinetic + potential at rest
    t0 = time.process_time()
    _, _, _, E, its = integ.rollout(s, None, dt, steps)
    return E0, E[0], time.process_time() - t0, its.mean()


def run_explicit(name, model, q0, dt, steps):
    integ = make(name, model)
    s = State.make(model, q=q0)
    E = np.empty(steps)
    t0 = time.process_time()
    for k in range(steps):
        s, d = integ.step(s, None, dt)
        E[k] = d.energy[0]
    return E, time.process_time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--window", type=int, default=10_000)
    ap.add_argument("--peers", default="euler,rk4")
    a = ap.parse_args()
    model = pbsim_models.chain(10)
    q0 = np.zeros(10)
    E0, Ev, tv, itv = run_variational(model, q0, a.dt, a.steps)
    series = {"variational (RIQN)": Ev}
    cpu = {"variational (RIQN)": tv}
    for name in a.peers.split(","):
        if name:
            series[name], cpu[name] = run_explicit(name, model, q0, a.dt, a.steps)
    W = min(a.window, a.steps // 2)
    print(f"10-link chain under gravity, dt = {a.dt:g} s, {a.steps} steps ({a.steps * a.dt:g} s), E0 = {E0:.6f} J, "
          f"windows of {W} steps; RIQN mean iterations {itv:.2f}")
    print(f"{'integrator':>20} {'max|E-E0| start':>16} {'max|E-E0| end':>14} {'mean(E-E0) start':>17} "
          f"{'mean(E-E0) end':>15} {'final E-E0':>11} {'CPU s':>7}")
    for name, E in series.items():
        e = E - E0
        bad = ~np.isfinite(e)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            print(f"{name:>20} diverged at step {k}")
            continue
        print(f"{name:>20} {np.abs(e[:W]).max():16.3e} {np.abs(e[-W:]).max():14.3e} {e[:W].mean():17.3e} "
              f"{e[-W:].mean():15.3e} {e[-1]:11.3e} {cpu[name]:7.2f}")
    ev = np.abs(Ev - E0)
    print(f"variational: end/start ratio of max |E-E0| = {ev[-W:].max() / ev[:W].max():.3f} (1 = no secular drift)")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    frames = np.arange(1, a.steps + 1)
    stride = max(1, a.steps // 20000)
    for name, E in series.items():
        ax[0].plot(frames[::stride], E[::stride], label=name, lw=0.8)
    ax[0].axhline(E0, color="k", ls=":", lw=0.8)
    ax[0].set_xlabel("frame"); ax[0].set_ylabel("total energy [J]"); ax[0].legend()
    ax[0].set_title(f"Fig. 2b (paper 004): 10-body chain, dt = {a.dt:g} s")
    ax[1].plot(frames[::stride], (Ev - E0)[::stride], lw=0.6)
    ax[1].set_xlabel("frame"); ax[1].set_ylabel("E - E0 [J] (variational)"); ax[1].set_title("variational energy error")
    out = Path(__file__).resolve().parents[1] / "docs" / "img" / "fig_variational_energy.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout(); fig.savefig(out, dpi=100)
    print("wrote", out)


if __name__ == "__main__":
    main()
