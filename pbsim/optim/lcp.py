"""Lemke's complementary pivoting for a dense linear complementarity problem (LCP), as a kernel.

    find z:  w = M z + q,  w >= 0,  z >= 0,  w . z = 0          (n x n, M any real matrix)

Lemke's method (Cottle, Pang & Stone, *The Linear Complementarity Problem*, Sec. 4.4) with the
covering vector ``d = 1``: the artificial variable ``z0`` enters first (at ``-min q``), then each
pivot brings in the complement of the variable that just left, until ``z0`` leaves (a solution),
no row limits the entering variable (*ray termination*: for a copositive-plus ``M``, e.g. positive
semidefinite, the LCP then has no solution, i.e. it is infeasible) or the pivot cap is reached.
It solves every LCP with a P-matrix (unique solution) and every feasible copositive-plus LCP,
which covers the Stewart-Trinkle / Anitescu-Potra contact LCP of ``pbsim.integrators.ne_dry``.

Revised form: only ``B^-1`` (n x n, stored by columns so that every inner loop runs over
contiguous memory) and the basic values are kept; the entering column is formed from ``M`` at
each pivot, so a pivot costs O(n^2) and nothing is allocated (scratch ``W``: (n + 2, n) floats,
``basis``: n ints, see :func:`lcp_work`).

Degeneracy is the rule in contact problems, not the exception: resting contacts have zero
relative velocity (ties in the ratio test) and redundant contacts (a box's 8 coplanar points on 6
DOF) make ``M`` singular.  The ratio test is Harris' two-pass test with the largest pivot among
the near-ties (as in Munson's ``lemke.m`` and DART's port of it), ``z0`` leaving first whenever it
is among them.  The lexicographic rule (exact anti-cycling in exact arithmetic) was tried first:
in floating point it took pivots of 1e-8 against a column maximum of 4e7 and ended on false rays
in a third of the steps of boxes dropped on a corner; the Harris test solved every one of 1305
LCPs recorded from such drops and from a falling 10-link chain, with a complementarity violation
<= 2e-9 max|q| (``PIVOT_TOL``, ``ZERO_TOL``).  Basic values may go negative by up to the
tolerance; ``z`` is read back clipped at 0.

Some contact LCPs stay out of reach in floating point all the same: their exact pivot path goes
through pivots of 1e-8 and 4e8 (contacts whose velocities agree to round-off), and one step in
~100 of a falling chain ended on a false ray.  :func:`lemke_regularized` retries such a problem
on ``M + eps I`` with growing eps (strictly copositive: Lemke processes it for any q) and keeps
the first solution that satisfies the original problem to a tolerance; on the recorded LCPs it
needed eps <= 1e-8 max|M_ii| and met the conditions to 4e-8 max|q|.
"""
from __future__ import annotations

import numpy as np

from pbsim.jit import kernel

LCP_SOLVED, LCP_RAY, LCP_MAXIT = 0, 1, 2  # the status lemke() returns
LCP_STATUS = {LCP_SOLVED: "solved", LCP_RAY: "ray termination", LCP_MAXIT: "iteration cap"}

PIVOT_TOL = 1e-9  # a column entry counts in the ratio test when > PIVOT_TOL * max |column|
ZERO_TOL = 1e-9  # Harris' feasibility tolerance, relative to max |q|


@kernel
def _entering_column(M, n, W, e):
    """``W[n] = B^-1 A_e``: the entering variable's column in the current basis.  Columns of
    ``[I, -M, -1]`` (variables w_0..w_n-1, z_0..z_n-1, z0); ``W[k]`` is column k of ``B^-1``."""
    a = W[n]
    if e < n:
        for i in range(n):
            a[i] = W[e, i]
    elif e < 2 * n:
        j = e - n
        for i in range(n):
            a[i] = 0.0
        for k in range(n):
            mk = M[k, j]
            if mk != 0.0:
                for i in range(n):
                    a[i] -= W[k, i] * mk
    else:
        for i in range(n):
            a[i] = 0.0
        for k in range(n):
            for i in range(n):
                a[i] -= W[k, i]


@kernel
def _pivot(n, W, r):
    """Pivot on row r with the entering column ``a`` in ``W[n]``: update ``B^-1`` (its columns in
    ``W[0..n-1]``: row r divided by ``a_r``, ``a_i`` times it taken from every other row) and the
    basic values (``W[n + 1]``)."""
    a = W[n]
    p = a[r]
    x = W[n + 1]
    x[r] /= p
    xr = x[r]
    for i in range(n):
        if i != r:
            x[i] -= a[i] * xr
    for k in range(n):
        s = W[k, r] / p
        if s != 0.0:
            for i in range(n):
                W[k, i] -= a[i] * s
        W[k, r] = s


@kernel
def _ratio_test(n, W, basis, art, ztol):
    """Leaving row for the column ``a`` in ``W[n]`` (-1: none, ray termination), by Harris'
    two-pass ratio test: over the rows with ``a_i > PIVOT_TOL max|a|``, the bound
    ``theta = min (max(rhs_i, 0) + ztol) / a_i``; among the rows whose ratio
    ``max(rhs_i, 0) / a_i`` is within it, the artificial variable ``art`` if it is one of them,
    else the row with the largest ``a_i`` (the most stable pivot)."""
    amax = 0.0
    for i in range(n):
        a = abs(W[n, i])
        if a > amax:
            amax = a
    if not (amax > 0.0):
        return -1
    tol = PIVOT_TOL * amax
    bound = np.inf
    for i in range(n):
        a = W[n, i]
        if a > tol:
            t = (max(W[n + 1, i], 0.0) + ztol) / a
            if t < bound:
                bound = t
    if bound == np.inf:
        return -1
    r = -1
    best = 0.0
    for i in range(n):
        a = W[n, i]
        if a > tol and max(W[n + 1, i], 0.0) / a <= bound:
            if basis[i] == art:
                return i
            if a > best:
                best = a
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
        if q[i] < qmin:  # the first most negative row
            qmin = q[i]
            r = i
    if r < 0:  # q >= 0: z = 0
        return LCP_SOLVED, 0
    art = 2 * n  # z0
    ztol = -ZERO_TOL * qmin
    for i in range(n):
        if ZERO_TOL * q[i] > ztol:
            ztol = ZERO_TOL * q[i]
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
        r = _ratio_test(n, W, basis, art, ztol)
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


# relative diagonal regularizations lemke_regularized tries in turn (x max |M_ii|)
REGULARIZATION = (0.0, 1e-10, 1e-8, 1e-6, 1e-4)


@kernel
def lemke_regularized(M, q, n, z, maxit, W, basis, tol):
    """:func:`lemke` on ``M + eps I`` for eps in :data:`REGULARIZATION` (times the largest
    diagonal entry of M) in turn, until one ends solved with a complementarity violation of the
    *unregularized* problem (:func:`lcp_residual`) at most ``tol * max|q|`` (Drumwright's
    regularized Lemke in Moby/Drake does the same: a strictly copositive ``M + eps I`` is processed
    by Lemke for any q, and a small eps barely moves the solution).  ``M``'s diagonal is
    restored from ``W[n + 2]`` (``W``: >= n + 3 rows, :func:`lcp_work`).  Returns ``(status,
    pivots summed over the attempts, eps used (relative), residual)``; on failure the last
    attempt's status and ``z``."""
    dmax = 0.0
    qmax = 0.0
    for i in range(n):
        W[n + 2, i] = M[i, i]
        if abs(M[i, i]) > dmax:
            dmax = abs(M[i, i])
        if abs(q[i]) > qmax:
            qmax = abs(q[i])
    if not (dmax > 0.0):
        dmax = 1.0
    total = 0
    st = LCP_MAXIT
    res = np.inf
    eps = 0.0
    for k in range(len(REGULARIZATION)):
        eps = REGULARIZATION[k]
        for i in range(n):
            M[i, i] = W[n + 2, i] + eps * dmax
        st, piv = lemke(M, q, n, z, maxit, W, basis)
        total += piv
        for i in range(n):
            M[i, i] = W[n + 2, i]
        if st == LCP_SOLVED:
            res = lcp_residual(M, q, n, z)
            if res <= tol * qmax:
                return st, total, eps, res
            st = LCP_RAY  # "solved" by a path that lost accuracy: try the next eps
    return st, total, eps, res


def lcp_work(n: int):
    """Scratch ``(W, basis)`` of :func:`lemke` and :func:`lemke_regularized` for problems of size
    up to ``n``."""
    n = max(int(n), 1)
    return np.zeros((n + 3, n)), np.zeros(n, np.int64)


def solve_lcp(M, q, maxit: int | None = None, regularized: bool = False, tol: float = 1e-6):
    """Host convenience: ``(z, status, pivots)`` of :func:`lemke` (``regularized``:
    :func:`lemke_regularized` with ``tol``) on numpy arrays (``maxit`` None: ``50 + 10 n``)."""
    q = np.ascontiguousarray(q, np.float64).reshape(-1)
    n = q.size
    M = np.ascontiguousarray(M, np.float64).reshape(n, n)
    W, basis = lcp_work(n)
    z = np.zeros(max(n, 1))
    cap = int(50 + 10 * n if maxit is None else maxit)
    if regularized:
        st, piv, _, _ = lemke_regularized(M, q, n, z, cap, W, basis, float(tol))
    else:
        st, piv = lemke(M, q, n, z, cap, W, basis)
    return z[:n], int(st), int(piv)
