"""The dense convex QP kernels (pbsim.optim.qp): projections against closed forms, FISTA's solutions
against an independent KKT check (multipliers from the gradient, in numpy) and against scipy's
SLSQP on random SPD problems with box, friction-cone (sliding, sticking and apex) and simplex
blocks; the primal active-set method against a reference (DAQP through qpsolvers when installed,
else a tight FISTA run) on contact-shaped PSD / SPD capped-simplex problems, its fallbacks to
FISTA, and inside a numba-compiled caller."""

import numba
import numpy as np
import pytest
from scipy.optimize import minimize

from pbsim.optim.qp import (
    QP_CONE,
    QP_SIMPLEX,
    cone_project,
    qp_layout,
    qp_project,
    qp_solve,
    qp_solve_as,
    qp_work,
    qp_work_as,
    simplex_project,
)


def _solve(A, b, layout, x0=None, maxit=20000, tol=1e-10):
    n, lo, hi, bstart, btype, mu = layout
    x = np.zeros(n) if x0 is None else np.array(x0, float)
    info = np.zeros(4)
    ok = qp_solve(np.ascontiguousarray(A), b, n, lo, hi, bstart, btype, mu, x, maxit, tol, qp_work(n), info)
    return x, ok, info


def _cone_np(p, mu):
    n, t = p[0], p[1:]
    s = np.linalg.norm(t)
    if s <= mu * n:
        return p.copy()
    if mu * s <= -n:
        return np.zeros(3)
    pn = (n + mu * s) / (1 + mu * mu)
    return np.r_[pn, mu * pn * t / s]


def _simplex_np(w):
    """Capped simplex {w >= 0, sum w <= 1} by sorting (Held et al.)."""
    p = np.maximum(w, 0.0)
    if p.sum() <= 1.0:
        return p
    u = np.sort(w)[::-1]
    css = np.cumsum(u) - 1.0
    k = np.nonzero(u - css / np.arange(1, len(w) + 1) > 0)[0][-1]
    return np.maximum(w - css[k] / (k + 1), 0.0)


def test_projections_match_closed_forms(rng):
    for _ in range(200):
        mu = rng.uniform(0.0, 2.0)
        p = rng.normal(size=3) * rng.uniform(0.1, 10)
        x = p.copy()
        cone_project(x, 0, mu)
        assert np.allclose(x, _cone_np(p, mu), atol=1e-14)
        # a projection: x is in the cone and p - x is in the polar cone (normal to it at x)
        d = p - x
        assert np.linalg.norm(x[1:]) <= mu * x[0] + 1e-12
        assert abs(x @ d) <= 1e-10 * (1 + np.abs(p).max() ** 2)
        m = rng.integers(1, 7)
        w = rng.normal(size=m) * rng.uniform(0.1, 3)
        y = w.copy()
        simplex_project(y, 0, m)
        assert np.allclose(y, _simplex_np(w), atol=1e-13)
    # a layout mixes the blocks; box bounds clamp
    n, lo, hi, bstart, btype, mu = qp_layout([("box", [-1.0, 0.0], [1.0, 2.0]), ("cone", 0.5), ("simplex", 2)])
    x = np.array([-3.0, 3.0, -1.0, 0.0, 0.0, 0.7, 0.9])
    qp_project(x, lo, hi, bstart, btype, mu)
    assert np.allclose(x, [-1.0, 2.0, 0.0, 0.0, 0.0, 0.4, 0.6])


def _kkt_check(A, b, layout, x, tol):
    """First-order optimality with the multipliers each block's gradient implies."""
    n, lo, hi, bstart, btype, mu = layout
    g = A @ x + b
    scale = 1.0 + np.abs(g).max() + np.abs(b).max()
    for k in range(len(btype)):
        i0, i1 = bstart[k], bstart[k + 1]
        xs, gs = x[i0:i1], g[i0:i1]
        if btype[k] == QP_CONE:
            m = mu[k]
            assert np.linalg.norm(xs[1:]) <= m * xs[0] + tol  # primal: x in K
            assert m * np.linalg.norm(gs[1:]) <= gs[0] + tol * scale  # dual: g in K* = {mu |g_t| <= g_n}
            assert abs(xs @ gs) <= tol * scale * (1 + np.abs(xs).max())  # complementarity
        elif btype[k] == 2:  # simplex: g_i = -nu on the support, >= -nu off it; nu >= 0, nu (1 - sum) = 0
            assert xs.min() >= -tol and xs.sum() <= 1 + tol
            on = xs > 1e-8
            nu = -gs[on].mean() if on.any() else max(0.0, -gs.min())
            assert nu >= -tol * scale
            if on.any():
                assert np.abs(gs[on] + nu).max() <= tol * scale
            assert (gs[~on] + nu).min(initial=0.0) >= -tol * scale
            if xs.sum() < 1 - 1e-8:
                assert abs(nu) <= tol * scale
        else:
            xl, xh, g_ = xs, xs, gs
            at_lo = xl <= lo[i0:i1] + 1e-9
            at_hi = xh >= hi[i0:i1] - 1e-9
            free = ~at_lo & ~at_hi
            assert np.all(xs >= lo[i0:i1] - tol) and np.all(xs <= hi[i0:i1] + tol)
            assert np.abs(g_[free]).max(initial=0.0) <= tol * scale
            assert g_[at_lo & ~at_hi].min(initial=0.0) >= -tol * scale
            assert g_[at_hi & ~at_lo].max(initial=0.0) <= tol * scale


def _random_problem(rng, ncones=3, nbox=3, nsimplex=1, cond=1e2):
    blocks = [("cone", rng.uniform(0.2, 1.2)) for _ in range(ncones)]
    blocks += [("box", -rng.uniform(0.1, 1.0, nbox), rng.uniform(0.1, 1.0, nbox))] if nbox else []
    blocks += [("simplex", 3) for _ in range(nsimplex)]
    blocks += [("free", 1)]
    layout = qp_layout(blocks)
    n = layout[0]
    Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    A = Q @ np.diag(np.geomspace(1.0, cond, n)) @ Q.T
    A = 0.5 * (A + A.T)
    b = rng.normal(size=n) * 3.0
    for k in range(ncones):  # a mix of pulled-in (n > 0) and pushed-out normals, strong tangential pulls
        i = 3 * k
        b[i] = rng.choice([-1.0, 1.0]) * rng.uniform(0.5, 5.0) * cond
        b[i + 1 : i + 3] = rng.normal(size=2) * cond
    return A, b, layout


def _cone_states(x, layout):
    """Per cone block: 'apex', 'sliding' (on the boundary, n > 0) or 'inside'."""
    n, lo, hi, bstart, btype, mu = layout
    out = []
    for k in np.flatnonzero(btype == QP_CONE):
        xn, xt = x[bstart[k]], x[bstart[k] + 1 : bstart[k] + 3]
        s = np.linalg.norm(xt)
        scale = 1 + abs(xn)
        if xn <= 1e-9 * scale and s <= 1e-9 * scale:
            out.append("apex")
        elif abs(s - mu[k] * xn) <= 1e-7 * scale:
            out.append("sliding")
        else:
            out.append("inside")
    return out


def _slsqp(A, b, layout, x0):
    n, lo, hi, bstart, btype, mu = layout
    cons = []
    for k in range(len(btype)):
        i0, i1 = int(bstart[k]), int(bstart[k + 1])
        if btype[k] == QP_CONE:
            m = mu[k]
            cons.append(
                dict(type="ineq", fun=lambda x, i=i0, m=m: m * x[i] - np.sqrt(x[i + 1] ** 2 + x[i + 2] ** 2 + 1e-300))
            )
            cons.append(dict(type="ineq", fun=lambda x, i=i0: x[i]))
        elif btype[k] == 2:
            cons.append(dict(type="ineq", fun=lambda x, i0=i0, i1=i1: np.r_[x[i0:i1], 1.0 - x[i0:i1].sum()]))
    bounds = [(None if np.isinf(a) else a, None if np.isinf(c) else c) for a, c in zip(lo, hi)]
    r = minimize(
        lambda x: 0.5 * x @ A @ x + b @ x,
        x0,
        jac=lambda x: A @ x + b,
        bounds=bounds,
        constraints=cons,
        method="SLSQP",
        options=dict(maxiter=2000, ftol=1e-14),
    )
    return r.x


def test_qp_random_spd_kkt_and_scipy(rng):
    """Random SPD problems (condition 1e2) with cones, boxes, a simplex and a free variable: the
    solution passes the KKT check, is no worse than SLSQP's (projected onto the feasible set, so
    that its objective is a feasible value), and agrees with it (A SPD: the solution is unique);
    the cones end up in all three states (sticking inside, sliding on the boundary, at the apex)."""
    seen = set()
    iters = []
    for _ in range(12):
        A, b, layout = _random_problem(rng)
        x, ok, info = _solve(A, b, layout)
        assert ok, info
        assert info[1] <= 1e-10
        iters.append(info[0])
        _kkt_check(A, b, layout, x, 1e-8)
        f = 0.5 * x @ A @ x + b @ x
        assert abs(info[2] - f) <= 1e-9 * (1 + abs(f))
        xs = _slsqp(A, b, layout, np.zeros_like(x))
        xp = xs.copy()
        qp_project(xp, *layout[1:])
        fs = 0.5 * xp @ A @ xp + b @ xp
        assert f <= fs + 1e-9 * (1 + abs(f)), (f, fs)
        assert np.abs(x - xs).max() <= 1e-4 * (1 + np.abs(x).max()), (x, xs)
        seen.update(_cone_states(x, layout))
    assert seen == {"apex", "sliding", "inside"}, seen
    assert max(iters) < 20000


def test_qp_identity_hessian_is_a_projection(rng):
    """A = I: the solution is the projection of -b (each block's closed form)."""
    layout = qp_layout([("cone", 0.7), ("cone", 0.0), ("simplex", 4), ("box", -0.5, 0.5, 2)])
    n = layout[0]
    for _ in range(20):
        b = rng.normal(size=n) * 2
        x, ok, info = _solve(np.eye(n), b, layout)
        assert ok
        ref = np.r_[_cone_np(-b[:3], 0.7), _cone_np(-b[3:6], 0.0), _simplex_np(-b[6:10]), np.clip(-b[10:], -0.5, 0.5)]
        assert np.allclose(x, ref, atol=1e-10)
        assert info[0] <= 2  # one projected step of length 1 / L = 1 is exact


def test_qp_ill_conditioned_and_semidefinite(rng):
    """Condition 1e4, and a singular A whose minimiser is pinned by the constraints: still within
    the iteration budget and KKT-optimal; a warm start at the solution takes no iteration."""
    A, b, layout = _random_problem(rng, ncones=2, nbox=2, nsimplex=0, cond=1e4)
    tol = 1e-12 * np.abs(b).max()  # the residual is absolute: relative to b's scale (~1e5 here)
    x, ok, info = _solve(A, b, layout, maxit=50000, tol=tol)
    assert ok, info
    _kkt_check(A, b, layout, x, 1e-7)
    x2, ok2, info2 = _solve(A, b, layout, x0=x, tol=tol)
    assert ok2 and info2[0] == 0
    # PSD: a rank-deficient A with constraints that bound every direction it does not see
    layout = qp_layout([("cone", 0.5), ("box", -1.0, 1.0, 3)])
    n = layout[0]
    U = rng.normal(size=(n, 3))
    A = U @ U.T
    b = rng.normal(size=n)
    b[0] = 1.0  # pushes the normal down: the cone's apex bounds the null directions of A
    x, ok, info = _solve(A, b, layout, maxit=50000, tol=1e-9)
    assert ok, info
    _kkt_check(A, b, layout, x, 1e-6)


@pytest.mark.parametrize("maxit", [0, 3])
def test_qp_reports_unconverged(rng, maxit):
    A, b, layout = _random_problem(rng, cond=1e3)
    x, ok, info = _solve(A, b, layout, maxit=maxit)
    assert not ok and info[0] == maxit and info[1] > 1e-10
    n, lo, hi, bstart, btype, mu = layout
    y = x.copy()
    qp_project(y, lo, hi, bstart, btype, mu)
    assert np.array_equal(x, y)  # the iterate stays feasible


# -- the primal active-set method (qp_solve_as) -------------------------------------------------


def _capped_np(w, c):
    """Projection onto {w >= 0, sum w <= c} by sorting."""
    p = np.maximum(w, 0.0)
    if p.sum() <= c:
        return p
    u = np.sort(w)[::-1]
    css = np.cumsum(u) - c
    k = np.nonzero(u - css / np.arange(1, len(w) + 1) > 0)[0][-1]
    return np.maximum(w - css[k] / (k + 1), 0.0)


def _natural_residual(A, b, layout, x):
    """|x - P(x - (A x + b))|_inf in numpy (simplex blocks by sorting, boxes by clipping)."""
    n, lo, hi, bstart, btype, mu = layout
    y = x - (A @ x + b)
    for k in range(len(btype)):
        i0, i1 = bstart[k], bstart[k + 1]
        if btype[k] == QP_SIMPLEX:
            y[i0:i1] = _capped_np(y[i0:i1], mu[k] if mu[k] > 0 else 1.0)
        else:
            y[i0:i1] = np.clip(y[i0:i1], lo[i0:i1], hi[i0:i1])
    return np.abs(x - y).max()


def _contact_qp(rng, ncontacts=12, V=4, rank=8, ratio=1e4, boxes=True):
    """A QP shaped like ne_mdp's / nmdp's: capped simplex blocks of V weights (caps in (0.01, 3]),
    ``A = X^T H X`` of rank ``rank`` with curvature ratio ``ratio`` on its range, scaled to unit
    largest diagonal, plus (``boxes``) a [0, 0] box block (an inert candidate) and a box."""
    blocks = [("simplex", V, float(c)) for c in rng.uniform(0.01, 3.0, ncontacts)]
    if boxes:
        blocks += [("box", 0.0, 0.0, V), ("box", -0.3, 0.2, 2)]
    layout = qp_layout(blocks)
    n = layout[0]
    X = rng.normal(size=(rank, n))
    H = np.diag(np.geomspace(1.0, ratio, rank))
    A = X.T @ H @ X
    A /= np.abs(np.diag(A)).max()
    b = A @ rng.normal(size=n) * rng.uniform(0.5, 3.0) + rng.normal(size=n) * 1e-2
    return A, b, layout


def _reference(A, b, layout):
    """A reference solution: DAQP (an exact dual active-set method) through qpsolvers when it is
    installed, else FISTA run to 1e-13."""
    n, lo, hi, bstart, btype, mu = layout
    try:
        import qpsolvers

        if "daqp" not in qpsolvers.available_solvers:
            raise ImportError
    except ImportError:
        x, ok, info = _solve(A, b, layout, maxit=2_000_000, tol=1e-13)
        return x
    lb, ub, rows, h = lo.copy(), hi.copy(), [], []
    for k in range(len(btype)):
        i0, i1 = bstart[k], bstart[k + 1]
        if btype[k] == QP_SIMPLEX:
            lb[i0:i1], ub[i0:i1] = 0.0, np.inf
            r = np.zeros(n)
            r[i0:i1] = 1.0
            rows.append(r)
            h.append(mu[k] if mu[k] > 0 else 1.0)
    x = qpsolvers.solve_qp(0.5 * (A + A.T), b, np.array(rows), np.array(h), lb=lb, ub=ub, solver="daqp")
    assert x is not None
    return x


def _solve_as(A, b, layout, x0=None, maxit=10000, tol=1e-12, kmax=None):
    n, lo, hi, bstart, btype, mu = layout
    x = np.zeros(n) if x0 is None else np.array(x0, float)
    info = np.zeros(4)
    ok = qp_solve_as(np.ascontiguousarray(A), b, n, lo, hi, bstart, btype, mu, x, maxit, tol, qp_work_as(n, kmax), info)
    return x, ok, info


@pytest.mark.parametrize("kind", ["psd", "spd", "singular_free", "cap1"])
def test_active_set_equals_reference(rng, kind):
    """Random contact-shaped QPs -- PSD of rank 8 < n (ne_mdp's X^T H X), SPD (nmdp's proximal term
    added), rank-deficient with the free set larger than the rank at the start (a warm start
    inside every simplex), and caps of 1 (paper 002, Eq. 5) -- solved to a natural residual
    <= 1e-12 (checked in numpy), the objective and the gradient A x + b (unique for a convex QP,
    even where x is not) equal to the reference's, in a few dozen iterations."""
    for _ in range(8):
        A, b, layout = _contact_qp(rng)
        n, lo, hi, bstart, btype, mu = layout
        x0 = None
        if kind == "spd":
            A = A + 1e-3 * np.eye(n)
        elif kind == "singular_free":
            x0 = np.full(n, 0.01)
        elif kind == "cap1":
            mu[btype == QP_SIMPLEX] = 1.0
        x, ok, info = _solve_as(A, b, layout, x0=x0)
        assert ok, info
        assert info[1] <= 1e-12 and _natural_residual(A, b, layout, x) <= 1e-11
        xr = _reference(A, b, layout)
        xp = xr.copy()
        qp_project(xp, lo, hi, bstart, btype, mu)
        f, fr = 0.5 * x @ A @ x + b @ x, 0.5 * xp @ A @ xp + b @ xp
        assert f <= fr + 1e-9 * (1 + abs(fr)), (f, fr)
        assert abs(info[2] - f) <= 1e-12 * (1 + abs(f))
        assert np.abs(A @ x - A @ xr).max() <= 1e-6, np.abs(A @ x - A @ xr).max()
        assert info[0] < 200, info


def test_active_set_needs_far_fewer_iterations_than_fista(rng):
    """On ill-conditioned low-rank contact QPs (curvature ratio 1e6, rank 38 < 128 weights, as the
    Robosimian's) both reach 1e-9; the active-set method in < 1/4 of FISTA's iterations in all
    (on the Robosimian's own QPs the ratio is 10-80: scripts/bench/bench_qp.py), at the same objective."""
    its_a = its_f = 0
    for _ in range(3):
        A, b, layout = _contact_qp(rng, ncontacts=32, rank=38, ratio=1e6, boxes=False)
        xf, okf, inf_f = _solve(A, b, layout, maxit=200000, tol=1e-9)
        xa, oka, inf_a = _solve_as(A, b, layout, tol=1e-9)
        assert okf and oka
        assert inf_a[2] <= inf_f[2] + 1e-9
        its_a += inf_a[0]
        its_f += inf_f[0]
    assert its_a * 4 < its_f, (its_a, its_f)


def test_active_set_warm_start_identity_and_unconverged(rng):
    """A warm start at the solution takes one step; A = I is a projection; maxit = 0 returns
    False with the projected guess."""
    A, b, layout = _contact_qp(rng)
    x, ok, info = _solve_as(A, b, layout)
    x2, ok2, info2 = _solve_as(A, b, layout, x0=x)
    assert ok2 and info2[0] <= 2 and np.abs(x2 - x).max() <= 1e-12
    layout = qp_layout([("simplex", 4, 0.5), ("simplex", 3), ("box", -0.5, 0.5, 2)])
    n = layout[0]
    for _ in range(10):
        b = rng.normal(size=n) * 2
        x, ok, info = _solve_as(np.eye(n), b, layout)
        assert ok
        ref = np.r_[_capped_np(-b[:4], 0.5), _capped_np(-b[4:7], 1.0), np.clip(-b[7:], -0.5, 0.5)]
        assert np.allclose(x, ref, atol=1e-12)
    x, ok, info = _solve_as(np.eye(n), b, layout, x0=np.full(n, 5.0), maxit=0)
    assert not ok and info[0] == 0
    y = np.full(n, 5.0)
    qp_project(y, *layout[1:])
    assert np.abs(x - y).max() <= 1e-15  # (a tight block's sum is put exactly on its cap)


def test_active_set_falls_back_to_fista(rng):
    """Cone blocks, and more free dofs than the factor has rows (kmax), are finished by FISTA
    (info[3] = -1 for the latter): the same solution as qp_solve."""
    A, b, layout = _random_problem(rng, ncones=2, nbox=2, nsimplex=1)
    x, ok, info = _solve_as(A, b, layout, tol=1e-10, maxit=20000)
    xf, okf, _ = _solve(A, b, layout, tol=1e-10)
    assert ok and okf and np.abs(x - xf).max() <= 1e-7
    A, b, layout = _contact_qp(rng, rank=20, ratio=10.0)
    A = A + 1e-2 * np.eye(layout[0])
    x, ok, info = _solve_as(A, b, layout, tol=1e-10, maxit=100000, kmax=2)
    xr, okr, _ = _solve_as(A, b, layout, tol=1e-12)
    assert ok and okr and info[3] == -1.0 and np.abs(x - xr).max() <= 1e-6


@numba.njit(cache=False)
def _batch_as(A, b, n, lo, hi, bstart, btype, mu, X, work, info):
    ok = True
    for k in range(X.shape[0]):
        ok &= qp_solve_as(A[k], b[k], n, lo, hi, bstart, btype, mu, X[k], 1000, 1e-12, work, info[k])
    return ok


def test_active_set_inside_a_numba_caller(rng):
    """The kernel called from an njit function (as the step kernels call it) over a batch of
    problems sharing one scratch gives the Python-level call's results bit for bit."""
    probs = [_contact_qp(rng) for _ in range(4)]
    layout = probs[0][2]
    n, lo, hi, bstart, btype, mu = layout
    A = np.stack([p[0] for p in probs])
    b = np.stack([p[1] for p in probs])
    X = np.zeros((4, n))
    info = np.zeros((4, 4))
    assert _batch_as(A, b, n, lo, hi, bstart, btype, mu, X, qp_work_as(n), info)
    for k in range(4):
        x, ok, inf = _solve_as(A[k], b[k], layout, maxit=1000)
        assert np.array_equal(x, X[k]) and np.array_equal(inf, info[k])
