"""Lemke's complementary pivoting for a dense linear complementarity problem (LCP), as a kernel.

    find z:  w = M z + q,  w >= 0,  z >= 0,  w . z = 0          (n x n, M any real matrix)

Lemke's method (Cottle, Pang & Stone, *The Linear Complementarity Problem*, Sec. 4.4) with the
covering vector ``d = 1``: the artificial variable ``z0`` enters first (at ``-min q``), then each
pivot brings in the complement of the variable that just left, until ``z0`` leaves (a solution),
no row limits the entering variable (*ray termination*: for a copositive-plus ``M``, e.g. positive
semidefinite, the LCP then has no solution, i.e. it is infeasible) or the pivot cap is reached.
It solves every LCP with a P-matrix (unique solution) and every feasible copositive-plus LCP,
which covers the Stewart-Trinkle / Anitescu-Potra contact LCP of ``pbsim.integrators.ne_dry``.

Revised form: only ``B^-1`` (n x n) and the basic values are kept; the entering column is formed
from ``M`` at each pivot, so a pivot costs O(n^2) and nothing is allocated (scratch ``W``:
(n + 2, n) floats, ``basis``: n ints, see :func:`lcp_work`).  Degeneracy (ties in the ratio
test, frequent in contact problems: resting contacts have zero relative velocity) is resolved by
the lexicographic rule on the rows of ``B^-1`` (which prevents cycling), with ``z0`` leaving
first whenever it is among the tied rows.
"""
from __future__ import annotations

import numpy as np

from pbsim.backends.kernel import kernel

LCP_SOLVED, LCP_RAY, LCP_MAXIT = 0, 1, 2  # the status lemke() returns
LCP_STATUS = {LCP_SOLVED: "solved", LCP_RAY: "ray termination", LCP_MAXIT: "iteration cap"}

PIVOT_TOL = 1e-11  # a column entry counts in the ratio test when > PIVOT_TOL * max |column|
TIE_TOL = 1e-10  # ratios within TIE_TOL * (1 + |min ratio|) of the minimum are ties


@kernel
def _entering_column(M, n, W, e):
    """``W[n] = B^-1 A_e``: the entering variable's column in the current basis.  Columns of
    ``[I, -M, -1]`` (variables w_0..w_n-1, z_0..z_n-1, z0)."""
    if e < n:
        for i in range(n):
            W[n, i] = W[i, e]
    elif e < 2 * n:
        j = e - n
        for i in range(n):
            s = 0.0
            for k in range(n):
                s -= W[i, k] * M[k, j]
            W[n, i] = s
    else:
        for i in range(n):
            s = 0.0
            for k in range(n):
                s -= W[i, k]
            W[n, i] = s


@kernel
def _pivot(n, W, r):
    """Pivot on row r with the entering column in ``W[n]``: update ``B^-1`` (rows 0..n-1) and
    the basic values (row n + 1)."""
    p = W[n, r]
    for j in range(n):
        W[r, j] /= p
    W[n + 1, r] /= p
    for i in range(n):
        if i != r:
            f = W[n, i]
            if f != 0.0:
                for j in range(n):
                    W[i, j] -= f * W[r, j]
                W[n + 1, i] -= f * W[n + 1, r]


@kernel
def _lexico_less(n, W, i, k):
    """Row i of ``B^-1`` / a_i lexicographically smaller than row k's (a = ``W[n]``)."""
    ai = W[n, i]
    ak = W[n, k]
    for j in range(n):
        x = W[i, j] / ai
        y = W[k, j] / ak
        if x < y:
            return True
        if x > y:
            return False
    return False


@kernel
def _ratio_test(n, W, basis, art):
    """Leaving row for the column in ``W[n]`` (-1: none, ray termination): minimum ratio
    ``rhs_i / a_i`` over ``a_i > PIVOT_TOL max|a|``; ties go to the artificial variable ``art``,
    else to the lexicographically smallest row of ``B^-1 / a_i``."""
    amax = 0.0
    for i in range(n):
        a = abs(W[n, i])
        if a > amax:
            amax = a
    tol = PIVOT_TOL * amax
    if not (amax > 0.0):
        return -1
    tmin = np.inf
    for i in range(n):
        a = W[n, i]
        if a > tol:
            t = W[n + 1, i] / a
            if t < tmin:
                tmin = t
    if tmin == np.inf:
        return -1
    lim = tmin + TIE_TOL * (1.0 + abs(tmin))
    r = -1
    for i in range(n):
        a = W[n, i]
        if a > tol and W[n + 1, i] / a <= lim:
            if basis[i] == art:
                return i
            if r < 0 or _lexico_less(n, W, i, r):
                r = i
    return r


@kernel
def _extract(n, W, basis, z):
    for i in range(n):
        z[i] = 0.0
    for i in range(n):
        bi = basis[i]
        if n <= bi < 2 * n:
            v = W[n + 1, i]
            z[bi - n] = v if v > 0.0 else 0.0


@kernel
def lemke(M, q, n, z, maxit, W, basis):
    """Solve the LCP ``(M, q)`` of size ``n`` (the leading n x n block of ``M``, first n of
    ``q``) by Lemke's method into ``z[:n]``.  ``maxit``: cap on the pivots (the first one, which
    brings in z0, counted).  Scratch: ``W`` (>= n + 2, >= n) floats, ``basis`` (>= n) ints
    (:func:`lcp_work`).  Returns ``(status, pivots)``: status :data:`LCP_SOLVED`,
    :data:`LCP_RAY` (ray termination: no solution found; infeasible for copositive-plus M) or
    :data:`LCP_MAXIT`; ``z`` then holds the z part of the last basic point (not a solution)."""
    qmin = 0.0
    r = -1
    for i in range(n):
        z[i] = 0.0
        if q[i] < qmin:  # first most negative row (the lexicographic choice, B^-1 = I)
            qmin = q[i]
            r = i
    if r < 0:  # q >= 0: z = 0
        return LCP_SOLVED, 0
    art = 2 * n  # z0
    for i in range(n):
        for j in range(n):
            W[i, j] = 0.0
        W[i, i] = 1.0
        W[n + 1, i] = q[i]
        basis[i] = i
    if maxit < 1:
        return LCP_MAXIT, 0
    _entering_column(M, n, W, art)
    _pivot(n, W, r)
    leaving = basis[r]
    basis[r] = art
    piv = 1
    while piv < maxit:
        e = leaving + n if leaving < n else leaving - n  # the complement of the variable that left
        _entering_column(M, n, W, e)
        r = _ratio_test(n, W, basis, art)
        if r < 0:
            _extract(n, W, basis, z)
            return LCP_RAY, piv
        _pivot(n, W, r)
        leaving = basis[r]
        basis[r] = e
        piv += 1
        if leaving == art:
            _extract(n, W, basis, z)
            return LCP_SOLVED, piv
    _extract(n, W, basis, z)
    return LCP_MAXIT, piv


@kernel
def lcp_residual(M, q, n, z):
    """Largest violation of the LCP conditions at ``z``: ``max(-z_i, -w_i, |z_i w_i|)`` over i
    with ``w = M z + q`` (0 at a solution)."""
    res = 0.0
    for i in range(n):
        s = q[i]
        for j in range(n):
            s += M[i, j] * z[j]
        zi = z[i]
        if -zi > res:
            res = -zi
        if -s > res:
            res = -s
        c = abs(zi * s)
        if c > res:
            res = c
    return res


def lcp_work(n: int):
    """Scratch ``(W, basis)`` of :func:`lemke` for problems of size up to ``n``."""
    n = max(int(n), 1)
    return np.zeros((n + 2, n)), np.zeros(n, np.int64)


def solve_lcp(M, q, maxit: int | None = None):
    """Host convenience: ``(z, status, pivots)`` of :func:`lemke` on numpy arrays (``maxit``
    None: ``50 + 10 n``)."""
    q = np.ascontiguousarray(q, np.float64).reshape(-1)
    n = q.size
    M = np.ascontiguousarray(M, np.float64).reshape(n, n)
    W, basis = lcp_work(n)
    z = np.zeros(max(n, 1))
    st, piv = lemke(M, q, n, z, int(50 + 10 * n if maxit is None else maxit), W, basis)
    return z[:n], int(st), int(piv)
