"""Figures of a sweep: energy drift and throughput against dt (:func:`plot_rows`), a CMA-ES learning curve (:func:`plot_cmaes`)."""

from __future__ import annotations

import json
import os

import numpy as np

from pbsim.sweep.params import CMAES_COLUMNS, RESULT_COLUMNS
from pbsim.sweep.results import _number, columns, summary
from pbsim.sweep.space import LOG_RATIO, objective_value


def plot_rows(rows: list[dict], path, title: str = "") -> str:
    """A figure of the sweep: ``|energy drift|`` (max over the batch) and simulated steps/s
    against the first numeric parameter that varies (dt by preference), one line per combination
    of the other varying parameters; diverged points marked x at the top, errors o at the bottom."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    skip = {"index", "pid", "host", "traceback", *RESULT_COLUMNS}
    varying = [k for k in columns(rows) if k not in skip and len({json.dumps(r.get(k), default=str) for r in rows}) > 1]
    numeric = [k for k in varying if all(isinstance(r.get(k), (int, float)) for r in rows)]
    xkey = "dt" if "dt" in numeric else (numeric[0] if numeric else "index")
    series = [k for k in varying if k != xkey]
    groups: dict = {}
    for r in rows:
        groups.setdefault(tuple(str(r.get(k)) for k in series), []).append(r)
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for key, rs in groups.items():
        rs = sorted(rs, key=lambda r: r.get(xkey) or 0)
        label = ", ".join(f"{k}={v}" for k, v in zip(series, key)) or "all"
        ok = [r for r in rs if r.get("status") == "ok"]
        (line,) = ax[0].plot(
            [r[xkey] for r in ok], [max(abs(r["energy_drift_max"]), 1e-16) for r in ok], "o-", label=label
        )
        ax[1].plot([r[xkey] for r in ok], [r["steps_per_s"] for r in ok], "o-", color=line.get_color(), label=label)
        bad = [r for r in rs if r.get("status") == "diverged"]
        if bad:
            ax[0].plot([r[xkey] for r in bad], [1e6] * len(bad), "x", ms=10, color=line.get_color())
        err = [r for r in rs if r.get("status") in ("error", "timeout")]
        if err:
            ax[0].plot([r[xkey] for r in err], [1e-15] * len(err), "o", mfc="none", ms=10, color=line.get_color())
    for a in ax:
        a.set_xlabel(xkey)
        if xkey != "index":
            a.set_xscale("log")
        a.set_yscale("log")
        a.grid(True, which="both", alpha=0.3)
    ax[0].set_ylabel("max |E(T) - E(0)| over the batch [J]")
    ax[0].set_title("energy drift (x: diverged, o: error)")
    ax[1].set_ylabel("simulated steps/s (trajectories x steps / wall)")
    ax[1].set_title("throughput per task")
    ax[1].legend(fontsize=7)
    fig.suptitle(title or summary(rows))
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(str(path))), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)


def plot_cmaes(
    rows: list[dict],
    path,
    objective: str = "objective",
    space: dict | None = None,
    maximize: bool = False,
    title: str = "",
) -> str:
    """The learning curve of a CMA-ES sweep (:func:`run_cmaes`'s rows, or :func:`read_csv` of its
    file; ``objective`` only names the axis, the values are the rows' ``objective`` column): every
    candidate's value per generation (failed or diverged candidates as x at the bottom), the best
    (``maximize``: the largest) and the median of each generation and the best so far; beside it each
    parameter of ``space`` (default: the numeric parameters that vary), candidates as dots and the
    generation's mean as a line, scaled to its [lo, hi] (log where :func:`check_space` says so)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gens = sorted({int(r["generation"]) for r in rows})
    val = {g: np.array([objective_value(r, "objective") for r in rows if int(r["generation"]) == g]) for g in gens}
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    ok = [(r["generation"], r["objective"]) for r in rows if np.isfinite(objective_value(r, "objective"))]
    if ok:
        ax[0].plot(*zip(*ok), ".", color="0.6", label="candidates")
    pick = np.nanmax if maximize else np.nanmin
    best = [pick(v) if np.isfinite(v).any() else np.nan for v in val.values()]
    med = [np.nanmedian(v) if np.isfinite(v).any() else np.nan for v in val.values()]
    run = (np.fmax if maximize else np.fmin).accumulate(np.array(best, float))
    ax[0].plot(gens, best, "o-", label="generation best")
    ax[0].plot(gens, med, "s--", label="generation median")
    ax[0].plot(gens, run, "k-", lw=1, label="best so far")
    failed = {g: int((~np.isfinite(v)).sum()) for g, v in val.items() if (~np.isfinite(v)).any()}
    if failed:
        lo = min((y for _, y in ok), default=1.0)
        ax[0].plot(list(failed), [lo] * len(failed), "x", color="C3", ms=8, label="failed / diverged (count)")
        for g, n in failed.items():
            ax[0].annotate(str(n), (g, lo), textcoords="offset points", xytext=(6, 4), color="C3", fontsize=8)
    vals = [y for _, y in ok]
    if vals and min(vals) > 0 and max(vals) / min(vals) > 100:
        ax[0].set_yscale("log")
    ax[0].set_xlabel("generation")
    ax[0].set_ylabel(objective)
    ax[0].set_title("CMA-ES learning curve")
    ax[0].legend(fontsize=7)
    ax[0].grid(True, which="both", alpha=0.3)
    if space is None:
        skip = {"index", "pid", "seed", "steps", "batch", "record_every", *CMAES_COLUMNS, *RESULT_COLUMNS}
        keys = [
            k
            for k in columns(rows)
            if k not in skip and all(_number(r.get(k)) for r in rows) and len({r.get(k) for r in rows}) > 1
        ]
        space = {k: (min(r[k] for r in rows), max(r[k] for r in rows)) for k in keys}
    for i, (k, b) in enumerate(space.items()):
        lo, hi = float(b[0]), float(b[1])
        log = (b[2] == "log") if len(b) > 2 else (lo > 0 and hi / lo > LOG_RATIO)

        def unit(x, lo=lo, hi=hi, log=log):
            if hi <= lo:
                return 0.5
            return np.log(x / lo) / np.log(hi / lo) if log else (x - lo) / (hi - lo)

        pts = [(r["generation"], unit(r[k])) for r in rows if _number(r.get(k))]
        if not pts:
            continue
        g_, u_ = zip(*pts)
        ax[1].plot(np.asarray(g_) + 0.05 * (i - len(space) / 2), u_, ".", color=f"C{i}", alpha=0.5)
        mean = [np.mean([u for gg, u in pts if gg == g]) for g in gens]
        ax[1].plot(gens, mean, "-", color=f"C{i}", label=f"{k} in [{lo:g}, {hi:g}]" + (" (log)" if log else ""))
    ax[1].set_ylim(-0.05, 1.05)
    ax[1].set_xlabel("generation")
    ax[1].set_ylabel("parameter, scaled to its bounds (0 = lo, 1 = hi)")
    ax[1].set_title("candidates (dots) and generation mean")
    ax[1].legend(fontsize=7)
    ax[1].grid(True, alpha=0.3)
    fig.suptitle(title or summary(rows))
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(str(path))), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)
