"""SPD by dense factorization (DF, paper 001 Sec. 2.3): Cholesky LL^T of M + Kd dt, O(n^3)."""
from pbsim.backends.kernel import kernel
from pbsim.dynamics.crba import crba_state
from pbsim.dynamics.rnea import rnea_state


@kernel
def mass_and_bias(m, w, b, q, v, Md, h, zero):
    """``Md = M(q)`` (CRBA) and ``h = C(q, v) v + g(q)`` (RNEA with qdd = 0; ``zero`` is an nv row
    of zeros).  Leaves ``w.vel``/``w.c`` of the state (velocity pass) in place."""
    crba_state(m, w, b, q, Md)
    rnea_state(m, w, b, q, v, zero, h)


@kernel
def cholesky_inplace(n, A):
    """Lower Cholesky factor L (A = L L^T) written over the lower triangle of ``A``."""
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= A[j, k] * A[j, k]
        d = s ** 0.5
        A[j, j] = d
        for i in range(j + 1, n):
            s = A[i, j]
            for k in range(j):
                s -= A[i, k] * A[j, k]
            A[i, j] = s / d


@kernel
def cholesky_solve(n, L, x):
    """Solve ``L L^T x = x`` in place (forward then backward substitution)."""
    for i in range(n):
        s = x[i]
        for k in range(i):
            s -= L[i, k] * x[k]
        x[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            s -= L[k, i] * x[k]
        x[i] = s / L[i, i]


@kernel
def spd_dense(m, w, b, q, v, tau, arm, Md, h, zero, qdd):
    """(M + Kd dt) qdd = tau - h  (paper 001 Eq. 7; ``tau`` holds Q of Eq. 40 plus the other
    generalized forces, ``arm`` the diagonal Kd dt), by dense Cholesky."""
    mass_and_bias(m, w, b, q, v, Md, h, zero)
    n = m.nv
    for j in range(n):
        Md[j, j] += arm[j]
        qdd[j] = tau[j] - h[j]
    cholesky_inplace(n, Md)
    cholesky_solve(n, Md, qdd)
