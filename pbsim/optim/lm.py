"""Levenberg-Marquardt step with lambda adaptation (paper 000 Sec. 5, ref. [18]).

The outer loop lives in the caller's kernel (it owns the objective); this module supplies the
damped solve and the lambda rule, per trajectory and allocation-free."""
from pbsim.backends.kernel import kernel
from pbsim.optim.linalg import cholesky_factor, cholesky_solve

LAMBDA_MIN = 1e-12
LAMBDA_MAX = 1e12


@kernel
def lm_solve(H, g, lam, A, L, dx, n):
    """dx = -(H + lam (diag(H) + 1e-9 I))^-1 g (Marquardt scaling).  Returns False when the damped
    matrix is not positive definite (the caller raises lambda and retries)."""
    for i in range(n):
        for j in range(n):
            A[i, j] = H[i, j]
        A[i, i] += lam * (abs(H[i, i]) + 1e-9)
    if not cholesky_factor(A, L, n):
        return False
    for i in range(n):
        dx[i] = -g[i]
    cholesky_solve(L, dx, dx, n)
    return True


@kernel
def lm_accept(lam):
    """Lambda after an accepted step."""
    v = lam / 3.0
    return v if v > LAMBDA_MIN else LAMBDA_MIN


@kernel
def lm_reject(lam):
    """Lambda after a rejected step or an indefinite damped matrix."""
    v = lam * 10.0 if lam > 1e-6 else 1e-5
    return v if v < LAMBDA_MAX else LAMBDA_MAX


@kernel
def lm_stalled_converged(H, n, small, gn, gtol):
    """Whether an LM solve that found no decrease of its objective (resolvable in floating point)
    counts as converged: the last step was below xtol (``small``) with |g| near gtol, or the Newton
    correction |g| stands for (|g| / max diag H, in rad or m) is below 1e-10."""
    hmax = 0.0
    for k in range(n):
        if H[k, k] > hmax:
            hmax = H[k, k]
    return (small and gn < 1e3 * gtol) or gn < 1e-10 * hmax
