"""Dense linear algebra kernels for the per-trajectory optimisers (no allocation)."""

import math

from pbsim.jit import kernel


@kernel
def cholesky_factor(A, L, n):
    """Lower Cholesky factor of the leading n x n block of A into L; False if not positive definite."""
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not (s > 0.0) or not math.isfinite(s):
            return False
        d = math.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, n):
            s = A[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / d
    return True


@kernel
def cholesky_solve(L, rhs, x, n):
    """Solve L L^T x = rhs (x may alias rhs)."""
    for i in range(n):
        s = rhs[i]
        for k in range(i):
            s -= L[i, k] * x[k]
        x[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            s -= L[k, i] * x[k]
        x[i] = s / L[i, i]


@kernel
def inf_norm(x, n):
    s = 0.0
    for i in range(n):
        a = abs(x[i])
        if a > s:
            s = a
    return s


@kernel
def dot(x, y, n):
    s = 0.0
    for i in range(n):
        s += x[i] * y[i]
    return s


@kernel
def matvec_add(A, x, y, n, m):
    """``y[i] += A[i, :m] . x[:m]`` for ``i < n``, four rows at a time: each sum starts from
    ``y[i]`` and adds in the order of j (the same numbers as one row at a time, four independent
    add chains instead of one's latency)."""
    i = 0
    while i + 4 <= n:
        s0 = y[i]
        s1 = y[i + 1]
        s2 = y[i + 2]
        s3 = y[i + 3]
        for j in range(m):
            xj = x[j]
            s0 += A[i, j] * xj
            s1 += A[i + 1, j] * xj
            s2 += A[i + 2, j] * xj
            s3 += A[i + 3, j] * xj
        y[i] = s0
        y[i + 1] = s1
        y[i + 2] = s2
        y[i + 3] = s3
        i += 4
    while i < n:
        s = y[i]
        for j in range(m):
            s += A[i, j] * x[j]
        y[i] = s
        i += 1


@kernel
def gram_symmetric(P, Q, n, m, out):
    """``out[r, c] = out[c, r] = P[r, :m] . Q[c, :m]`` for ``r <= c < n``: ``P Q^T`` where that is
    symmetric (``Q = P S``, S symmetric: ``X^T H X`` from X and H X).  Returns its largest
    diagonal entry (0.0 when none is positive).  Four columns at a time (four independent sums,
    each in the order of j: the same numbers as one at a time, without the one add chain's
    latency)."""
    dmax = 0.0
    for r in range(n):
        c = r
        while c + 4 <= n:
            a0 = 0.0
            a1 = 0.0
            a2 = 0.0
            a3 = 0.0
            for j in range(m):
                prj = P[r, j]
                a0 += prj * Q[c, j]
                a1 += prj * Q[c + 1, j]
                a2 += prj * Q[c + 2, j]
                a3 += prj * Q[c + 3, j]
            out[r, c] = a0
            out[c, r] = a0
            out[r, c + 1] = a1
            out[c + 1, r] = a1
            out[r, c + 2] = a2
            out[c + 2, r] = a2
            out[r, c + 3] = a3
            out[c + 3, r] = a3
            c += 4
        while c < n:
            acc = 0.0
            for j in range(m):
                acc += P[r, j] * Q[c, j]
            out[r, c] = acc
            out[c, r] = acc
            c += 1
        if out[r, r] > dmax:
            dmax = out[r, r]
    return dmax


@kernel
def lu_solve_inplace(A, x, n):
    """Solve A x = x (rhs in x) by Gaussian elimination with partial pivoting; A is overwritten.
    Returns False when A is numerically singular."""
    amax = 0.0
    for i in range(n):
        for j in range(n):
            if abs(A[i, j]) > amax:
                amax = abs(A[i, j])
    if not (amax > 0.0):
        return False
    for k in range(n):
        p = k
        best = abs(A[k, k])
        for i in range(k + 1, n):
            if abs(A[i, k]) > best:
                best = abs(A[i, k])
                p = i
        if not (best > 1e-14 * amax):
            return False
        if p != k:
            for j in range(n):
                t = A[k, j]
                A[k, j] = A[p, j]
                A[p, j] = t
            t = x[k]
            x[k] = x[p]
            x[p] = t
        inv = 1.0 / A[k, k]
        for i in range(k + 1, n):
            f = A[i, k] * inv
            if f != 0.0:
                for j in range(k + 1, n):
                    A[i, j] -= f * A[k, j]
                x[i] -= f * x[k]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for j in range(i + 1, n):
            s -= A[i, j] * x[j]
        x[i] = s / A[i, i]
    return True


@kernel
def lu_factor(A, LU, piv, n):
    """LU factor with partial pivoting of the leading n x n block of A into LU (may alias A) and
    the row swaps into ``piv`` (int, n): ``P A = L U``, unit L below the diagonal.  False when the
    matrix is numerically singular (a pivot below 1e-14 of the largest entry: the rank test NMDP's
    projection uses to declare failure).  Pair with :func:`lu_solve`."""
    amax = 0.0
    for i in range(n):
        for j in range(n):
            LU[i, j] = A[i, j]
            if abs(A[i, j]) > amax:
                amax = abs(A[i, j])
    if not (amax > 0.0) or not math.isfinite(amax):
        return False
    for k in range(n):
        p = k
        best = abs(LU[k, k])
        for i in range(k + 1, n):
            if abs(LU[i, k]) > best:
                best = abs(LU[i, k])
                p = i
        piv[k] = p
        if not (best > 1e-14 * amax):
            return False
        if p != k:
            for j in range(n):
                t = LU[k, j]
                LU[k, j] = LU[p, j]
                LU[p, j] = t
        inv = 1.0 / LU[k, k]
        for i in range(k + 1, n):
            f = LU[i, k] * inv
            LU[i, k] = f
            if f != 0.0:
                for j in range(k + 1, n):
                    LU[i, j] -= f * LU[k, j]
    return True


@kernel
def lu_solve(LU, piv, x, n):
    """Solve A x = x (rhs in x, overwritten) with the factor of :func:`lu_factor`."""
    for k in range(n):
        p = piv[k]
        if p != k:
            t = x[k]
            x[k] = x[p]
            x[p] = t
    for i in range(n):
        s = x[i]
        for j in range(i):
            s -= LU[i, j] * x[j]
        x[i] = s
    for i in range(n - 1, -1, -1):
        s = x[i]
        for j in range(i + 1, n):
            s -= LU[i, j] * x[j]
        x[i] = s / LU[i, i]


@kernel
def lu_solve_transpose(LU, piv, x, n):
    """Solve A^T x = x (rhs in x, overwritten) with the factor of :func:`lu_factor`: ``A^T = U^T
    L^T P``, so ``U^T z = b``, ``L^T y = z`` and ``x = P^T y`` (the row swaps in reverse)."""
    for i in range(n):
        s = x[i]
        for j in range(i):
            s -= LU[j, i] * x[j]
        x[i] = s / LU[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for j in range(i + 1, n):
            s -= LU[j, i] * x[j]
        x[i] = s
    for k in range(n - 1, -1, -1):
        p = piv[k]
        if p != k:
            t = x[k]
            x[k] = x[p]
            x[p] = t


@kernel
def lu_solve_rows(LU, piv, X, r0, k, n):
    """:func:`lu_solve` for the rows ``X[r0], ..., X[r0 + k - 1]`` (each a right-hand side,
    overwritten), four at a time: each row's operations in :func:`lu_solve`'s order (the same
    numbers), four independent chains."""
    r = r0
    while r + 4 <= r0 + k:
        x0 = X[r]
        x1 = X[r + 1]
        x2 = X[r + 2]
        x3 = X[r + 3]
        for i in range(n):
            p = piv[i]
            if p != i:
                t = x0[i]
                x0[i] = x0[p]
                x0[p] = t
                t = x1[i]
                x1[i] = x1[p]
                x1[p] = t
                t = x2[i]
                x2[i] = x2[p]
                x2[p] = t
                t = x3[i]
                x3[i] = x3[p]
                x3[p] = t
        for i in range(n):
            s0 = x0[i]
            s1 = x1[i]
            s2 = x2[i]
            s3 = x3[i]
            for j in range(i):
                lij = LU[i, j]
                s0 -= lij * x0[j]
                s1 -= lij * x1[j]
                s2 -= lij * x2[j]
                s3 -= lij * x3[j]
            x0[i] = s0
            x1[i] = s1
            x2[i] = s2
            x3[i] = s3
        for i in range(n - 1, -1, -1):
            s0 = x0[i]
            s1 = x1[i]
            s2 = x2[i]
            s3 = x3[i]
            for j in range(i + 1, n):
                lij = LU[i, j]
                s0 -= lij * x0[j]
                s1 -= lij * x1[j]
                s2 -= lij * x2[j]
                s3 -= lij * x3[j]
            d = LU[i, i]
            x0[i] = s0 / d
            x1[i] = s1 / d
            x2[i] = s2 / d
            x3[i] = s3 / d
        r += 4
    while r < r0 + k:
        lu_solve(LU, piv, X[r], n)
        r += 1
