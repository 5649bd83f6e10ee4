"""SPD by sparse factorization (SF, paper 001 Sec. 2.3): Featherstone's branch-induced sparse
LTL factorization of M + Kd dt (RBDA Sec. 6.5, Tables 6.3-6.4), O(n d^2)."""
from pbsim.jit import kernel
from pbsim.control.dense import mass_and_bias


@kernel
def ltl_factor(n, lam, H):
    """H = L^T L in place (lower triangle), touching only entries (k, i) with i an ancestor of k
    in the DOF tree ``lam`` (RBDA Table 6.3)."""
    for k in range(n - 1, -1, -1):
        H[k, k] = H[k, k] ** 0.5
        i = lam[k]
        while i >= 0:
            H[k, i] = H[k, i] / H[k, k]
            i = lam[i]
        i = lam[k]
        while i >= 0:
            j = i
            while j >= 0:
                H[i, j] = H[i, j] - H[k, i] * H[k, j]
                j = lam[j]
            i = lam[i]


@kernel
def ltl_solve(n, lam, L, x):
    """Solve ``L^T L x = x`` in place: L^T y = x (leaves to root), then L x = y (root to leaves)
    (RBDA Table 6.4)."""
    for i in range(n - 1, -1, -1):
        x[i] = x[i] / L[i, i]
        j = lam[i]
        while j >= 0:
            x[j] -= L[i, j] * x[i]
            j = lam[j]
    for i in range(n):
        j = lam[i]
        while j >= 0:
            x[i] -= L[i, j] * x[j]
            j = lam[j]
        x[i] = x[i] / L[i, i]


@kernel
def spd_sparse(m, w, b, q, v, tau, arm, lam, Md, h, zero, qdd):
    """(M + Kd dt) qdd = tau - h (paper 001 Eq. 7) by sparse LTL factorization."""
    mass_and_bias(m, w, b, q, v, Md, h, zero)
    n = m.nv
    for j in range(n):
        Md[j, j] += arm[j]
        qdd[j] = tau[j] - h[j]
    ltl_factor(n, lam, Md)
    ltl_solve(n, lam, Md, qdd)
