"""The QP of :mod:`pbsim.optim.qp` when its Hessian is a scaled identity plus a low-rank term, by
semismooth Newton on its dual (no n x n matrix is formed or factored)::

    min 1/2 x^T (c I + R^T R) x + b^T x   s.t. x in C (the simplex and box blocks of qp.py),
    c > 0, R (r x n) with r << n (NMDP's QP, paper 002 Eq. 8/10: r = nv, n = the contact weights)

With ``y = R x`` and its multiplier ``lambda`` (r), the inner minimum over C is a projection,
``x(lambda) = P_C(-(b + R^T lambda) / c)``, and the dual is the smooth convex problem in r
variables::

    (1) min_lambda phi(lambda) = 1/2 |lambda|^2 - 1/2 c |x|^2 - b^T x - lambda^T R x,   x = x(lambda)
    (2) grad phi = lambda - R x(lambda)         (zero exactly at the solution: lambda* = R x*)
    (3) generalized Hessian  I + R J R^T / c    (J: the Jacobian of P_C at the projected point)
    (4) psi(t) = phi(lambda + t d),  psi'(t) = d . (lambda + t d - R x(lambda + t d))   (monotone in t)

Per block, J is the identity on the variables strictly inside their bounds, and on a capped simplex
whose sum is at its cap it is ``I_S - 1 1^T / |S|`` on the support S (a projector, so (3) >= I).
Newton's step d from (3), one Cholesky of an r x r matrix, and its length from (4): the full step
where ``psi'(1) <= 0``, else the root of the monotone ``psi'`` by the Illinois secant (exact on a
linear piece), taken from the left (``LS_SIGMA psi'(0) <= psi'(t) <= 0``, so phi decreased by
convexity): globally convergent (phi is convex with a Lipschitz gradient and (3) is uniformly
positive definite) and locally superlinear.  **[ours]** The line search reads phi's slope, not its
value: phi's terms are O(1/c) and cancel, and with c small Armijo backtracking on (1) compared
round-off: one quad18 QP (376 weights, c = 0.02) backtracked 924 times in 30 Newton steps (6.8 ms;
docs/benchmarks/nmdp.md).  The primal ``x(lambda)`` is feasible at every iterate; the solve stops when its
natural residual ``|x - P_C(x - (A x + b))|_inf`` (A x = c x + R^T R x, O(n r)) is at most ``tol``,
the test :func:`pbsim.optim.qp.qp_solve_as` stops on, so the two return the same minimiser to
``tol``.  Per iteration O(n r) for the products and O(|S| r^2) for (3), against the active-set
method's reduced Hessian of up to n x n.  No allocation, scalar loops (a CUDA twin compiles).
"""

import math

from pbsim.jit import kernel
from pbsim.optim.linalg import cholesky_factor, cholesky_solve
from pbsim.optim.qp import QP_SIMPLEX, qp_kkt, qp_project

DUAL_ROWS = 10  # vector rows of the work array before the two r x r matrices
LS_MAX = 30  # trial points of one line search (secant steps on psi', Eq. 4)
LS_SIGMA = 0.1  # a step is taken where -psi'(t) is at most this fraction of -psi'(0)
DUAL_POLISH = 4  # primal Newton steps on the face after the dual's last step, at most


@kernel
def dual_primal(Rt, c, b, lam, n, r, lo, hi, bstart, btype, mu, x, y, tight):
    """``x = x(lambda)`` (the projection above), ``y = R x`` and per simplex block whether the
    projection put its sum on the cap (``tight[k]`` 1.0: decided before projecting, from the sum of
    the positive parts, not from the projected sum's round-off).  phi itself (Eq. 1) is never
    formed: the line search reads its slope (Eq. 4)."""
    for i in range(n):
        s = b[i]
        for k in range(r):
            s += Rt[i, k] * lam[k]
        x[i] = -s / c
    for blk in range(btype.shape[0]):
        t = 0.0
        if btype[blk] == QP_SIMPLEX:
            cap = mu[blk] if mu[blk] > 0.0 else 1.0
            sp = 0.0
            for i in range(bstart[blk], bstart[blk + 1]):
                if x[i] > 0.0:
                    sp += x[i]
            if sp > cap:
                t = 1.0
        tight[blk] = t
    qp_project(x, lo, hi, bstart, btype, mu)
    snap_tight(x, tight, bstart, btype, mu)
    for k in range(r):
        y[k] = 0.0
    for i in range(n):
        xi = x[i]
        if xi != 0.0:
            for k in range(r):
                y[k] += Rt[i, k] * xi


@kernel
def dual_ray(Rt, c, b, lam, d, t, n, r, lo, hi, bstart, btype, mu, lt, xt, yt, tbt):
    """The trial ``lt = lambda + t d``: ``xt = x(lt)``, ``yt = R xt``, its blocks' state ``tbt``;
    returns ``psi'(t) = d . (lt - yt)`` (Eq. 4)."""
    for k in range(r):
        lt[k] = lam[k] + t * d[k]
    dual_primal(Rt, c, b, lt, n, r, lo, hi, bstart, btype, mu, xt, yt, tbt)
    g = 0.0
    for k in range(r):
        g += d[k] * (lt[k] - yt[k])
    return g


@kernel
def on_face(x, i, simplex, lo, hi):
    """Whether variable i is free at ``x``: above 0 in a simplex block, strictly inside its box."""
    return x[i] > 0.0 if simplex else lo[i] < x[i] < hi[i]


@kernel
def snap_tight(x, tight, bstart, btype, mu):
    """Each tight block's sum exactly on its cap (its largest weight takes the round-off, as the
    active-set method puts it): a vertex is then exact, whatever the size of the projected point."""
    for blk in range(btype.shape[0]):
        if tight[blk] != 0.0:
            cap = mu[blk] if mu[blk] > 0.0 else 1.0
            top = -1
            sx = 0.0
            for i in range(bstart[blk], bstart[blk + 1]):
                sx += x[i]
                if x[i] > 0.0 and (top < 0 or x[i] > x[top]):
                    top = i
            if top >= 0:
                x[top] += cap - sx


@kernel
def face_project(x, tight, v, lo, hi, bstart, btype):
    """``v <- J v``: the Jacobian of the projection at ``x`` (module docstring) applied in place
    (0 off the face; a tight block's free part made sum-free)."""
    for blk in range(btype.shape[0]):
        i0 = bstart[blk]
        i1 = bstart[blk + 1]
        simplex = btype[blk] == QP_SIMPLEX
        cnt = 0
        tot = 0.0
        for i in range(i0, i1):
            if on_face(x, i, simplex, lo, hi):
                cnt += 1
                tot += v[i]
            else:
                v[i] = 0.0
        if simplex and cnt > 0 and tight[blk] != 0.0:
            mean = tot / cnt
            for i in range(i0, i1):
                if x[i] > 0.0:
                    v[i] -= mean


@kernel
def dual_polish(Rt, c, g, x, tight, n, r, lo, hi, bstart, btype, mu, L, q, dx):
    """One primal Newton step on the face of ``x`` (its free weights, its tight sums) from the
    gradient ``g = A x + b``: ``dx = -(1/c) J (g - R^T q)``, ``q = (c I + R J R^T)^-1 R J g``
    (Woodbury; ``c I + R J R^T = c H`` with H the dual's Hessian (Eq. 3), ``L`` its factor).  Exact
    on the face, and computed from the gradient, so free of the 1/c cancellation that floors
    ``x(lambda)``'s accuracy when c is small.  Shortened where it would leave the face (a weight
    at 0, a box bound, a free block's sum at its cap: that constraint joins the face).  Returns
    False when J g is already 0 (nothing to polish)."""
    for i in range(n):
        dx[i] = g[i]
    face_project(x, tight, dx, lo, hi, bstart, btype)
    nz = False
    for k in range(r):
        q[k] = 0.0
    for i in range(n):
        if dx[i] != 0.0:
            nz = True
            for k in range(r):
                q[k] += Rt[i, k] * dx[i]
    if not nz:
        return False
    cholesky_solve(L, q, q, r)
    ic = 1.0 / c
    for i in range(n):
        s = g[i]
        for k in range(r):
            s -= Rt[i, k] * q[k] * ic
        dx[i] = -s * ic  # the step (before J)
    face_project(x, tight, dx, lo, hi, bstart, btype)
    alpha = 1.0  # the ratio test
    hit = -1
    hitblk = -1
    for blk in range(btype.shape[0]):
        simplex = btype[blk] == QP_SIMPLEX
        ds = 0.0
        xs = 0.0
        for i in range(bstart[blk], bstart[blk + 1]):
            st = dx[i]
            ds += st
            xs += x[i]
            if st < 0.0:
                room = x[i] if simplex else x[i] - lo[i]
                if room + alpha * st < 0.0:
                    alpha = max(room, 0.0) / -st
                    hit = i
                    hitblk = -1
            elif st > 0.0 and not simplex and x[i] + alpha * st > hi[i]:
                alpha = max(hi[i] - x[i], 0.0) / st
                hit = i
                hitblk = -1
        if simplex and tight[blk] == 0.0 and ds > 0.0:
            cap = mu[blk] if mu[blk] > 0.0 else 1.0
            if xs + alpha * ds > cap:
                alpha = max(cap - xs, 0.0) / ds
                hit = -1
                hitblk = blk
    for i in range(n):
        x[i] += alpha * dx[i]
    if hit >= 0:  # the blocking weight leaves the face, exactly on its bound
        for blk in range(btype.shape[0]):
            if bstart[blk] <= hit < bstart[blk + 1]:
                if btype[blk] == QP_SIMPLEX:
                    x[hit] = 0.0
                else:
                    x[hit] = lo[hit] if dx[hit] < 0.0 else hi[hit]
    if hitblk >= 0:  # a block's sum reached its cap: tight from now on
        tight[hitblk] = 1.0
    snap_tight(x, tight, bstart, btype, mu)
    return True


@kernel
def dual_residual(Rt, c, b, x, y, n, r, lo, hi, bstart, btype, mu, g, tmp):
    """The primal natural residual at ``x`` with ``y = R x``: ``g = c x + R^T y + b``."""
    for i in range(n):
        s = c * x[i] + b[i]
        for k in range(r):
            s += Rt[i, k] * y[k]
        g[i] = s
    return qp_kkt(x, g, lo, hi, bstart, btype, mu, tmp, n)


@kernel
def dual_hessian(Rt, c, x, tight, n, r, lo, hi, bstart, btype, H, s):
    """The generalized Hessian (Eq. 3) at the projected point ``x`` (``tight``: its blocks' state
    from :func:`dual_primal`) into ``H`` (r x r)."""
    for a in range(r):
        for k in range(r):
            H[a, k] = 0.0
        H[a, a] = 1.0
    ic = 1.0 / c
    for blk in range(btype.shape[0]):
        i0 = bstart[blk]
        i1 = bstart[blk + 1]
        simplex = btype[blk] == QP_SIMPLEX
        cnt = 0
        for k in range(r):
            s[k] = 0.0
        p = -1  # a free variable waiting for a second one: rank-2 updates, one pass over H for two rows
        for i in range(i0, i1 + 1):
            if i < i1:
                if not on_face(x, i, simplex, lo, hi):
                    continue
                cnt += 1
                if p < 0:
                    p = i
                    continue
            elif p < 0:
                break
            rp = Rt[p]
            if i < i1:
                ri = Rt[i]
                for a in range(r):
                    s[a] += rp[a] + ri[a]
                    pa = rp[a] * ic
                    qa = ri[a] * ic
                    Ha = H[a]
                    for k in range(a + 1):
                        Ha[k] += pa * rp[k] + qa * ri[k]
            else:  # the block's last free variable alone
                for a in range(r):
                    s[a] += rp[a]
                    pa = rp[a] * ic
                    Ha = H[a]
                    for k in range(a + 1):
                        Ha[k] += pa * rp[k]
            p = -1
        if simplex and cnt > 0 and tight[blk] != 0.0:  # the sum at its cap: J = I_S - 1 1^T / |S|
            w = ic / cnt
            for a in range(r):
                for k in range(a + 1):
                    H[a, k] -= w * s[a] * s[k]
    for a in range(r):
        for k in range(a):
            H[k, a] = H[a, k]


@kernel
def qp_solve_dual(Rt, c, b, n, r, lo, hi, bstart, btype, mu, x, maxit, tol, work, info):
    """Solve the QP (module docstring; ``Rt`` (n, r): the columns of R as rows) from the guess in
    ``x`` (``lambda_0 = R P_C(x)``); the minimiser is left in ``x``.  ``work``: at least
    ``DUAL_ROWS + 2 r`` rows of at least ``max(n, r)`` columns (:func:`pbsim.optim.qp.qp_work_as`
    with ``kmax >= 2 r`` fits).  ``info = [iterations, residual, objective, line-search trial points past the first]``.
    Returns whether the residual reached ``tol`` within ``maxit`` Newton steps (False also when
    the Hessian's factor fails, which (3) >= I rules out but round-off)."""
    lam = work[0]
    d = work[1]
    y = work[2]
    g = work[3]
    tmp = work[4]
    lt = work[5]
    xt = work[6]
    yt = work[7]
    tb = work[8]  # per block: tight at x
    tbt = work[9]  # ... at the trial
    H = work[DUAL_ROWS : DUAL_ROWS + r]
    L = work[DUAL_ROWS + r : DUAL_ROWS + 2 * r]
    qp_project(x, lo, hi, bstart, btype, mu)
    for k in range(r):
        s = 0.0
        for i in range(n):
            s += Rt[i, k] * x[i]
        lam[k] = s
    dual_primal(Rt, c, b, lam, n, r, lo, hi, bstart, btype, mu, x, y, tb)
    res = dual_residual(Rt, c, b, x, y, n, r, lo, hi, bstart, btype, mu, g, tmp)
    it = 0
    trials = 0
    ok = True
    same = False
    while res > tol and it < maxit and not same:
        it += 1
        dual_hessian(Rt, c, x, tb, n, r, lo, hi, bstart, btype, H, tmp)
        if not cholesky_factor(H, L, r):
            ok = False
            break
        for k in range(r):
            d[k] = y[k] - lam[k]  # -grad phi (Eq. 2)
        cholesky_solve(L, d, d, r)  # the Newton step: grad . d = -F^T H^-1 F < 0
        g0 = 0.0  # psi'(0) = d . grad phi < 0
        for k in range(r):
            g0 += (lam[k] - y[k]) * d[k]
        t = 1.0
        gt = dual_ray(Rt, c, b, lam, d, t, n, r, lo, hi, bstart, btype, mu, lt, xt, yt, tbt)
        if gt > 0.0:  # psi's minimum along the ray lies inside (0, 1): find psi' = 0 (Eq. 4)
            tl, gl, tr, gr = 0.0, g0, 1.0, gt
            side = 0
            for _ in range(LS_MAX):
                t = tl + (tr - tl) * gl / (gl - gr)  # the secant's root (exact on a linear piece of psi')
                gt = dual_ray(Rt, c, b, lam, d, t, n, r, lo, hi, bstart, btype, mu, lt, xt, yt, tbt)
                trials += 1
                if gt <= 0.0:
                    tl, gl = t, gt
                    if gt >= LS_SIGMA * g0:  # psi' near zero from the left: psi decreased (convexity)
                        break
                    if side == -1:  # Illinois: the other end stalled twice, halve its weight
                        gr *= 0.5
                    side = -1
                else:
                    tr, gr = t, gt
                    if side == 1:
                        gl *= 0.5
                    side = 1
            if gt > 0.0:  # ended right of the minimum: back to the last point left of it
                if tl == 0.0:
                    ok = False
                    break
                t = tl
                dual_ray(Rt, c, b, lam, d, t, n, r, lo, hi, bstart, btype, mu, lt, xt, yt, tbt)
        same = t == 1.0  # a full step that kept the face: exact there, only round-off is left (stop)
        for k in range(r):
            lam[k] = lt[k]
            y[k] = yt[k]
        for blk in range(btype.shape[0]):
            simplex = btype[blk] == QP_SIMPLEX
            for i in range(bstart[blk], bstart[blk + 1]):
                if on_face(xt, i, simplex, lo, hi) != on_face(x, i, simplex, lo, hi):
                    same = False
                x[i] = xt[i]
            if tb[blk] != tbt[blk]:
                same = False
            tb[blk] = tbt[blk]
        res = dual_residual(Rt, c, b, x, y, n, r, lo, hi, bstart, btype, mu, g, tmp)
        if not math.isfinite(res):
            ok = False
            break
    for _ in range(DUAL_POLISH):  # the face found, the residual at the dual's round-off floor
        if not ok or res <= tol:
            break
        dual_hessian(Rt, c, x, tb, n, r, lo, hi, bstart, btype, H, tmp)
        if not cholesky_factor(H, L, r):
            break
        if not dual_polish(Rt, c, g, x, tb, n, r, lo, hi, bstart, btype, mu, L, d, xt):
            break
        for k in range(r):
            y[k] = 0.0
        for i in range(n):
            if x[i] != 0.0:
                for k in range(r):
                    y[k] += Rt[i, k] * x[i]
        res = dual_residual(Rt, c, b, x, y, n, r, lo, hi, bstart, btype, mu, g, tmp)
        it += 1
    f = 0.0
    for i in range(n):
        f += x[i] * (0.5 * (g[i] - b[i]) + b[i])
    info[0] = it
    info[1] = res
    info[2] = f
    info[3] = trials
    return ok and res <= tol
