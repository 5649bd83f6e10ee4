"""Paper 004 Fig. 3/4: time per step vs DOF for RIQN, Newton, Broyden (all with DRNEA) on revolute
chains at dt = 1 ms, and iterations per step.  Prints a table, writes docs/img/fig_variational_perf.png.
Usage: python scripts/bench_variational.py [--sizes 10,20,50,100,200] [--steps 200]"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[1] / "models")]
import pbsim_models  # noqa: E402
from pbsim.integrators.base import State, make  # noqa: E402


def bench(name, n, steps):
    model = pbsim_models.chain(n)
    integ = make(name, model)
    s = State.make(model, q=np.full(n, 0.2))
    s, _ = integ.step(s, None, 1e-3)  # compile / warm up
    its = []
    t0 = time.perf_counter()
    for _ in range(steps):
        s, d = integ.step(s, None, 1e-3)
        its.append(d.iterations[0])
    return (time.perf_counter() - t0) / steps, float(np.mean(its))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10,20,50,100,200")
    ap.add_argument("--steps", type=int, default=200)
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split(",")]
    res = {}
    print(f"{'DOF':>5} {'RIQN ms':>9} {'Newton ms':>10} {'Broyden ms':>11} {'N/R':>6} {'B/R':>6} {'it R':>5} {'it N':>5} {'it B':>5}")
    for n in sizes:
        row = {}
        for name in ("variational", "variational_newton", "variational_broyden"):
            steps = a.steps if name == "variational" or n <= 50 else max(10, a.steps // 10)
            row[name] = bench(name, n, steps)
        res[n] = row
        r, nw, br = row["variational"], row["variational_newton"], row["variational_broyden"]
        print(f"{n:5d} {1e3 * r[0]:9.3f} {1e3 * nw[0]:10.3f} {1e3 * br[0]:11.3f} {nw[0] / r[0]:6.1f} "
              f"{br[0] / r[0]:6.1f} {r[1]:5.2f} {nw[1]:5.2f} {br[1]:5.2f}")
    x = np.log(sizes)
    y = np.log([res[n]["variational"][0] for n in sizes])
    print(f"RIQN log-log slope time/step vs DOF ({sizes[0]}-{sizes[-1]}): {np.polyfit(x, y, 1)[0]:.3f}")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    for name, lab in (("variational", "RIQN+DRNEA"), ("variational_newton", "Newton+DRNEA"),
                      ("variational_broyden", "Broyden+DRNEA")):
        ax[0].loglog(sizes, [1e4 * res[n][name][0] for n in sizes], "o-", label=lab)
        ax[1].plot(sizes, [res[n][name][1] for n in sizes], "o-", label=lab)
    ax[0].set_xlabel("DOF"); ax[0].set_ylabel("time for 10k frames [s]"); ax[0].legend()
    ax[1].set_xlabel("DOF"); ax[1].set_ylabel("iterations per frame"); ax[1].legend()
    out = Path(__file__).resolve().parents[1] / "docs" / "img" / "fig_variational_perf.png"
    fig.tight_layout(); fig.savefig(out, dpi=100)
    print("wrote", out)


if __name__ == "__main__":
    main()
