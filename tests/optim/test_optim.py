"""Per-trajectory optimiser kernels: dense solves against numpy, LM damping rule, LBFGS on a quadratic,
the generic LM loop on a test problem and as the one loop PBAD runs."""

import math
import re

import numpy as np

from pbsim.jit import kernel, python_source, specialize
from pbsim.optim import lm
from pbsim.optim.lbfgs import lbfgs_first_loop, lbfgs_push, lbfgs_second_loop
from pbsim.optim.linalg import (
    cholesky_factor,
    cholesky_solve,
    lu_factor,
    lu_solve,
    lu_solve_inplace,
    lu_solve_transpose,
)
from pbsim.optim.lm import lm_accept, lm_reject, lm_solve


def test_cholesky_and_lu_match_numpy(rng):
    n = 7
    A = rng.normal(size=(n, n))
    S = A @ A.T + n * np.eye(n)
    b = rng.normal(size=n)
    L = np.zeros((n, n))
    assert cholesky_factor(S, L, n)
    x = np.zeros(n)
    cholesky_solve(L, b, x, n)
    assert np.allclose(x, np.linalg.solve(S, b), rtol=1e-12)
    assert not cholesky_factor(-S, L, n)
    x = b.copy()
    assert lu_solve_inplace(A.copy(), x, n)
    assert np.allclose(x, np.linalg.solve(A, b), rtol=1e-10)
    assert not lu_solve_inplace(np.zeros((n, n)), b.copy(), n)


def test_lu_solves_with_a_and_its_transpose(rng):
    """lu_factor's factor (pivoted: rows swapped) solves A x = b and, read transposed, A^T x = b."""
    for n in (1, 2, 7, 18):
        A = rng.normal(size=(n, n))
        A[[0, n - 1]] = A[[n - 1, 0]] * 1e-3  # a small leading entry: the factor pivots
        LU, piv = np.zeros((n, n)), np.zeros(n, np.int64)
        assert lu_factor(A, LU, piv, n)
        b = rng.normal(size=n)
        x, xt = b.copy(), b.copy()
        lu_solve(LU, piv, x, n)
        lu_solve_transpose(LU, piv, xt, n)
        assert np.allclose(x, np.linalg.solve(A, b), rtol=1e-10, atol=1e-12)
        assert np.allclose(xt, np.linalg.solve(A.T, b), rtol=1e-10, atol=1e-12)
        assert n == 1 or (piv != np.arange(n)).any()


def test_lm_solve_damped_and_lambda_rule(rng):
    n = 5
    A = rng.normal(size=(n, n))
    H = A @ A.T + np.eye(n)
    g = rng.normal(size=n)
    dx = np.zeros(n)
    assert lm_solve(H, g, 0.5, np.zeros((n, n)), np.zeros((n, n)), dx, n)
    D = H + 0.5 * np.diag(np.abs(np.diag(H)) + 1e-9)
    assert np.allclose(dx, -np.linalg.solve(D, g), rtol=1e-12)
    assert lm_accept(1.0) < 1.0 < lm_reject(1.0)


def test_lbfgs_recovers_newton_step_on_quadratic(rng):
    """With n exact curvature pairs of a quadratic, the two-loop direction is the Newton step."""
    n = 4
    A = rng.normal(size=(n, n))
    H = A @ A.T + np.eye(n)
    m = n
    S, Y, rho, alpha = np.zeros((m, n)), np.zeros((m, n)), np.zeros(m), np.zeros(m)
    head = 0
    for _k in range(n):
        s = rng.normal(size=n)
        head = lbfgs_push(S, Y, rho, s, H @ s, head, n)

    def direction(g, H0):  # two-loop recursion with the initial inverse Hessian H0 (a matrix here)
        d = np.zeros(n)
        lbfgs_first_loop(g, S, Y, rho, alpha, n, head, d, n)
        d[:] = H0 @ d
        lbfgs_second_loop(S, Y, rho, alpha, n, head, d, n)
        return d

    g = rng.normal(size=n)
    d = direction(g, np.eye(n))
    # BFGS with n conjugate-free random pairs is not exact in general; check descent and secant
    assert g @ d < 0
    d2 = direction(Y[head - 1], np.eye(n))
    assert np.allclose(-d2, S[head - 1], rtol=1e-10)  # secant condition H_k y = s for the newest pair
    # with the exact inverse Hessian as H0, every update keeps it: the direction is the Newton step
    assert np.allclose(direction(g, np.linalg.inv(H)), -np.linalg.solve(H, g), rtol=1e-9)


# ---------------------------------------------------------------------------------------------
# the generic LM loop (pbsim.optim.lm) on a problem of its own, and the one loop PBAD runs


@kernel
def _toy_objective(x, A, c, g, H, n, want):
    """f = 1/2 x^T A x + c^T x + sum exp(x_i), its gradient and Hessian (with ``want``)."""
    e = 0.0
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += A[i, j] * x[j]
            if want:
                H[i, j] = A[i, j]
        ex = math.exp(x[i])
        e += 0.5 * x[i] * s + c[i] * x[i] + ex
        if want:
            g[i] = s + c[i] + ex
            H[i, i] += ex
    return e


@kernel
def _toy_eval(P, b):
    X, Xt, A, c, G, Hs, DX = P
    n = X.shape[1]
    E = _toy_objective(X[b], A, c, G[b], Hs[b], n, True)
    gn = 0.0
    for i in range(n):
        gn = max(gn, abs(G[b, i]))
    return E, gn


@kernel
def _toy_try(P, b, tries):
    X, Xt, A, c, G, Hs, DX = P
    for i in range(X.shape[1]):
        Xt[b, i] = X[b, i] + DX[b, i]
    return _toy_objective(Xt[b], A, c, G[b], Hs[b], X.shape[1], False)


@kernel
def _toy_take(P, b):
    X, Xt = P[0], P[1]
    for i in range(X.shape[1]):
        X[b, i] = Xt[b, i]


_toy_lm = specialize(lm.lm_loop, "toy", lm_eval=_toy_eval, lm_try=_toy_try, lm_take=_toy_take)


def test_generic_lm_loop_on_a_problem_of_its_own(rng):
    """The loop PBAD runs, bound to a smooth convex test function: converges to its minimiser
    (the root of the gradient, checked against numpy's Newton iteration)."""
    n, B = 4, 2
    Q = rng.normal(size=(n, n))
    A = Q @ Q.T + np.eye(n)
    c = rng.normal(size=n) * 3
    X = rng.normal(size=(B, n)) * 2
    z = np.zeros
    G, Hs, M2, L, DX, Xt = z((B, n)), z((B, n, n)), z((B, n, n)), z((B, n, n)), z((B, n)), z((B, n))
    info = z((B, 4))
    P = (X, Xt, A, c, G, Hs, DX)
    for b in range(B):
        _toy_lm(P, (G[b], Hs[b], M2[b], L[b], DX[b]), b, n, 50, 1e-10, 1e-14, 1e-15, 0, info[b])
    x = np.zeros(n)
    for _ in range(50):  # Newton on grad f = A x + c + exp(x)
        x -= np.linalg.solve(A + np.diag(np.exp(x)), A @ x + c + np.exp(x))
    assert np.all(info[:, 2] == 1.0) and np.all(info[:, 1] < 1e-10) and np.all(info[:, 0] >= 2), info
    assert np.allclose(X, x, atol=1e-9)
    info2 = info.copy()
    for b in range(B):  # from the minimiser: no iteration
        _toy_lm(P, (G[b], Hs[b], M2[b], L[b], DX[b]), b, n, 50, 1e-10, 1e-14, 1e-15, 0, info2[b])
    assert np.all(info2[:, 0] == 0) and np.all(info2[:, 2] == 1.0)
    # maxit = 1 stops after one iteration, unconverged
    X[:] = rng.normal(size=(B, n)) * 2
    _toy_lm(P, (G[0], Hs[0], M2[0], L[0], DX[0]), 0, n, 1, 1e-10, 1e-14, 1e-15, 0, info[0])
    assert info[0, 0] == 1 and info[0, 2] == 0.0


def test_pbad_solvers_reach_one_lm_loop():
    """The LM loop is written once: PBAD2's in-kernel solve (pbad2_lm), the GPU's per-launch phases
    (pbad_begin / pbad_iterate) and the collocation solve (colloc_lm) all run copies of
    pbsim.optim.lm's kernels (same code objects) that differ only in the bound problem hooks; no
    kernel outside pbsim/optim calls the damped solve or the lambda rule."""
    from pathlib import Path

    import pbsim
    from pbsim.integrators.pbad import colloc, order2, step

    def gl(k):
        return python_source(k).__globals__

    def code(k):
        return python_source(k).__code__

    loop2 = gl(order2.pbad2_lm)["pbad2_lm_loop"]
    loopc = gl(colloc.colloc_lm)["colloc_lm_loop"]
    it2, itc = gl(loop2)["lm_iterate"], gl(loopc)["lm_iterate"]
    assert code(loop2) is code(loopc) is code(lm.lm_loop)
    assert code(it2) is code(itc) is code(lm.lm_iterate)
    # the per-launch phases: the very same kernels
    assert it2 is gl(gl(step.pbad_iterate)["pbad2_lm_launch_iterate"])["lm_iterate"]
    assert gl(loop2)["lm_begin"] is gl(gl(step.pbad_begin)["pbad2_lm_launch_begin"])["lm_begin"]
    tr2, trc = gl(it2)["lm_trial"], gl(itc)["lm_trial"]
    assert code(tr2) is code(trc) is code(lm.lm_trial)
    assert gl(tr2)["lm_try"] is order2.pbad2_trial and gl(trc)["lm_try"] is colloc.colloc_trial
    assert gl(tr2)["lm_first"] is lm.lm_no_first and gl(trc)["lm_first"] is colloc.colloc_newton
    assert gl(it2)["lm_stalled"] is lm.lm_stalled_converged and gl(itc)["lm_stalled"] is lm.lm_stalled_small
    assert gl(it2)["lm_eval"] is order2.pbad2_lm_eval and gl(itc)["lm_eval"] is colloc.colloc_lm_eval
    assert gl(lm.lm_trial)["lm_solve"] is gl(tr2)["lm_solve"] is lm.lm_solve  # shared, not copied
    root = Path(pbsim.__file__).parent
    for p in root.rglob("*.py"):
        if p.parent.name != "optim":
            src = p.read_text()
            for name in ("lm_solve", "lm_accept", "lm_reject", "lm_iterate", "lm_trial"):
                assert not re.search(rf"\b{name}\(", src), (
                    f"{p.relative_to(root)} calls {name}: the LM loop is pbsim.optim.lm's"
                )


def test_lbfgs_loop_is_written_once():
    """The LBFGS loop is written once: PBAD2's (pbad2_lbfgs) and PBFD's (pbfd_lbfgs) run copies of
    pbsim.optim.lbfgs.lbfgs_loop (same code object) that differ only in the bound problem hooks;
    no kernel outside pbsim/optim calls the two-loop recursion or the pair store."""
    from pathlib import Path

    import pbsim
    from pbsim.integrators.pbad import order2
    from pbsim.integrators.pbfd import solve
    from pbsim.optim import lbfgs

    def gl(k):
        return python_source(k).__globals__

    la, lf = gl(order2.pbad2_lbfgs)["pbad2_lbfgs_loop"], gl(solve.pbfd_lbfgs)["pbfd_lbfgs_loop"]
    assert python_source(la).__code__ is python_source(lf).__code__ is python_source(lbfgs.lbfgs_loop).__code__
    assert gl(la)["lbfgs_h0"] is order2.pbad2_lbfgs_h0 and gl(lf)["lbfgs_h0"] is solve.pbfd_lbfgs_h0
    assert gl(la)["lbfgs_limit"] is lbfgs.lbfgs_no_limit and gl(lf)["lbfgs_limit"] is solve.pbfd_lbfgs_limit
    root = Path(pbsim.__file__).parent
    for p in root.rglob("*.py"):
        if p.parent.name != "optim":
            src = p.read_text()
            for name in ("lbfgs_first_loop", "lbfgs_second_loop", "lbfgs_push"):
                assert not re.search(rf"\b{name}\(", src), f"{p.relative_to(root)} calls {name}: LBFGS is pbsim.optim's"
