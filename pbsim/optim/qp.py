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
"""
import math

import numpy as np

from pbsim.backends.kernel import kernel

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
    """y = A x + b."""
    for i in range(n):
        s = b[i]
        for j in range(n):
            s += A[i, j] * x[j]
        y[i] = s


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
    qp_gradient(A, x, b, g, n)
    r = qp_kkt(x, g, lo, hi, bstart, btype, mu, tmp, n)
    f = 0.0
    for i in range(n):
        f += x[i] * (0.5 * (g[i] - b[i]) + b[i])
    info[0] = it
    info[1] = r
    info[2] = f
    info[3] = L
    return r <= tol


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
    return (start[-1], np.array(lo, float), np.array(hi, float), np.array(start, np.int64), np.array(kind, np.int64),
            np.array(mus, float))


def qp_work(n: int) -> np.ndarray:
    """Scratch for :func:`qp_solve` on n variables."""
    return np.zeros((5, n))
