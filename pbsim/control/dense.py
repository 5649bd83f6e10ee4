"""SPD by dense factorization (DF, paper 001 Sec. 2.3): Cholesky LL^T of M + Kd dt, O(n^3)."""
from pbsim.jit import kernel
from pbsim.dynamics.crba import crba_state
from pbsim.dynamics.rnea import rnea_state
from pbsim.optim.linalg import cholesky_factor, cholesky_solve


@kernel
def mass_and_bias(m, w, b, q, v, Md, h, zero):
    """``Md = M(q)`` (CRBA) and ``h = C(q, v) v + g(q)`` (RNEA with qdd = 0; ``zero`` is an nv row
    of zeros).  Leaves ``w.vel``/``w.c`` of the state (velocity pass) in place."""
    crba_state(m, w, b, q, Md)
    rnea_state(m, w, b, q, v, zero, h)


@kernel
def spd_dense(m, w, b, q, v, tau, arm, Md, h, zero, qdd):
    """(M + Kd dt) qdd = tau - h  (paper 001 Eq. 7; ``tau`` holds Q of Eq. 40 plus the other
    generalized forces, ``arm`` the diagonal Kd dt), by dense Cholesky."""
    mass_and_bias(m, w, b, q, v, Md, h, zero)
    n = m.nv
    for j in range(n):
        Md[j, j] += arm[j]
        qdd[j] = tau[j] - h[j]
    cholesky_factor(Md, Md, n)  # in place: L over the lower triangle
    cholesky_solve(Md, qdd, qdd, n)
