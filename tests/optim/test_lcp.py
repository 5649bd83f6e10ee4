"""Lemke's method (pbsim.optim.lcp): solutions checked by the complementarity conditions on random
P-matrix and PSD problems, a known small problem, degenerate cases (ties, redundant rows, q with
zeros), and the statuses of an infeasible problem and of the pivot cap."""

import numpy as np
import pytest

from pbsim.optim.lcp import LCP_MAXIT, LCP_RAY, LCP_SOLVED, lcp_residual, lcp_work, lemke, solve_lcp


def _violation(M, q, z):
    w = M @ z + q
    return max((-z).max(initial=0.0), (-w).max(initial=0.0), np.abs(z * w).max(initial=0.0))


def test_random_p_matrix_problems(rng):
    for n in (1, 2, 3, 5, 10, 30):
        for _ in range(25):
            A = rng.normal(size=(n, n))
            S = rng.normal(size=(n, n))
            M = A @ A.T + 0.1 * np.eye(n) + (S - S.T)  # positive definite, nonsymmetric: a P-matrix
            q = rng.normal(size=n) * rng.uniform(0.1, 10.0)
            z, st, piv = solve_lcp(M, q)
            assert st == LCP_SOLVED
            assert _violation(M, q, z) <= 1e-9 * (1 + np.abs(q).max())
            assert piv <= 2 * n + 1
            # the solution of a P-matrix LCP is unique: a brute force over the active sets agrees
            if n <= 5:
                best = None
                for mask in range(2**n):
                    act = np.array([(mask >> i) & 1 for i in range(n)], bool)
                    zz = np.zeros(n)
                    if act.any():
                        zz[act] = np.linalg.solve(M[np.ix_(act, act)], -q[act])
                    if _violation(M, q, zz) <= 1e-9 * (1 + np.abs(q).max()):
                        best = zz
                        break
                assert best is not None and np.allclose(z, best, atol=1e-9)


def test_random_psd_problems(rng):
    """Rank-deficient PSD M with q built from a known complementary pair (feasible, hence solvable
    by Lemke: PSD is copositive-plus); solutions need not be unique, the conditions must hold."""
    for n in (2, 4, 8, 20, 40):
        for _ in range(20):
            r = max(1, n // 2)
            A = rng.normal(size=(n, r))
            M = A @ A.T
            zs = np.where(rng.random(n) < 0.5, rng.uniform(0, 2, n), 0.0)
            ws = np.where(zs > 0, 0.0, rng.uniform(0, 2, n) * (rng.random(n) < 0.7))
            q = ws - M @ zs
            z, st, piv = solve_lcp(M, q)
            assert st == LCP_SOLVED
            assert _violation(M, q, z) <= 1e-9 * (1 + np.abs(q).max())


def test_known_small_problems():
    M = np.array([[2.0, 1.0], [1.0, 2.0]])
    z, st, _ = solve_lcp(M, [-5.0, -6.0])  # both active: M z = -q
    assert st == LCP_SOLVED and np.allclose(z, [4 / 3, 7 / 3], atol=1e-14)
    z, st, _ = solve_lcp(M, [-1.0, 3.0])  # z = (1/2, 0), w = (0, 7/2)
    assert st == LCP_SOLVED and np.allclose(z, [0.5, 0.0], atol=1e-14)
    z, st, piv = solve_lcp(M, [1.0, 0.0])  # q >= 0: z = 0 without a pivot
    assert st == LCP_SOLVED and piv == 0 and not z.any()
    # a cyclic 3x3 (not symmetric, a P-matrix): z = 1/3 each, w = 0
    M3 = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 2.0], [2.0, 0.0, 1.0]])
    q3 = np.array([-1.0, -1.0, -1.0])
    z, st, _ = solve_lcp(M3, q3)
    assert st == LCP_SOLVED and np.allclose(z, [1 / 3, 1 / 3, 1 / 3], atol=1e-14)


def test_degenerate_problems(rng):
    # ties in the first ratio test and a singular M: any split of z1 + z2 = 1 solves it
    M = np.ones((2, 2))
    z, st, _ = solve_lcp(M, [-1.0, -1.0])
    assert st == LCP_SOLVED and abs(z.sum() - 1.0) < 1e-14 and _violation(M, np.array([-1.0, -1.0]), z) < 1e-14
    # q with zeros (degenerate basic values from the start) and duplicated rows
    A = rng.normal(size=(3, 6))
    J = np.vstack([A, A[:2], A[1:] + A[:2]])  # 7 rows of rank 3: redundant "contacts"
    M = J @ J.T
    q = np.array([0.0, -1.0, 0.0, -1.0, 0.0, -1.0, 0.0])
    z, st, _ = solve_lcp(M, q)
    assert st == LCP_SOLVED and _violation(M, q, z) < 1e-10
    # a box on a plane: 8 coplanar unilateral contacts on 6 DOF, pushed down (all rows tie)
    rows = []
    for sx in (-1, 1):
        for sy in (-1, 1):
            for f in (1.0, 0.5):
                x, y = 0.2 * sx * f, 0.1 * sy
                rows.append([0, 0, 1.0, y, -x, 0])  # n^T J for a unit-inertia box
    J = np.array(rows)
    M = J @ J.T
    q = -np.full(8, 0.01)
    z, st, _ = solve_lcp(M, q)
    assert st == LCP_SOLVED and _violation(M, q, z) < 1e-14
    assert np.allclose(J.T @ z, [0, 0, 0.01, 0, 0, 0], atol=1e-14)  # the impulse stops the box


def test_infeasible_problems_end_on_a_ray():
    z, st, _ = solve_lcp([[-1.0]], [-1.0])  # w = -z - 1 < 0 for every z >= 0
    assert st == LCP_RAY
    # skew-symmetric (PSD, copositive-plus): w2 = -z1 - 1 < 0 always: infeasible
    z, st, _ = solve_lcp([[0.0, 1.0], [-1.0, 0.0]], [-1.0, -1.0])
    assert st == LCP_RAY


def test_pivot_cap_and_scratch_larger_than_the_problem(rng):
    A = rng.normal(size=(6, 6))
    M = A @ A.T + np.eye(6)
    q = -np.abs(rng.normal(size=6)) - 1.0
    z, st, piv = solve_lcp(M, q, maxit=2)
    assert st == LCP_MAXIT and piv == 2
    # the kernel solves the leading n x n block with scratch sized for a larger problem
    Mbig = np.zeros((10, 10))
    Mbig[:6, :6] = M
    qbig = np.zeros(10)
    qbig[:6] = q
    W, basis = lcp_work(10)
    zb = np.full(10, 7.0)
    st, piv = lemke(Mbig, qbig, 6, zb, 100, W, basis)
    z, st2, piv2 = solve_lcp(M, q)
    assert st == st2 == LCP_SOLVED and piv == piv2
    assert np.array_equal(zb[:6], z) and (zb[6:] == 7.0).all()
    assert lcp_residual(Mbig, qbig, 6, zb) < 1e-12
    assert lcp_residual(M, q, 6, np.zeros(6)) == pytest.approx(-q.min())


def _contact_lcp(rng, npts=8, mu=0.5, dt=1e-3):
    """A Stewart-Trinkle LCP as ne_dry builds it, for a free box (6 DOF, body-frame velocity) with
    ``npts`` points of its bottom face on the plane z = 0: rows [n; t1; t2] per contact, G = A M^-1 A^T,
    z = [normal; 4 directions; slack] per contact."""
    half = np.array([0.2, 0.1, 0.05])
    corners = [
        np.array([sx * half[0] * f, sy * half[1], -half[2]]) for sx in (-1, 1) for sy in (-1, 1) for f in (1.0, 0.5)
    ]
    pts = corners[:npts]
    m = 1.0
    I = m / 3 * np.diag([half[1] ** 2 + half[2] ** 2, half[0] ** 2 + half[2] ** 2, half[0] ** 2 + half[1] ** 2])
    Minv = np.linalg.inv(np.block([[m * np.eye(3), np.zeros((3, 3))], [np.zeros((3, 3)), I]]))
    rows = []
    for p in pts:
        for d in np.eye(3)[[2, 0, 1]]:  # n = z, t1 = x, t2 = y; v = [linear; angular]: v_p = v + w x p
            rows.append(np.r_[d, np.cross(p, d)])
    A = np.array(rows)
    G = A @ Minv @ A.T
    nc = npts
    N = 6 * nc
    M = np.zeros((N, N))
    dirs = [(1, 0), (0, 1), (-1, 0), (0, -1)]
    D = np.zeros((4 * nc, 3 * nc))
    for k in range(nc):
        for j, (c, s) in enumerate(dirs):
            D[4 * k + j, 3 * k + 1], D[4 * k + j, 3 * k + 2] = c, s
    Nn = np.zeros((nc, 3 * nc))
    Nn[np.arange(nc), 3 * np.arange(nc)] = 1.0
    P = np.vstack([Nn, D])  # [normal; directions] in terms of the A rows
    M[: 5 * nc, : 5 * nc] = P @ G @ P.T
    for k in range(nc):
        M[nc + 4 * k : nc + 4 * k + 4, 5 * nc + k] = 1.0
        M[5 * nc + k, nc + 4 * k : nc + 4 * k + 4] = -1.0
        M[5 * nc + k, k] = mu
    v = np.r_[rng.normal(0, 0.3, 2), -9.81 * dt + rng.normal(0, 0.01), rng.normal(0, 0.2, 3)]
    v[2] = min(v[2], -1e-3)
    gap = rng.uniform(-1e-3, 1e-6, nc) * (rng.random(nc) < 0.5)
    u = A @ v
    q = np.r_[u[0::3] + np.where(gap >= 0, gap / dt, 0.2 * gap / dt), P[nc:] @ u, np.zeros(nc)]
    return M, q


def test_regularized_lemke_solves_contact_problems(rng):
    """Redundant contacts (8 coplanar points on 6 DOF), near-equal normal velocities, sliding and
    sticking: every problem solved with the conditions met to 1e-6 max|q| (ne_dry's acceptance)."""
    plain = 0
    for trial in range(150):
        M, q = _contact_lcp(rng, npts=(4, 6, 8)[trial % 3], mu=rng.uniform(0.1, 1.2))
        z, st, piv = solve_lcp(M, q, regularized=True)
        assert st == LCP_SOLVED
        assert _violation(M, q, z) <= 1e-6 * np.abs(q).max()
        z0, st0, _ = solve_lcp(M, q)
        plain += st0 == LCP_SOLVED and _violation(M, q, z0) <= 1e-6 * np.abs(q).max()
    assert plain >= 100  # most need no regularization
    # the diagonal is restored and the infeasible problem still ends on a ray
    M = np.array([[0.0, 1.0], [-1.0, 0.0]])
    z, st, _ = solve_lcp(M, [-1.0, -1.0], regularized=True)
    assert st == LCP_RAY


def test_regularized_lemke_solves_a_recorded_hard_problem():
    """An 18 x 18 LCP recorded from ne_dry (a box dropped on a corner, landing on 3 points whose
    normal velocities agree to round-off, which makes the pivot path ill-conditioned): plain Lemke
    ended on a false ray here when it was recorded, the regularized retry solves it."""
    import os

    d = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "lcp_box_3contacts.npz"))
    M, q = d["M"], d["q"]
    z, st, piv = solve_lcp(M, q, regularized=True)
    assert st == LCP_SOLVED and _violation(M, q, z) <= 1e-6 * np.abs(q).max()
    z0, st0, piv0 = solve_lcp(M, q)  # floating point decides this one; the regularized retry may be needed
    assert st0 == LCP_SOLVED or piv > piv0
