"""CMA-ES over continuous parameters, each candidate a point on Ray (``pbsim sweep --cmaes``): :func:`run_cmaes`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from pbsim.errors import InputError
from pbsim.sweep.params import DEFAULTS
from pbsim.sweep.point import run_point
from pbsim.sweep.results import _number, columns
from pbsim.sweep.runner import RaySweep
from pbsim.sweep.space import DEFAULT_OBJECTIVE, check_cmaes, decode, objective_value

# cma's stops on equal values off: a generation whose candidates all failed (all ranked worst,
# equal) or a flat objective does not end the search; cma's stops on x (tolx ...) stay
CMA_OPTIONS = {"tolfun": 0, "tolfunhist": 0}


def _numeric_columns(rows) -> list[str]:
    skip = {"index", "generation", "candidate", "pid", "objective"}
    return [c for c in columns(rows) if c not in skip and any(_number(r.get(c)) for r in rows)]


@dataclass
class CmaesSweep:
    """The result of :func:`run_cmaes`.  ``rows``: every candidate of every generation (the
    points' parameters, :data:`RESULT_COLUMNS`, ``generation`` (1-based), ``candidate`` (0-based
    in its generation), ``objective`` (the value CMA-ES saw; NaN for a candidate that failed or
    diverged)); ``best``: the best candidate's values of the space's parameters (None when no
    candidate had a finite objective), ``best_value``, ``best_row``; ``history``: per generation
    (:class:`pbsim.optim.cmaes.CmaResult`'s arrays: best, median, failed, sigma ...);
    ``space``: ``{key: (lo, hi, scale)}``; ``objective``, ``maximize``, ``stop``."""

    rows: list
    best: dict | None
    best_value: float
    best_row: dict | None
    history: dict
    space: dict
    objective: str
    maximize: bool
    stop: str = ""


def run_cmaes(
    space: dict,
    fixed: dict,
    models,
    objective: str = DEFAULT_OBJECTIVE,
    maximize: bool = False,
    generations: int = 10,
    popsize: int | None = None,
    sigma0: float = 0.3,
    seed: int = 0,
    address: str | None = None,
    workers: int = 2,
    threads: int = 1,
    max_retries: int = 3,
    timeout: float | None = None,
    fn: Callable = run_point,
    progress: Callable | None = None,
    callback: Callable | None = None,
    runner: RaySweep | None = None,
    init_kwargs: dict | None = None,
    options: dict | None = None,
) -> CmaesSweep:
    """CMA-ES (:func:`pbsim.optim.cmaes.cmaes`) over the continuous parameters ``space`` (``{key:
    (lo, hi)}``: :data:`FLOAT_PARAMS` or float options of the points' integrator, at least 2), the
    other parameters ``fixed`` (completed with :data:`DEFAULTS`); minimising (``maximize``:
    maximising) the row column ``objective`` (:data:`NUMERIC_RESULTS`; default the energy error
    ``energy_drift_max``).

    The search runs in the unit box [0, 1]^n (cma's bounds), starting at its centre with step
    ``sigma0``; a key is mapped linearly onto [lo, hi], or logarithmically where lo > 0 and hi /
    lo > :data:`LOG_RATIO`.  Each generation's ``popsize`` candidates (default cma's 4 + 3 ln n)
    are points, run as Ray tasks (``fn``, default :func:`run_point`) through one :class:`RaySweep`
    for the whole search (``runner``, or one opened here from ``address`` ... ``init_kwargs`` and
    closed at the end).  A candidate whose row is not ``ok`` or whose objective is not finite is
    NaN to CMA-ES (it ranks it worst) and its row is kept.  ``progress(done, total, row)`` after
    each task; ``callback(generation, rows, history)`` after each generation, the history so far
    as in :class:`CmaesSweep`.  Rows are numbered ``index`` 0, 1, ... over all generations.
    ``options``: further ``cma.CMAOptions`` over :data:`CMA_OPTIONS` (cma's stops on equal
    values off, so that an all-failed generation does not end the search)."""
    from pbsim.optim.cmaes import cmaes

    fixed = dict(fixed or {})
    sp = check_cmaes(space, fixed, objective if fn is run_point else None)
    if int(generations) < 1:
        raise InputError(f"generations must be >= 1, got {generations}")
    if popsize is not None and int(popsize) < 2:
        raise InputError(f"popsize must be >= 2, got {popsize}")
    base = {**DEFAULTS, **fixed}
    rows: list = []
    state = {"generation": 0, "rows": []}

    def evaluate(rs, X):
        g = state["generation"] = state["generation"] + 1
        pts = [{**base, **decode(sp, x)} for x in X]
        start = len(rows)

        def prog(done, total, row):
            if progress:
                progress(
                    done, total, {**row, "index": start + row["index"], "generation": g, "candidate": row["index"]}
                )

        out = rs.map(pts, models, fn, prog)
        if g == 1 and fn is not run_point and not any(_number(r.get(objective)) for r in out):
            raise InputError(
                f"objective {objective!r} is not a numeric column of a row; numeric columns: "
                f"{', '.join(_numeric_columns(out)) or 'none'}"
            )
        gen = []
        for c, r in enumerate(out):
            r = {**r, "index": start + c, "generation": g, "candidate": c}
            r["objective"] = objective_value(r, objective)
            gen.append(r)
        rows.extend(gen)
        state["rows"] = gen
        return np.array([r["objective"] for r in gen])

    def on_generation(g, res):
        if callback is not None:
            return callback(g, state["rows"], res.history)
        return False

    def search(rs):
        return cmaes(
            lambda X: evaluate(rs, X),
            x0=np.full(len(sp), 0.5),
            sigma0=sigma0,
            generations=generations,
            popsize=popsize,
            seed=seed,
            bounds=[0.0, 1.0],
            maximize=maximize,
            callback=on_generation,
            options={**CMA_OPTIONS, **(options or {})},
        )

    if runner is not None:
        res = search(runner)
    else:
        with RaySweep(address, workers, threads, max_retries, timeout, init_kwargs) as rs:
            res = search(rs)
    finite = [r for r in rows if np.isfinite(r["objective"])]
    best_row = (max if maximize else min)(finite, key=lambda r: r["objective"]) if finite else None
    return CmaesSweep(
        rows=rows,
        best={k: best_row[k] for k in sp} if best_row else None,
        best_value=best_row["objective"] if best_row else float("nan"),
        best_row=best_row,
        history=res.history,
        space=sp,
        objective=objective,
        maximize=maximize,
        stop=res.stop,
    )
