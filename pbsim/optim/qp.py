"""A small dense convex QP solver kernel for the contact problems ahead (NMDP, paper 002: one QP
per iteration in the contact impulses; notes/pbfd_nmdp.md B1 and item 9).

    min 1/2 x^T A x + b^T x   (A symmetric positive semidefinite, n x n)
    s.t. x in C = C_1 x ... x C_k, one set per block of consecutive variables:

- :data:`QP_BOX`: each variable of the block in ``[lo_i, hi_i]`` (infinite bounds: free);
- :data:`QP_CONE`: three variables ``(x_n, x_t1, x_t2)``, the friction cone ``|x_t| <= mu x_n``
  (hence ``x_n >= 0``);
- :data:`QP_SIMPLEX`: ``x >= 0``, ``sum x <= c`` (NMDP's per-contact weights, Eq. 5: ``c = 1``);
  the block's ``mu`` entry is the cap ``c`` when it is > 0, else ``c = 1`` (a capped simplex of
  another size lets a caller scale its variables per block, e.g. to forces, without changing
  the projection's exactness).

Accelerated projected gradient (FISTA, Beck & Teboulle 2009) with the Lipschitz constant found
by backtracking (for a quadratic the test is exact: ``d^T A d <= L |d|^2``) and gradient-based
adaptive restart (O'Donoghue & Candes 2015): every projection is exact and O(block size), one
or two products with A per iteration, no factorization, no allocation (scratch: ``work``, (5, n)),
scalar code (a CUDA twin compiles).  It stops when the KKT residual (the natural residual
``|x - P_C(x - (A x + b))|_inf``, zero exactly at a solution: the projected gradient step of
length 1 does not move) is at most ``tol``.

:func:`qp_solve_as` (the default of ``ne_mdp`` and ``nmdp``): a primal active-set method (Nocedal
& Wright, *Numerical Optimization*, 2nd ed., Algorithm 16.3, with the singular-Hessian case of
Sec. 16.5) for simplex and box blocks.  The working set fixes variables at a bound and marks
simplex blocks *tight* (``sum x = c``); the free directions are the columns ``z = e_a`` (a free
variable) or ``z = e_a - e_r`` (a free variable of a tight block, ``r`` the block's reference
variable), and the reduced Hessian ``Z^T A Z`` has a dense Cholesky factor ``L`` (``L`` grows by
one row when a constraint leaves the working set; it is refactored when one enters).  Per
iteration: the Newton step ``Z (Z^T A Z)^-1 (-Z^T g)`` with the ratio test (a blocking bound or
cap enters the working set), or at a minimiser on the working set the multipliers (``g_i`` of a
variable at 0; ``g_i - g_r`` in a tight block, whose sum has ``nu = -g_r``) and the most violated
one leaves.  ``A`` is only PSD (ne_mdp's ``X^T H X`` has rank <= nv < the number of weights): a
Cholesky pivot^2 below ``AS_DEP`` of its diagonal marks a dof dependent on the earlier ones; its
null direction ``z_j - Z L^-T L^-1 Z^T A z_j`` (zero curvature) is followed downhill to the first
bound (the feasible set is bounded), which keeps the factor nonsingular.  It stops when the
largest violated multiplier is below ``tol / 10`` and the natural residual with the exact
gradient is at most ``tol``, so its result satisfies FISTA's test (``maxit`` caps its iterations:
degenerate steps of length 0 could cycle in principle; not seen on the captured QPs).  Cone blocks, or
more free dofs than the factor's rows (``qp_work_as``'s ``kmax``), go to FISTA from where it
stands.  No allocation, scalar loops, so the CUDA twin compiles.  Measured on QPs captured from
the standing Robosimian (128 weights, rank <= 38): 122 against FISTA's 5954 iterations (means)
and 570x less time for ne_mdp's, 87 against 578 and 53x for nmdp's proximal ones, at ``tol`` 1e-8
(``scripts/bench/bench_qp.py``, docs/benchmarks/nmdp.md "QP solver").
"""

import math

import numpy as np

from pbsim.jit import kernel
from pbsim.optim.linalg import cholesky_solve, matvec_add

QP_BOX, QP_CONE, QP_SIMPLEX = 0, 1, 2


@kernel
def cone_project(x, i, mu):
    """Euclidean projection of ``(x[i], x[i+1], x[i+2])`` = (normal, tangent) onto the cone
    ``|t| <= mu n``, in place."""
    xn = x[i]
    t1 = x[i + 1]
    t2 = x[i + 2]
    s = math.sqrt(t1 * t1 + t2 * t2)
    if s <= mu * xn:  # inside
        return
    if mu * s <= -xn:  # in the polar cone: the apex
        x[i] = 0.0
        x[i + 1] = 0.0
        x[i + 2] = 0.0
        return
    pn = (xn + mu * s) / (1.0 + mu * mu)  # onto the boundary ray through (1, mu t/|t|)
    f = mu * pn / s
    x[i] = pn
    x[i + 1] = f * t1
    x[i + 2] = f * t2


@kernel
def simplex_project(x, i0, i1):
    """Euclidean projection of ``x[i0:i1]`` onto ``{w >= 0, sum w <= 1}``, in place."""
    capped_simplex_project(x, i0, i1, 1.0)


@kernel
def capped_simplex_project(x, i0, i1, cap):
    """Euclidean projection of ``x[i0:i1]`` onto ``{w >= 0, sum w <= cap}`` (``cap > 0``), in place
    (Michelot's algorithm: the threshold tau rises, its support shrinks, at most i1 - i0 passes)."""
    s = 0.0
    for i in range(i0, i1):
        if x[i] > 0.0:
            s += x[i]
    if s <= cap:
        for i in range(i0, i1):
            if x[i] < 0.0:
                x[i] = 0.0
        return
    s = 0.0
    for i in range(i0, i1):
        s += x[i]
    cnt = i1 - i0
    tau = (s - cap) / cnt
    for _ in range(i1 - i0):
        s = 0.0
        c = 0
        for i in range(i0, i1):
            if x[i] > tau:
                s += x[i]
                c += 1
        tau = (s - cap) / c
        if c == cnt:
            break
        cnt = c
    for i in range(i0, i1):
        v = x[i] - tau
        x[i] = v if v > 0.0 else 0.0


@kernel
def qp_project(x, lo, hi, bstart, btype, mu):
    """``x`` <- its projection onto the feasible set (module docstring), in place."""
    for k in range(btype.shape[0]):
        i0 = bstart[k]
        i1 = bstart[k + 1]
        t = btype[k]
        if t == QP_CONE:
            cone_project(x, i0, mu[k])
        elif t == QP_SIMPLEX:
            c = mu[k]
            capped_simplex_project(x, i0, i1, c if c > 0.0 else 1.0)
        else:
            for i in range(i0, i1):
                if x[i] < lo[i]:
                    x[i] = lo[i]
                elif x[i] > hi[i]:
                    x[i] = hi[i]


@kernel
def qp_gradient(A, x, b, y, n):
    """y = A x + b (:func:`pbsim.optim.linalg.matvec_add` from y = b)."""
    for i in range(n):
        y[i] = b[i]
    matvec_add(A, x, y, n, n)


@kernel
def qp_apply(A, x, y, n):
    """y = A x."""
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += A[i, j] * x[j]
        y[i] = s


@kernel
def qp_kkt(x, g, lo, hi, bstart, btype, mu, tmp, n):
    """The natural residual |x - P(x - g)|_inf at ``x`` with gradient ``g``."""
    for i in range(n):
        tmp[i] = x[i] - g[i]
    qp_project(tmp, lo, hi, bstart, btype, mu)
    r = 0.0
    for i in range(n):
        a = abs(x[i] - tmp[i])
        if not (a <= r):  # NaN propagates
            r = a
    return r


@kernel
def qp_finish(A, x, b, g, n, lo, hi, bstart, btype, mu, tmp, it, info):
    """The end of a solve: the exact gradient g = A x + b, the KKT residual, the objective;
    ``info[0:3]`` = (iterations, residual, objective).  Returns the residual."""
    qp_gradient(A, x, b, g, n)
    r = qp_kkt(x, g, lo, hi, bstart, btype, mu, tmp, n)
    f = 0.0
    for i in range(n):
        f += x[i] * (0.5 * (g[i] - b[i]) + b[i])
    info[0] = it
    info[1] = r
    info[2] = f
    return r


@kernel
def qp_solve(A, b, n, lo, hi, bstart, btype, mu, x, maxit, tol, work, info):
    """Solve the QP (module docstring) from the guess in ``x`` (projected first); the solution is
    left in ``x``.  ``work``: (5, n) scratch.  ``info = [iterations, KKT residual, objective,
    L]`` (L: the curvature estimate the step used).  Returns whether the residual reached ``tol``
    within ``maxit`` iterations."""
    y = work[0]
    z = work[1]
    g = work[2]
    Ad = work[3]
    tmp = work[4]
    qp_project(x, lo, hi, bstart, btype, mu)
    L = 0.0
    for i in range(n):
        if A[i, i] > L:
            L = A[i, i]  # <= the largest eigenvalue: backtracking raises it as needed
    if not (L > 0.0):
        L = 1.0
    for i in range(n):
        y[i] = x[i]
    qp_gradient(A, x, b, g, n)
    r = qp_kkt(x, g, lo, hi, bstart, btype, mu, tmp, n)
    t = 1.0
    it = 0
    while it < maxit and r > tol:
        it += 1
        qp_gradient(A, y, b, g, n)  # gradient at y
        for _bt in range(200):
            for i in range(n):
                z[i] = y[i] - g[i] / L
            qp_project(z, lo, hi, bstart, btype, mu)
            for i in range(n):
                tmp[i] = z[i] - y[i]
            qp_apply(A, tmp, Ad, n)
            dd = 0.0
            dad = 0.0
            for i in range(n):
                dd += tmp[i] * tmp[i]
                dad += tmp[i] * Ad[i]
            if dad <= L * dd * (1.0 + 1e-12):
                break
            L = max(2.0 * L, dad / dd)
        # gradient at z (= g + A d) and the restart test g(y) . (z - x) > 0 (the momentum points uphill)
        up = 0.0
        for i in range(n):
            up += g[i] * (z[i] - x[i])
            g[i] += Ad[i]
        t1 = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        beta = (t - 1.0) / t1
        if up > 0.0:
            t1 = 1.0
            beta = 0.0
        for i in range(n):
            y[i] = z[i] + beta * (z[i] - x[i])
            x[i] = z[i]
        t = t1
        r = qp_kkt(x, g, lo, hi, bstart, btype, mu, tmp, n)
        if r <= tol:  # confirmed with the exact gradient (g(y) + A d carries rounding)
            qp_gradient(A, x, b, g, n)
            r = qp_kkt(x, g, lo, hi, bstart, btype, mu, tmp, n)
    r = qp_finish(A, x, b, g, n, lo, hi, bstart, btype, mu, tmp, it, info)
    info[3] = L
    return r <= tol


# ---------------------------------------------------------------------------------------------
# Primal active-set method (the default of ne_mdp and nmdp)

AS_ROWS = 14  # rows of qp_work_as before the Cholesky factor
AS_DEP = 1e-10  # a dof whose Cholesky pivot^2 is below this fraction of its diagonal is dependent
AS_FREE, AS_LO, AS_HI = 1.0, 0.0, 2.0  # variable states (stored as floats in the work array)


@kernel
def _as_hr(A, a1, r1, a2, r2):
    """``(e_a1 - e_r1)^T A (e_a2 - e_r2)`` (r < 0: no reference)."""
    h = A[a1, a2]
    if r2 >= 0:
        h -= A[a1, r2]
    if r1 >= 0:
        h -= A[r1, a2]
        if r2 >= 0:
            h += A[r1, r2]
    return h


@kernel
def _as_chol_row(A, L, da, dr, j):
    """Row j of the Cholesky factor of the reduced Hessian ``Z^T A Z`` (Z's columns ``e_a - e_r``
    from the dof lists ``da``, ``dr``) from rows 0..j-1.  Returns False (the row holds
    ``y = L^-1 Z^T A z_j`` then) when dof j depends on the previous ones (pivot^2 below
    ``AS_DEP`` of its diagonal)."""
    aj = int(da[j])
    rj = int(dr[j])
    for c in range(j):
        s = _as_hr(A, aj, rj, int(da[c]), int(dr[c]))
        for t in range(c):
            s -= L[j, t] * L[c, t]
        L[j, c] = s / L[c, c]
    hjj = _as_hr(A, aj, rj, aj, rj)
    piv = hjj
    for t in range(j):
        piv -= L[j, t] * L[j, t]
    if not (piv > AS_DEP * hjj):
        return False
    L[j, j] = math.sqrt(piv)
    return True


@kernel
def _as_dofs_kept(n, bstart, btype, st, tight, da, dr, kmax, valid):
    """The canonical dof list (free variables; in a tight simplex block all but its reference r,
    as ``e_a - e_r``) into ``da``, ``dr``, and how many leading entries of the old list (its first
    ``valid``, those with a row in the factor) it left as they were: ``(length, kept)``, length -1
    when it exceeds ``kmax``.  The factor's rows below ``kept`` are those of the new list (a row
    depends only on the dofs up to it), so a refactorization starts there: the same numbers as
    from row 0."""
    nd = 0
    kept = -1
    for k in range(btype.shape[0]):
        r = int(tight[k]) - 1 if btype[k] == QP_SIMPLEX else -1
        for i in range(bstart[k], bstart[k + 1]):
            if st[i] == AS_FREE and i != r:
                if nd == kmax:
                    return -1, 0
                if kept < 0 and (nd >= valid or int(da[nd]) != i or int(dr[nd]) != r):
                    kept = nd
                da[nd] = i
                dr[nd] = r
                nd += 1
    if kept < 0:
        kept = min(nd, valid)
    return nd, kept


@kernel
def _as_direction(L, da, dr, d, nd, n, p):
    """``p = Z d`` over the first nd dofs (p zeroed first)."""
    for i in range(n):
        p[i] = 0.0
    for j in range(nd):
        p[int(da[j])] += d[j]
        r = int(dr[j])
        if r >= 0:
            p[r] -= d[j]


@kernel
def _as_ratio(x, p, n, lo, hi, bstart, btype, mu, st, tight, amax):
    """The largest step ``alpha <= amax`` along p keeping x feasible, with what blocks it:
    ``(alpha, kind, index)``, kind 0 none, 1 a variable at its lower bound (0 on a simplex),
    2 at its upper bound, 3 a simplex block's sum at its cap."""
    alpha = amax
    kind = 0
    idx = -1
    for k in range(btype.shape[0]):
        i0 = bstart[k]
        i1 = bstart[k + 1]
        if btype[k] == QP_SIMPLEX:
            ps = 0.0
            xs = 0.0
            for i in range(i0, i1):
                xs += x[i]
                if st[i] == AS_FREE and p[i] < 0.0:
                    a = max(x[i], 0.0) / -p[i]
                    if a < alpha:
                        alpha = a
                        kind = 1
                        idx = i
                ps += p[i]
            if tight[k] == 0.0 and ps > 0.0:
                c = mu[k] if mu[k] > 0.0 else 1.0
                a = max(c - xs, 0.0) / ps
                if a < alpha:
                    alpha = a
                    kind = 3
                    idx = k
        else:
            for i in range(i0, i1):
                if st[i] != AS_FREE:
                    continue
                if p[i] < 0.0 and lo[i] > -math.inf:
                    a = max(x[i] - lo[i], 0.0) / -p[i]
                    if a < alpha:
                        alpha = a
                        kind = 1
                        idx = i
                elif p[i] > 0.0 and hi[i] < math.inf:
                    a = max(hi[i] - x[i], 0.0) / p[i]
                    if a < alpha:
                        alpha = a
                        kind = 2
                        idx = i
    return alpha, kind, idx


@kernel
def _as_move(A, x, g, p, Ap, n, alpha):
    """x += alpha p, g += alpha A p (over p's support)."""
    for i in range(n):
        Ap[i] = 0.0
    for j in range(n):
        pj = p[j]
        if pj != 0.0:
            for i in range(n):
                Ap[i] += A[i, j] * pj
    for i in range(n):
        x[i] += alpha * p[i]
        g[i] += alpha * Ap[i]


@kernel
def _as_block(x, lo, hi, bstart, btype, mu, st, tight, kind, idx):
    """Put the blocking constraint of :func:`_as_ratio` into the working set (exactly on it)."""
    if kind == 1:
        x[idx] = lo[idx] if lo[idx] > -math.inf else 0.0
        st[idx] = AS_LO
        for k in range(btype.shape[0]):  # x[idx] was the reference of its tight block: a new one
            if bstart[k] <= idx < bstart[k + 1] and btype[k] == QP_SIMPLEX:
                x[idx] = 0.0
                if int(tight[k]) - 1 == idx:
                    best = -1
                    for i in range(bstart[k], bstart[k + 1]):
                        if st[i] == AS_FREE and (best < 0 or x[i] > x[best]):
                            best = i
                    tight[k] = best + 1.0  # (no free variable left: the block is not tight)
    elif kind == 2:
        x[idx] = hi[idx]
        st[idx] = AS_HI
    elif kind == 3:
        k = idx
        c = mu[k] if mu[k] > 0.0 else 1.0
        best = -1
        s = 0.0
        for i in range(bstart[k], bstart[k + 1]):
            s += x[i]
            if st[i] == AS_FREE and (best < 0 or x[i] > x[best]):
                best = i
        x[best] += c - s  # the sum exactly at the cap
        tight[k] = best + 1.0


@kernel
def qp_solve_as(A, b, n, lo, hi, bstart, btype, mu, x, maxit, tol, work, info):
    """Solve the QP (module docstring) by the primal active-set method (module docstring) from the
    guess in ``x`` (projected first); same arguments, result and ``info`` as :func:`qp_solve`
    (``info[3]``: the number of free dofs at the end).  ``work``: :func:`qp_work_as` (rows 0-4 are
    FISTA's scratch: a problem with cone blocks, or whose free dofs outgrow the factor's
    ``work.shape[0] - AS_ROWS`` rows, is finished by :func:`qp_solve` from where it stands)."""
    for k in range(btype.shape[0]):
        if btype[k] == QP_CONE:
            return qp_solve(A, b, n, lo, hi, bstart, btype, mu, x, maxit, tol, work, info)
    g = work[5]
    p = work[6]
    Ap = work[7]
    st = work[8]
    da = work[9]
    dr = work[10]
    d = work[11]
    tmp = work[12]
    tight = work[13]
    kmax = min(work.shape[0] - AS_ROWS, work.shape[1])
    L = work[AS_ROWS:]
    qp_project(x, lo, hi, bstart, btype, mu)
    for k in range(btype.shape[0]):  # the working set of the projected guess
        i0 = bstart[k]
        i1 = bstart[k + 1]
        tight[k] = 0.0
        if btype[k] == QP_SIMPLEX:
            c = mu[k] if mu[k] > 0.0 else 1.0
            s = 0.0
            top = -1
            for i in range(i0, i1):
                st[i] = AS_FREE if x[i] > 0.0 else AS_LO
                s += x[i]
                if x[i] > 0.0 and (top < 0 or x[i] > x[top]):
                    top = i
            if top >= 0 and s >= c * (1.0 - 1e-14):
                x[top] += c - s
                tight[k] = top + 1.0
        else:
            for i in range(i0, i1):
                if x[i] <= lo[i]:
                    st[i] = AS_LO
                elif x[i] >= hi[i]:
                    st[i] = AS_HI
                else:
                    st[i] = AS_FREE
    qp_gradient(A, x, b, g, n)
    it = 0
    nd = 0
    refactor = True
    valid = 0  # leading rows of L that are the factor's rows for the dofs da[:valid], dr[:valid]
    at_min = False
    checks = 0
    fallback = False
    converged = False
    while True:
        if refactor:
            refactor = False
            nd, kept = _as_dofs_kept(n, bstart, btype, st, tight, da, dr, kmax, valid)
            if nd < 0:
                fallback = True
                break
            dep = -1
            for j in range(kept, nd):  # rows below kept are unchanged
                if not _as_chol_row(A, L, da, dr, j):
                    dep = j
                    break
            valid = dep if dep >= 0 else nd
            if dep >= 0:  # the reduced Hessian is singular: a null direction, downhill to a bound
                if it >= maxit:
                    break
                it += 1
                for t in range(dep - 1, -1, -1):  # L^T d = -y (y: row dep of L)
                    s = -L[dep, t]
                    for u in range(t + 1, dep):
                        s -= L[u, t] * d[u]
                    d[t] = s / L[t, t]
                d[dep] = 1.0
                _as_direction(L, da, dr, d, dep + 1, n, p)
                slope = 0.0
                for i in range(n):
                    slope += p[i] * g[i]
                if slope > 0.0:
                    for i in range(n):
                        p[i] = -p[i]
                alpha, kind, idx = _as_ratio(x, p, n, lo, hi, bstart, btype, mu, st, tight, math.inf)
                if kind == 0:  # unbounded below along a null direction (free variables)
                    fallback = True
                    break
                _as_move(A, x, g, p, Ap, n, alpha)
                _as_block(x, lo, hi, bstart, btype, mu, st, tight, kind, idx)
                refactor = True
                at_min = False
                continue
        if not at_min:  # Newton step on the working set: L L^T d = -Z^T g
            if it >= maxit:
                break
            it += 1
            for j in range(nd):  # the reduced gradient along the free directions e_a - e_r
                s = -g[int(da[j])]
                r = int(dr[j])
                if r >= 0:
                    s += g[r]
                tmp[j] = s
            cholesky_solve(L, tmp, d, nd)
            _as_direction(L, da, dr, d, nd, n, p)
            alpha, kind, idx = _as_ratio(x, p, n, lo, hi, bstart, btype, mu, st, tight, 1.0)
            _as_move(A, x, g, p, Ap, n, alpha)
            if kind != 0:
                _as_block(x, lo, hi, bstart, btype, mu, st, tight, kind, idx)
                refactor = True
                continue
            at_min = True
        # a minimiser on the working set: the most violated multiplier sign leaves it
        best = 0.0
        bi = -1
        bk = -1
        for k in range(btype.shape[0]):
            i0 = bstart[k]
            i1 = bstart[k + 1]
            if btype[k] == QP_SIMPLEX:
                r = int(tight[k]) - 1
                gf = g[r] if r >= 0 else 0.0  # -nu (the sum's multiplier)
                if r >= 0 and gf > best:
                    best = gf
                    bi = -1
                    bk = k
                for i in range(i0, i1):
                    if st[i] != AS_FREE and gf - g[i] > best:
                        best = gf - g[i]
                        bi = i
                        bk = k
            else:
                for i in range(i0, i1):
                    if lo[i] < hi[i]:
                        v = -g[i] if st[i] == AS_LO else (g[i] if st[i] == AS_HI else 0.0)
                        if v > best:
                            best = v
                            bi = i
                            bk = k
        if best <= 0.1 * tol:  # confirm with the exact gradient and the natural residual
            qp_gradient(A, x, b, g, n)
            if qp_kkt(x, g, lo, hi, bstart, btype, mu, tmp, n) <= tol:
                converged = True
                break
            checks += 1
            if checks > 3:
                fallback = True
                break
            at_min = False  # rounding: one more Newton step with the exact gradient
            continue
        at_min = False
        if bi < 0:  # release the sum of block bk: its reference becomes a plain dof
            r = int(tight[bk]) - 1
            tight[bk] = 0.0
            da[nd] = r
            dr[nd] = -1.0
        else:
            st[bi] = AS_FREE
            da[nd] = bi
            dr[nd] = tight[bk] - 1.0 if btype[bk] == QP_SIMPLEX else -1.0
        if nd == kmax:
            fallback = True
            break
        if _as_chol_row(A, L, da, dr, nd):
            nd += 1
            valid = nd
        else:
            refactor = True  # dependent: the refactorization finds it and takes its null direction
    if fallback and it < maxit:
        ok = qp_solve(A, b, n, lo, hi, bstart, btype, mu, x, maxit - it, tol, work, info)
        info[0] += it
        info[3] = -1.0
        return ok
    res = qp_finish(A, x, b, g, n, lo, hi, bstart, btype, mu, tmp, it, info)
    info[3] = nd
    return converged or res <= tol


def qp_layout(blocks):
    """Block arrays for :func:`qp_solve` from a list of blocks, in variable order:
    ``("box", lo, hi)`` (lo, hi: sequences of one length, or scalars with a size:
    ``("box", lo, hi, size)``), ``("free", size)``, ``("cone", mu)``, ``("simplex", size)`` (or
    ``("simplex", size, cap)``: ``sum x <= cap``).
    Returns ``(n, lo, hi, bstart, btype, mu)``."""
    lo, hi, start, kind, mus = [], [], [0], [], []
    for blk in blocks:
        name = blk[0]
        if name == "box":
            if len(blk) == 4:
                a = np.full(int(blk[3]), float(blk[1]))
                c = np.full(int(blk[3]), float(blk[2]))
            else:
                a, c = np.atleast_1d(np.asarray(blk[1], float)), np.atleast_1d(np.asarray(blk[2], float))
            m, t, u = len(a), QP_BOX, 0.0
        elif name == "free":
            m, t, u = int(blk[1]), QP_BOX, 0.0
            a, c = np.full(m, -np.inf), np.full(m, np.inf)
        elif name == "cone":
            m, t, u = 3, QP_CONE, float(blk[1])
            if not u >= 0.0:
                raise ValueError(f"friction coefficient must be >= 0, got {u!r}")
            a, c = np.full(3, -np.inf), np.full(3, np.inf)
        elif name == "simplex":
            m, t, u = int(blk[1]), QP_SIMPLEX, (float(blk[2]) if len(blk) > 2 else 0.0)
            if len(blk) > 2 and not (math.isfinite(u) and u > 0.0):
                raise ValueError(f"simplex cap must be a finite number > 0, got {blk[2]!r}")
            a, c = np.full(m, -np.inf), np.full(m, np.inf)
        else:
            raise ValueError(f"unknown QP block {name!r} (box, free, cone, simplex)")
        if m < 1:
            raise ValueError(f"empty QP block {blk!r}")
        lo.extend(a)
        hi.extend(c)
        start.append(start[-1] + m)
        kind.append(t)
        mus.append(u)
    return (
        start[-1],
        np.array(lo, float),
        np.array(hi, float),
        np.array(start, np.int64),
        np.array(kind, np.int64),
        np.array(mus, float),
    )


def qp_work(n: int) -> np.ndarray:
    """Scratch for :func:`qp_solve` on n variables."""
    return np.zeros((5, n))


def qp_work_as(n: int, kmax: int | None = None) -> np.ndarray:
    """Scratch for :func:`qp_solve_as` on n variables with at most ``kmax`` free dofs (default n;
    the reduced Hessian of ``A = X^T H X`` has rank <= X's columns, so ne_mdp needs nv)."""
    k = n if kmax is None else max(1, min(int(kmax), n))
    return np.zeros((AS_ROWS + k, max(n, k, 1)))
