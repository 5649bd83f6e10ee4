"""The dual semismooth-Newton QP (pbsim.optim.qp_dual) for Hessians ``c I + R^T R``: the same
minimiser as the primal active-set method on the dense matrix over the proximal weights NMDP's QP
hands it (c from 1 down to pbsim.integrators.pgm.qp.DUAL_MIN_C, R's scale 1), with capped simplex,
inert [0, 0] and box blocks; a warm start at the solution stops at once; an early stop still
returns a feasible point; below DUAL_MIN_C it reports failure rather than a wrong answer."""

import numpy as np
import pytest

from pbsim.optim.qp import qp_layout, qp_solve_as, qp_work_as
from pbsim.optim.qp_dual import qp_solve_dual
from tests.optim.test_qp import _natural_residual


def _lowrank_qp(rng, c, ncontacts=40, V=4, r=18, ratio=1e4):
    blocks = [("simplex", V, float(cap)) for cap in rng.uniform(1e-3, 1.0, ncontacts)]
    blocks += [("box", 0.0, 0.0, V), ("box", -0.3, 0.2, 2)]
    layout = qp_layout(blocks)
    n = layout[0]
    Rt = rng.normal(size=(n, r)) * np.sqrt(np.geomspace(1.0, ratio, r))
    Rt /= np.sqrt((Rt**2).sum(axis=1).max())  # the largest diagonal of R^T R: 1
    A = c * np.eye(n) + Rt @ Rt.T
    b = A @ rng.normal(size=n) * rng.uniform(0.5, 3.0) + rng.normal(size=n) * 1e-2
    return np.ascontiguousarray(Rt), A, b, layout


def _dual(Rt, c, b, layout, x0=None, maxit=100, tol=1e-10):
    n, lo, hi, bstart, btype, mu = layout
    x = np.zeros(n) if x0 is None else np.array(x0, float)
    info = np.zeros(4)
    ok = qp_solve_dual(Rt, c, b, n, Rt.shape[1], lo, hi, bstart, btype, mu, x, maxit, tol, qp_work_as(n, 64), info)
    return x, ok, info


@pytest.mark.parametrize("c", [1.0, 1e-2, 1e-4])
def test_dual_equals_the_active_set_method(rng, c):
    for _ in range(5):
        Rt, A, b, layout = _lowrank_qp(rng, c)
        n, lo, hi, bstart, btype, mu = layout
        x, ok, info = _dual(Rt, c, b, layout)
        assert ok, info
        assert info[1] <= 1e-10 and _natural_residual(A, b, layout, x) <= 1e-10
        xa = np.zeros(n)
        infa = np.zeros(4)
        assert qp_solve_as(np.ascontiguousarray(A), b, n, lo, hi, bstart, btype, mu, xa, 20000, 1e-12,
                           qp_work_as(n, n), infa)  # fmt: skip
        f, fa = 0.5 * x @ A @ x + b @ x, 0.5 * xa @ A @ xa + b @ xa
        assert abs(info[2] - f) <= 1e-12 * (1 + abs(f))
        assert f <= fa + 1e-9 * (1 + abs(fa)), (f, fa)
        assert np.abs(x - xa).max() <= 1e-8 / c, np.abs(x - xa).max()  # strictly convex: one minimiser
        assert info[0] <= 100, info  # cold starts (x = 0); in the PGM it starts at the last weights


def test_dual_near_and_below_its_floor(rng):
    """At c = DUAL_MIN_C most problems still converge from a cold start (x = 0, 200 Newton steps;
    the PGM starts at the last weights and gives up after QP_MAXIT_DUAL); at c = 1e-12 (the proximal term gone) it
    returns False, which makes pgm_qp fall back to the formed matrix (pgm_qp never hands it c below
    DUAL_MIN_C)."""
    from pbsim.integrators.pgm.qp import DUAL_MIN_C

    done = 0
    for _ in range(10):
        Rt, A, b, layout = _lowrank_qp(rng, DUAL_MIN_C)
        x, ok, info = _dual(Rt, DUAL_MIN_C, b, layout, maxit=200)
        if ok:
            done += 1
            assert _natural_residual(A, b, layout, x) <= 1e-10
    assert done >= 8, done
    Rt, A, b, layout = _lowrank_qp(rng, 1e-12)
    x, ok, info = _dual(Rt, 1e-12, b, layout, maxit=30)
    assert not ok and info[1] > 1e-10


def test_line_search_reads_the_slope_at_small_c():
    """Regression (issue 30): the step length comes from phi's slope (Eq. 4), not from phi's value,
    whose O(1/c) terms cancel.  On NMDP-sized QPs (94 contacts, 4 weights each, nv 18) from a cold
    start, with Armijo backtracking on phi's value 6 of 10 converged within QP_MAXIT_DUAL Newton
    steps at c = 1e-3 and 2 of 10 at c = 1e-4 (the PGM then falls back to the formed 384 x 384
    matrix); reading the slope, 10 and 7 of 10 (measured with this seed).  Held at the 30 steps it
    was measured with (``QP_MAXIT_DUAL`` is 100 since, for the a1's QPs)."""
    rng = np.random.default_rng(1)
    for c, need in ((1e-2, 10), (1e-3, 10), (1e-4, 6)):
        done = 0
        for _ in range(10):
            Rt, A, b, layout = _lowrank_qp(rng, c, ncontacts=94)
            x, ok, info = _dual(Rt, c, b, layout, maxit=30)
            if ok:
                done += 1
                assert _natural_residual(A, b, layout, x) <= 1e-10
        assert done >= need, (c, done)
