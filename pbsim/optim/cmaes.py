"""CMA-ES over a batched objective, on the ``cma`` package (N. Hansen's reference implementation).

The solver layer knows nothing of models or rollouts: the caller supplies ``objective(X)``,
``X`` the whole population (P, n), returning (P,) values -- a batched rollout evaluates a
population in one call (:mod:`pbsim.envs.gaits`, ``pbsim optimize``).  A non-finite value (a
diverged rollout) is replaced by the generation's worst finite value plus 1 (or 1e30), counted in
the history, and never chosen as the best.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from pbsim.errors import InputError


@dataclass
class CmaResult:
    """``x``, ``f``: the best point ever evaluated and its value (in the objective's own sign);
    ``history``: per generation ``generation``, ``evaluations``, ``best`` (of the generation),
    ``best_so_far``, ``median``, ``worst``, ``sigma``, ``failed`` (non-finite values), as arrays;
    ``stop``: why it stopped; ``mean``: the final distribution mean."""

    x: np.ndarray
    f: float
    history: dict = field(default_factory=dict)
    stop: str = ""
    mean: np.ndarray | None = None

    def save(self, path, **extra) -> None:
        """The result as an .npz (``x``, ``f``, ``mean``, every history array as ``history_<key>``)."""
        np.savez(path, x=self.x, f=self.f, mean=self.mean, stop=self.stop,
                 **{f"history_{k}": v for k, v in self.history.items()}, **extra)


def cmaes(objective: Callable, x0, sigma0: float = 0.3, generations: int = 50, popsize: int | None = None,
          seed: int = 0, bounds=None, maximize: bool = False, callback: Callable | None = None,
          options: dict | None = None) -> CmaResult:
    """Minimise (``maximize=True``: maximise) ``objective`` from ``x0`` with step size ``sigma0``
    for at most ``generations`` generations of ``popsize`` points (default cma's
    ``4 + 3 ln n``).  ``bounds``: ``[lower, upper]`` (scalars or vectors; cma's boundary
    handling).  ``seed``: the run's random seed (the same seed repeats the run).
    ``callback(generation, result_so_far)`` after every generation; returning True stops.
    ``options``: further ``cma.CMAOptions``."""
    try:
        import cma
    except ImportError as e:  # pragma: no cover - cma is a dependency
        raise ImportError("pbsim.optim.cmaes needs the 'cma' package: pip install cma") from e
    x0 = np.asarray(x0, np.float64).ravel()
    if x0.size < 2:
        raise InputError("cmaes needs at least 2 parameters (cma's restriction)")
    if not (sigma0 > 0 and np.isfinite(sigma0)):
        raise InputError(f"sigma0 must be > 0, got {sigma0}")
    opts = {"seed": int(seed) + 1, "verbose": -9, "maxiter": int(generations), "tolflatfitness": 10 ** 9}
    if popsize is not None:
        opts["popsize"] = int(popsize)
    if bounds is not None:
        opts["bounds"] = [None if b is None else np.asarray(b, float).tolist() for b in bounds]
    opts.update(options or {})
    es = cma.CMAEvolutionStrategy(x0, float(sigma0), opts)
    sign = -1.0 if maximize else 1.0
    hist = {k: [] for k in ("generation", "evaluations", "best", "best_so_far", "median", "worst", "sigma", "failed")}
    best_x, best_f = x0.copy(), np.inf  # best_f in minimisation sign
    evals = 0
    res = CmaResult(best_x, np.nan)
    stop = f"{generations} generations"
    for g in range(int(generations)):
        X = np.array(es.ask())
        f = np.asarray(objective(X), np.float64).reshape(X.shape[0])
        cost = sign * f
        bad = ~np.isfinite(cost)
        if bad.any():
            cost = cost.copy()
            cost[bad] = (cost[~bad].max() + 1.0) if (~bad).any() else 1e30
        es.tell(list(X), cost.tolist())
        evals += X.shape[0]
        i = int(np.argmin(cost))
        if not bad[i] and cost[i] < best_f:
            best_f, best_x = float(cost[i]), X[i].copy()
        ok = cost[~bad] if (~bad).any() else np.array([np.nan])
        for k, val in (("generation", g + 1), ("evaluations", evals), ("best", sign * ok.min()),
                       ("best_so_far", sign * best_f), ("median", sign * np.median(ok)), ("worst", sign * ok.max()),
                       ("sigma", es.sigma), ("failed", int(bad.sum()))):
            hist[k].append(val)
        res = CmaResult(best_x, sign * best_f, {k: np.array(v) for k, v in hist.items()}, stop,
                        np.array(es.mean))
        if callback is not None and callback(g + 1, res):
            stop = "callback"
            break
        s = es.stop()
        s = {k: v for k, v in s.items() if k != "maxiter"}
        if s:
            stop = ", ".join(f"{k}={v}" for k, v in s.items())
            break
    res.stop = stop
    return res
