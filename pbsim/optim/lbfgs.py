"""LBFGS two-loop recursion and Armijo backtracking bookkeeping (paper 000 Sec. 5, ref. [19]).

Per trajectory and allocation-free: the history lives in caller-owned arrays S, Y (m, n), rho,
alpha (m,) used as a ring buffer with ``count`` stored pairs ending at slot ``head - 1``."""
from pbsim.backends.kernel import kernel


@kernel
def lbfgs_first_loop(g, S, Y, rho, alpha, count, head, d, n):
    """First loop of the two-loop recursion (newest pair first): ``d`` = the projected -g, with the
    ``alpha`` coefficients stored for :func:`lbfgs_second_loop`.  The caller then applies its
    initial inverse Hessian H0 to ``d`` (scaled identity, a diagonal, or an O(n) solve)."""
    mm = S.shape[0]
    for i in range(n):
        d[i] = -g[i]
    for t in range(count):
        k = (head - 1 - t) % mm
        s = 0.0
        for i in range(n):
            s += S[k, i] * d[i]
        a = rho[k] * s
        alpha[k] = a
        for i in range(n):
            d[i] -= a * Y[k, i]


@kernel
def lbfgs_second_loop(S, Y, rho, alpha, count, head, d, n):
    """Second loop (oldest pair first): ``d`` = -H_k g once H0 has been applied."""
    mm = S.shape[0]
    for t in range(count - 1, -1, -1):
        k = (head - 1 - t) % mm
        s = 0.0
        for i in range(n):
            s += Y[k, i] * d[i]
        beta = rho[k] * s
        for i in range(n):
            d[i] += S[k, i] * (alpha[k] - beta)


@kernel
def lbfgs_push(S, Y, rho, s_new, y_new, head, n):
    """Store a pair (s, y) if s.y > 0; returns the new head (unchanged if rejected)."""
    sy = 0.0
    for i in range(n):
        sy += s_new[i] * y_new[i]
    if not (sy > 1e-300):
        return head
    mm = S.shape[0]
    k = head % mm
    for i in range(n):
        S[k, i] = s_new[i]
        Y[k, i] = y_new[i]
    rho[k] = 1.0 / sy
    return head + 1
