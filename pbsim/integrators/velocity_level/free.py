"""The contact-free velocity ``v* = v + dt Mt^-1 (tau - h)`` of a velocity-level step (Cholesky factor of Mt)."""

from __future__ import annotations

import numpy as np

from pbsim.jit import kernel
from pbsim.dynamics.rnea import rnea_state
from pbsim.optim.linalg import cholesky_factor, cholesky_solve


@kernel
def bias_forces(m, w, b, q, v, zero, h):
    """``h(q, v)`` (RNEA with zero acceleration: Coriolis, centrifugal, gravity) into ``h``;
    ``zero`` (nv) is scratch set to zeros."""
    for j in range(m.nv):
        zero[j] = 0.0
    rnea_state(m, w, b, q, v, zero, h)


@kernel
def factor_or_nan(L, dv, nv):
    """Cholesky factor of ``L`` (``Mt``, lower triangle) in place; when ``Mt`` is not positive
    definite ``dv`` becomes NaN and the result is False."""
    if cholesky_factor(L, L, nv):
        return True
    for j in range(nv):
        dv[j] = np.nan
    return False


@kernel
def free_velocity(L, tau, h, v, dt, rhs, dv, vs, nv):
    """``v* = v + dt Mt^-1 (tau - h)`` from the Cholesky factor ``L`` of ``Mt`` into ``vs`` and
    ``dv`` (``rhs``: scratch)."""
    for j in range(nv):
        rhs[j] = dt * (tau[j] - h[j])
    cholesky_solve(L, rhs, dv, nv)
    for j in range(nv):
        vs[j] = v[j] + dv[j]
        dv[j] = vs[j]
