"""Sub-stepping on failure, written once: re-run the trajectories of a batch step whose solver
failed as shorter sub-steps, inside the step kernel (:func:`substep_step`, the contract's
robustness fallback) or at host level (numpy, :func:`substep`).

Two schedules, both in use (the helpers keep each one's results):

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

from pbsim.jit import kernel


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


# ---------------------------------------------------------------------------------------------
# the same fallback inside a step kernel (one trajectory, allocation-free, a CUDA twin like any
# kernel): what every driver of the integrator contract runs, so that Integrator.step, rollout's
# compiled loop, CpuBatch, CudaBatch and the vector env treat a stalled step alike

def _attempt(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """The method's plain step kernel (rebound by ``specialize(substep_step, tag, _attempt=...)``)."""
    raise NotImplementedError("bind the step with pbsim.jit.specialize")


@kernel
def trailing_zeros(t, levels):
    """The number of trailing zero bits of ``t`` > 0 (at most ``levels``)."""
    k = 0
    while k < levels and t % 2 == 0:
        t //= 2
        k += 1
    return k


@kernel
def copy_row(src, dst, b, n):
    for j in range(n):
        dst[b, j] = src[b, j]


@kernel
def substep_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """A step kernel with the sub-step fallback: the method's step ``_attempt`` over ``dt``; if its
    solver did not converge (``x.info[b, 2]`` < 0.5) and ``x.levels`` > 0, the step is redone as
    two halves, each of which splits again while it does not converge, down to ``dt / 2**levels``
    (a sub-step of the last level is kept converged or not) -- the host schedule of
    :func:`substep` with ``halves=True``, run depth first (no recursion), hence the very same
    sub-steps in the same order.  The (sub-)step's start is kept in ``x.qs[b]``, ``x.vs[b]``; the
    attempt has one call site (the GPU build inlines it once).

    ``x.info[b]`` (5 columns) afterwards: [iterations of every attempt, the largest residual of
    the kept sub-steps, all of them converged, the objective of the last attempt, the number of
    sub-steps the step became (1: no fallback)]; ``x.fbn[b]`` counts the steps that fell back
    (the drivers zero it: CpuBatch.set_state, CudaBatch.set_state).  A step whose first attempt
    converges is that attempt, bit for bit."""
    info = x.info[b]
    levels = x.levels
    if levels < 0:
        levels = 0
    copy_row(q, x.qs, b, m.nq)
    copy_row(v, x.vs, b, m.nv)
    full = 1 << levels  # the step in units of the smallest sub-step dt / 2**levels
    t = 0
    lev = 0
    its = 0.0
    res = 0.0
    conv = True
    nsub = 0
    while t < full:
        h = dt
        for _k in range(lev):
            h = h / 2.0  # exact, as the host's dt / 2 / 2 ...
        _attempt(m, s, c, w, sw, x, b, x.qs, x.vs, h, qn, vn)
        its += info[0]
        ok = info[2] > 0.5
        if ok or lev >= levels:  # kept: the next sub-step starts here
            if info[1] > res or not (info[1] == info[1]):
                res = info[1]
            conv = conv and ok
            nsub += 1
            t += 1 << (levels - lev)
            if t < full:
                copy_row(qn, x.qs, b, m.nq)
                copy_row(vn, x.vs, b, m.nv)
                lev = levels - trailing_zeros(t, levels)  # the largest sub-step aligned at t
        else:
            if lev == 0:
                x.fbn[b] += 1.0
            lev += 1
    info[0] = its
    info[1] = res
    info[2] = 1.0 if conv else 0.0
    info[4] = float(nsub)
