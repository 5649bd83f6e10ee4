"""Mimic joints with exact coupling: the constrained acceleration and the state projection.

A mimic joint s is slaved to its (root) master j: ``q_s = m q_j + o``, ``v_s = m v_j``, so the
accelerations satisfy ``J qdd = 0`` with the constant rows ``J_c = e_s - m e_j`` (one per mimic
joint, k in all).  Given the unconstrained solution of ``A qdd0 = f`` (A = M + diag(arm): the
mass matrix with the implicit SPD/damping diagonal of the step), the coupled acceleration is
(Gauss's principle; the constraint force ``J^T lambda`` does no work)::

    qdd = qdd0 + A^-1 J^T lambda,   (J A^-1 J^T) lambda = -J qdd0

which equals the reduced dynamics ``qdd = G (G^T A G)^-1 G^T f`` of the independent coordinates
(G: the coupling ``v = G v_free``, :meth:`pbsim.Model.mimic_coupling`).  ``A^-1 J_c^T`` is one
O(n) response pass per mimic joint with the articulated-body factor the ABA solve left behind
(``U``, ``D^-1`` per joint; zero bias and gravity, :func:`pbsim.dynamics.minv.minv_solve`):
backward ``u = tau' - S^T p``, ``p_parent += X^T (p + U D^-1 u)``; forward ``a' = X a_parent``
(root 0), ``qdd = D^-1 (u - U^T a')``, ``a = a' + S qdd``.  Then a k x k Cholesky solve: O(k n)
per state, no allocation (scratch ``w.mY`` (k, nv), ``w.mK`` (k, k), ``w.mt``).
"""
from pbsim.jit import kernel
from pbsim.dynamics.minv import minv_solve
from pbsim.optim.linalg import cholesky_factor, cholesky_solve


@kernel
def mimic_accel(m, w, b, qdd):
    """Project ``qdd`` (the solution of ``A qdd = f`` by ABA/MABA, whose factor ``w.U``,
    ``w.Dinv`` is still in place for state b) onto the coupled accelerations (module doc).
    Overwrites ``w.pA``, ``w.u``, ``w.acc`` of state b.  No-op without mimic joints."""
    k = m.mimic_vs.shape[0]
    if k == 0:
        return
    Y = w.mY[b]
    K = w.mK[b]
    t = w.mt[b]
    for c in range(k):  # Y_c = A^-1 J_c^T
        for j in range(m.nv):
            t[j] = 0.0
        t[m.mimic_vs[c]] += 1.0
        t[m.mimic_vm[c]] -= m.mimic_mult[c]
        minv_solve(m, w, b, t, Y[c])
    for a in range(k):  # K = J A^-1 J^T (symmetric positive definite), rhs = -J qdd
        sa = m.mimic_vs[a]
        ma = m.mimic_vm[a]
        for c in range(k):
            K[a, c] = Y[c, sa] - m.mimic_mult[a] * Y[c, ma]
        t[a] = m.mimic_mult[a] * qdd[ma] - qdd[sa]
    cholesky_factor(K, K, k)
    cholesky_solve(K, t, t, k)  # t[:k] = lambda
    for c in range(k):
        lam = t[c]
        for j in range(m.nv):
            qdd[j] += Y[c, j] * lam


@kernel
def mimic_project(m, q, v):
    """Set the mimic joints' entries of state rows (q, v) from their masters:
    ``q_s = m q_master + o``, ``v_s = m v_master`` (round-off drift, inconsistent initial states)."""
    for c in range(m.mimic_vs.shape[0]):
        q[m.mimic_qs[c]] = m.mimic_mult[c] * q[m.mimic_qm[c]] + m.mimic_off[c]
        v[m.mimic_vs[c]] = m.mimic_mult[c] * v[m.mimic_vm[c]]
