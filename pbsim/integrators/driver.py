"""The generic CPU drivers of the integrator contract (:class:`pbsim.integrators.base.StepSpec`).

A method provides one per-trajectory step kernel

    step(m, s, c, w, sw, x, b, q, v, dt, qn, vn)

(model, scene arrays, control arrays, dynamics workspace, step scratch, the method's own scratch
``x``, trajectory index, state rows in, state rows out).  The drivers below loop it over the
batch; :func:`pbsim.backends.kernel.bind` makes a copy of a driver calling a given step, so a new
method never edits them.  ``pbsim.backends.cuda`` runs the same step kernels on the GPU.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from pbsim.backends.kernel import Variants, bind, kernel, unused
from pbsim.dynamics.energy import energy_state

_step = unused  # rebound per method by bind(driver, _step=...)


@kernel
def copy_rows(m, b, qn, vn, q, v):
    """(q[b], v[b]) <- (qn[b], vn[b])."""
    for j in range(m.nq):
        q[b, j] = qn[b, j]
    for j in range(m.nv):
        v[b, j] = vn[b, j]


@kernel(parallel=True)
def step_batch(m, s, c, w, sw, x, q, v, dt, qn, vn, e):
    """One step of every trajectory into (qn, vn) and the energy [kinetic, potential] after it."""
    for i in prange(q.shape[0]):
        b = np.int64(i)  # prange indices are unsigned; kernels mix b with signed ints
        _step(m, s, c, w, sw, x, b, q, v, dt, qn, vn)
        energy_state(m, w, b, qn[b], vn[b], e[b])


@kernel(parallel=True)
def steps_batch(m, s, c, w, sw, x, q, v, qn, vn, dt, nsteps):
    """``nsteps`` steps of every trajectory; the state stays in (q, v) (no energy, no per-step Python)."""
    for i in prange(q.shape[0]):
        b = np.int64(i)
        for _k in range(nsteps):
            _step(m, s, c, w, sw, x, b, q, v, dt, qn, vn)
            copy_rows(m, b, qn, vn, q, v)


_VARIANTS: dict = {}


def driver(which, step, features: dict | None = None, used: dict | None = None):
    """``step_batch`` or ``steps_batch`` (``which``) bound to ``step``; with ``features`` (the
    method's :class:`~pbsim.backends.kernel.Variants` map) the build that compiles only the
    features in ``used``."""
    d = bind(which, _step=step)
    if not features:
        return d
    key = id(d)
    if key not in _VARIANTS:
        _VARIANTS[key] = Variants(d, features)
    return _VARIANTS[key](**(used or {}))
