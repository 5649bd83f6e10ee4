"""The PGM's QP (Eq. 8 / 10) at the accepted iterate, in force-scaled variables, by the active-set method.

**QP** (Eq. 8/10) in the variables ``u = w cap_x / c_max`` (per contact the capped simplex
``u >= 0, 1^T u <= cap_x / c_max``: every variable has the scale of a force, ne_mdp's scaling)::

    min 1/2 du^T (D~^T Q D~ + (2 sigma / gamma) I) du - (D~^T g)^T du,  D~ = D diag(c_max / cap)

``D = A^-1 B`` (one LU, m back-solves); ``sigma``: the largest diagonal entry of ``D~^T Q D~``
(the proximal weight ``|dw|^2 / gamma`` made scale-free: gamma = 1 weighs it like the
curvature).  Solved by :func:`pbsim.optim.qp.qp_solve_as` (the primal active-set method over the
simplex blocks; FISTA, :func:`~pbsim.optim.qp.qp_solve`, took ~50x longer on the Robosimian's
QPs: docs/benchmarks/nmdp.md "QP solver"), warm-started at the current ``u``.  A candidate whose
capacity is below ``1e-14 c_max`` (``zeta = 0`` out of contact: ``v = 0``) keeps its weight (a
[0, 0] box).
"""

from __future__ import annotations

from pbsim.jit import kernel
from pbsim.integrators.pgm.problem import S_LU, S_QP, S_QPFAIL, S_QPIT
from pbsim.optim.linalg import gram_symmetric, lu_factor, lu_solve, lu_solve_rows, matvec_add
from pbsim.optim.qp import QP_BOX, QP_SIMPLEX, qp_solve_as

CAP_EPS = 1e-14  # a candidate with capacity below this fraction of the step's largest is inert
QP_MAXIT = 5000  # QP iterations per QP (active-set steps; FISTA's when it falls back)
QP_TOL = 1e-10  # its KKT residual (u in units of the largest capacity; QP scaled by its largest diagonal)


@kernel
def pgm_qp(m, x, b, nc, h, gamma, st, offset):
    """The QP (Eq. 8 / 10, module docstring) at the accepted iterate (A, B rows, H, g from its
    evaluation) for the trial weights ``x.wn``.  With ``offset`` (the warm start at a point where
    G != 0) the linearised constraint ``G + A dtheta + B dw = 0`` moves theta by the Newton step
    ``d0 = -A^-1 G`` too, so the gradient becomes ``g + Q d0``.  Returns False when A is singular."""
    nv = m.nv
    V = x.vx
    n = V * nc
    st[S_LU] += 1.0
    if not lu_factor(x.A[b], x.LU[b], x.piv[b], nv):
        return False
    geff = x.gk[b]  # (the evaluation's dK/dq scratch, free here)
    for j in range(nv):
        geff[j] = x.g[b, j]
    if offset:
        d0 = x.dq[b]
        for j in range(nv):
            d0[j] = -x.G[b, j]
        lu_solve(x.LU[b], x.piv[b], d0, nv)
        for i in range(nv):
            sacc = 0.0
            for j in range(nv):
                sacc += x.M[b, i, j] * d0[j]
            geff[i] += sacc / (h * h)
    cmax = 0.0
    for ci in range(nc):
        if x.cap[b, ci] > cmax:
            cmax = x.cap[b, ci]
    D = x.Dm[b]
    HX = x.HX[b]
    M = x.M[b]
    wts = x.wts[b]
    u = x.wn[b]
    ih2 = 1.0 / (h * h)
    for ci in range(nc):
        cap = x.cap[b, ci]
        live = cap > CAP_EPS * cmax
        scale = cmax / cap if live else 0.0
        x.bstart[b, ci] = V * ci
        x.btype[b, ci] = QP_SIMPLEX if live else QP_BOX
        x.bmu[b, ci] = cap / cmax if live else 0.0
        for i in range(V):
            rr = ci * V + i
            x.lo[b, rr] = 0.0
            x.hi[b, rr] = 0.0
            u[rr] = wts[rr] / scale if live else 0.0
            for j in range(nv):
                D[rr, j] = x.Bm[b, rr, j]
    x.bstart[b, nc] = V * nc
    lu_solve_rows(x.LU[b], x.piv[b], D, 0, n, nv)  # D = A^-1 B, four right-hand sides at a time
    for ci in range(nc):
        cap = x.cap[b, ci]
        scale = cmax / cap if cap > CAP_EPS * cmax else 0.0
        for i in range(V):
            rr = ci * V + i
            for j in range(nv):
                D[rr, j] *= scale
    for rr in range(n):  # H D, row by row of D: HX[rr] = (H D[rr]) / h^2
        HXr = HX[rr]
        for i in range(nv):
            HXr[i] = 0.0
        matvec_add(M, D[rr], HXr, nv, nv)
        for i in range(nv):
            HXr[i] *= ih2
    QA = x.QA[b]
    sig = gram_symmetric(D, HX, n, nv, QA)
    if not (sig > 0.0):
        sig = 1.0
    prox = 2.0 * sig / gamma
    for rr in range(n):
        QA[rr, rr] += prox
    inv = 1.0 / (sig + prox)
    qb = x.qb[b]
    for rr in range(n):  # -(D^T geff + QA u) / (sig + prox)
        qb[rr] = 0.0
    matvec_add(D, geff, qb, n, nv)
    matvec_add(QA, u, qb, n, n)
    for rr in range(n):
        qb[rr] = -qb[rr] * inv
    for rr in range(n):
        for cc in range(n):
            QA[rr, cc] *= inv
    ok = qp_solve_as(QA, qb, n, x.lo[b], x.hi[b], x.bstart[b, : nc + 1], x.btype[b, :nc], x.bmu[b, :nc], u, QP_MAXIT,
                  QP_TOL, x.qw[b], x.qinfo[b])  # fmt: skip
    st[S_QP] += 1.0
    st[S_QPIT] += x.qinfo[b, 0]
    if not ok:
        st[S_QPFAIL] += 1.0
    for ci in range(nc):
        cap = x.cap[b, ci]
        live = cap > CAP_EPS * cmax
        for i in range(V):
            rr = ci * V + i
            u[rr] = u[rr] * cmax / cap if live else wts[rr]
    return True
