"""Paper 004 Fig. 3/4: time for 10k frames vs DOF for RIQN, Newton and Broyden (all with DRNEA) on
revolute chains under gravity at dt = 1 ms, and iterations per frame.  Steps run inside one compiled
call (``Variational.rollout``), timed with ``time.process_time()`` (CPU time of this process: less
sensitive to other load than wall time); for slow cases the 10k-frame time is scaled from fewer
frames: the first ``--frames`` frames of the fall, the same stretch for every size and method,
repeated and the fastest repeat kept.  The three methods are measured in the same run.  Prints a table, writes
docs/img/fig_variational_perf.png.
Usage: python scripts/bench/bench_variational.py [--sizes 10,20,50,100,200] [--frames 100]"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[2]), str(Path(__file__).resolve().parents[2] / "models")]
import pbsim_models  # noqa: E402
from pbsim.integrators.base import State, make  # noqa: E402

NAMES = (("variational", "RIQN"), ("variational_newton", "Newton"), ("variational_broyden", "Broyden"))


def bench(name, n, frames, dt=1e-3, budget=0.5):
    """(CPU seconds per step, mean iterations per step, steps not converged) over the first ``frames``
    frames of a chain falling from q = 0.2 rad at every joint; the rollout is repeated until about
    ``budget`` CPU seconds were spent and the fastest repeat is kept."""
    model = pbsim_models.chain(n)
    integ = make(name, model, on_fail="ignore")
    s = State.make(model, q=np.full(n, 0.2))
    integ.rollout(s, None, dt, 2)  # compile / warm up
    best, total = np.inf, 0.0
    for _ in range(50):
        t0 = time.process_time()
        _, _, _, _, its = integ.rollout(s, None, dt, frames, every=frames)
        el = time.process_time() - t0
        best, total = min(best, el), total + el
        if total > budget:
            break
    return best / frames, float(its.mean()), int((its >= integ.max_iter).sum())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10,20,50,100,200")
    ap.add_argument("--frames", type=int, default=100, help="frames per timed rollout (scaled to 10k)")
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split(",")]
    res = {}
    hdr = (
        f"{'DOF':>5} {'RIQN s/10k':>11} {'Newton s/10k':>13} {'Broyden s/10k':>14} {'N/R':>6} {'B/R':>6} "
        f"{'it R':>5} {'it N':>5} {'it B':>5} {'frames':>6} {'fail R/N/B':>10}"
    )
    print(hdr)
    for n in sizes:
        row = {name: bench(name, n, a.frames) for name, _ in NAMES}
        res[n] = row
        r, nw, br = (row[k] for k, _ in NAMES)
        print(
            f"{n:5d} {1e4 * r[0]:11.3f} {1e4 * nw[0]:13.3f} {1e4 * br[0]:14.3f} {nw[0] / r[0]:6.1f} "
            f"{br[0] / r[0]:6.1f} {r[1]:5.2f} {nw[1]:5.2f} {br[1]:5.2f} {a.frames:6d} {f'{r[2]}/{nw[2]}/{br[2]}':>10}",
            flush=True,
        )
    x = np.log(sizes)
    for name, lab in NAMES:
        y = np.log([res[n][name][0] for n in sizes])
        print(f"{lab} log-log slope of time/step vs DOF ({sizes[0]}-{sizes[-1]}): {np.polyfit(x, y, 1)[0]:.3f}")
    if 100 in res:
        print(f"Newton / RIQN at 100 DOF: {res[100]['variational_newton'][0] / res[100]['variational'][0]:.1f}x")
    print(
        "RIQN faster than Broyden at every size:",
        all(res[n]["variational"][0] < res[n]["variational_broyden"][0] for n in sizes),
    )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    for name, lab in NAMES:
        ax[0].loglog(sizes, [1e4 * res[n][name][0] for n in sizes], "o-", label=lab + "+DRNEA")
        ax[1].plot(sizes, [res[n][name][1] for n in sizes], "o-", label=lab + "+DRNEA")
    ax[0].set_xlabel("DOF")
    ax[0].set_ylabel("CPU time for 10k frames [s]")
    ax[0].legend()
    ax[1].set_xlabel("DOF")
    ax[1].set_ylabel("iterations per frame")
    ax[1].legend()
    ax[0].set_title("Fig. 3 (paper 004): chain, dt = 1 ms")
    ax[1].set_title("Fig. 4: iterations per frame")
    out = Path(__file__).resolve().parents[2] / "docs" / "img" / "fig_variational_perf.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print("wrote", out)


if __name__ == "__main__":
    main()
