"""Sub-stepping on failure, written once: re-run the trajectories of a batch step whose solver
failed as shorter sub-steps (host level, numpy).

Two schedules, both in use (the helper keeps each one's results):

- ``halves=True`` (pbad3/4): the failed step is redone as two half steps through the method's
  own step at the next level, which may split its failures again (the recursion goes through
  the callback) until ``levels`` levels are used;
- ``halves=False`` (pbad): ``2**levels`` equal sub-steps of the plain step, no further split.

The method supplies the per-level step as a callback ``step(x, h, level, anchor) -> (x, d)``:
``x`` the sub-batch's state (anything with a ``q`` array: the method's own state class), ``h``
the sub-step, ``level`` the level it runs at, ``anchor`` ``None`` or the configuration the method
may rebuild its history from: the caller's ``anchor`` for the first sub-step, then
``(q at the start of the previous sub-step, -h)``; ``d`` the sub-step's diagnostics (arrays
``iterations``, ``converged``, ``residual``, ``energy``, dict ``extra`` with an optional
``substeps`` count and the keys of ``maxima``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Substepped:
    """The re-run trajectories after their sub-steps (one entry per failed trajectory)."""

    state: object  # their state at the end of the step: what the last sub-step returned
    start: np.ndarray  # q at the start of the last sub-step (time offset -h from the end)
    h: float  # the sub-step of this level
    iterations: np.ndarray  # solver iterations summed over the sub-steps (nested splits included)
    converged: np.ndarray  # every sub-step converged
    residual: np.ndarray  # the largest over the sub-steps (so it agrees with ``converged``)
    energy: np.ndarray  # the last sub-step's
    substeps: np.ndarray  # number of innermost sub-steps the step became
    maxima: dict = field(default_factory=dict)  # key -> max over the sub-steps of extra[key]


def failed(converged: np.ndarray, level: int, levels: int) -> np.ndarray | None:
    """The rows to re-run: the unconverged ones while a level of splitting is left (``level <
    levels``); None when there is nothing to do."""
    if level >= levels or converged.all():
        return None
    return ~converged


def substep(step, start, dt: float, levels: int, level: int = 0, halves: bool = True, anchor=None,
            maxima: tuple = ()) -> Substepped:
    """Integrate the sub-batch ``start`` (the failed trajectories at the start of the step) over
    ``dt`` as sub-steps through ``step`` (module docstring): two halves at ``level + 1``
    (``halves``) or ``2**(levels - level)`` equal sub-steps at ``levels``."""
    parts = 2 if halves else 2 ** (levels - level)
    h = dt / parts
    sub_level = level + 1 if halves else levels
    n = start.q.shape[0]
    its = np.zeros(n, int)
    ok = np.ones(n, bool)
    count = np.zeros(n, int)
    mx = {k: np.zeros(n) for k in maxima}
    res = np.zeros(n)
    x, q0, d = start, start.q, None
    for k in range(parts):
        prev, q0 = q0, x.q  # the starts of the previous and of this sub-step
        x, d = step(x, h, sub_level, anchor if k == 0 else (prev, -h))
        its = its + d.iterations
        ok &= d.converged
        res = np.maximum(res, d.residual)
        count += d.extra.get("substeps", 1)
        for key in maxima:
            mx[key] = np.maximum(mx[key], d.extra[key])
    return Substepped(x, q0, h, its, ok, res, d.energy, count, mx)
