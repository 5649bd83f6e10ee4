"""The PGM's QP (Eq. 8 / 10) at the accepted iterate, in force-scaled variables, by the active-set method.

**QP** (Eq. 8/10) in the variables ``u = w cap_x / c_max`` (per contact the capped simplex
``u >= 0, 1^T u <= cap_x / c_max``: every variable has the scale of a force, ne_mdp's scaling)::

    min 1/2 du^T (D~^T Q D~ + (2 sigma / gamma) I) du - (D~^T g)^T du,  D~ = D diag(c_max / cap)

``D = A^-1 B`` (one LU, m back-solves; the dual form below needs only ``B^T A^-T L``, nv
transposed solves); ``sigma``: the largest diagonal entry of ``D~^T Q D~``
(the proximal weight ``|dw|^2 / gamma`` made scale-free: gamma = 1 weighs it like the
curvature).  The Hessian is ``c I + R^T R`` with ``R = L^T D~^T / h`` (``h^2 Q = L L^T``, rank nv):
with more than ``DUAL_MIN_RATIO`` nv weights it is solved in that form, by :func:`pbsim.optim.qp_dual.qp_solve_dual`
(semismooth Newton on the nv-dimensional dual; no m x m matrix: O(m nv) per iteration against
the Gram matrix's O(m^2 nv) and the active set's reduced factor of up to m x m).  Otherwise, or
where that does not reach the tolerance (``c`` tiny: the dual's ``1/c`` amplifies round-off) or
``h^2 Q`` is not positive definite, by :func:`pbsim.optim.qp.qp_solve_as` on the formed matrix
(the primal active-set method over the simplex blocks; FISTA, :func:`~pbsim.optim.qp.qp_solve`,
took ~50x longer on the Robosimian's QPs: docs/benchmarks/nmdp.md "QP solver"), started from
the dual's feasible iterate when it ran, else warm-started at the current ``u``.  A candidate whose
capacity is below ``1e-14 c_max`` (``zeta = 0`` out of contact: ``v = 0``) keeps its weight (a
[0, 0] box).
"""

from __future__ import annotations

import math

from pbsim.jit import kernel
from pbsim.integrators.pgm.problem import S_LU, S_QP, S_QPFAIL, S_QPIT
from pbsim.optim.linalg import (
    cholesky_factor,
    gram_symmetric,
    lu_factor,
    lu_solve,
    lu_solve_rows,
    lu_solve_transpose,
    matvec_add,
)
from pbsim.optim.qp import QP_BOX, QP_SIMPLEX, qp_solve_as
from pbsim.optim.qp_dual import qp_solve_dual

CAP_EPS = 1e-14  # a candidate with capacity below this fraction of the step's largest is inert
QP_MAXIT = 5000  # QP iterations per QP (active-set steps; FISTA's when it falls back)
QP_TOL = 1e-10  # its KKT residual (u in units of the largest capacity; QP scaled by its largest diagonal)
# Newton steps of the dual form before the formed matrix takes over: 30 was too few on pybullet_data's
# a1 (520 weights, c ~ 3e-5: QPs that converge in 30-100 steps), and the formed path's active set
# then outgrew its factor and FISTA ran thousands of iterations (one 20 ms nmdp_zo step: 3.8 s against
# 0.1 s; issue 30, tests/integrators/test_nmdp.py::test_dual_qp_gets_the_newton_steps_it_needs_on_the_a1)
QP_MAXIT_DUAL = 100
# the dual form where the weights outnumber the DOFs this many times (below, the active-set method on
# the formed matrix was faster: gymnasium's humanoid, 80 weights, nv 27: 60 against 150 us a QP; the
# quad18, 308 weights, nv 18: its free set outgrew the active set's factor and FISTA finished,
# 6.9 ms against 0.17 ms in dual form)
DUAL_MIN_RATIO = 4
DUAL_MIN_C = 1e-5  # the dual form only for c = 2 / (gamma + 2) at least this (gamma <= 2e5)


@kernel
def pgm_qp_dual_range(n, nv):
    """Whether a QP of ``n`` weights is one the dual form serves (more than ``DUAL_MIN_RATIO`` nv)."""
    return n > DUAL_MIN_RATIO * nv


@kernel
def pgm_qp_scale(cap, cmax):
    """A candidate's weight scale ``c_max / cap`` (``u = w / scale``); 0 for an inert one (capacity
    below ``CAP_EPS c_max``)."""
    return cmax / cap if cap > CAP_EPS * cmax else 0.0


@kernel
def pgm_qp_dual(m, x, b, n, nc, h, gamma, geff, u0, cmax, st):
    """The QP in its dual form (module docstring) from the LU of A, the rows ``x.Bm`` and the start
    in ``x.wn`` at the linearisation point ``u0``: builds ``R^T`` (in ``x.HX``), ``c`` and ``qb`` as
    the formed path would scale them and solves.  ``D~`` itself is not formed: ``D~[rr] L / h =
    s_rr Bm[rr] W`` with ``W = A^-T L / h`` (nv transposed solves instead of a solve per weight) and
    ``D~[rr] . geff = s_rr Bm[rr] . (A^-T geff)`` (``s_rr = c_max / cap``).  Returns False (``x.wn``
    then holds a feasible point) when ``h^2 Q`` has no Cholesky factor or the solve stops short of
    ``QP_TOL``."""
    nv = m.nv
    V = x.vx
    Lq = x.Lq[b]
    if not cholesky_factor(x.M[b], Lq, nv):
        return False
    W = x.QA[b]  # (nv, nv) in the formed path's matrix, unused here: n > nv
    ih = 1.0 / h
    z = x.dn[b]  # (the projection's Newton direction, free between projections)
    for k in range(nv):  # column k of W
        for j in range(nv):
            z[j] = Lq[j, k] * ih if j >= k else 0.0
        lu_solve_transpose(x.LU[b], x.piv[b], z, nv)
        for j in range(nv):
            W[j, k] = z[j]
    for j in range(nv):
        z[j] = geff[j]
    lu_solve_transpose(x.LU[b], x.piv[b], z, nv)  # A^-T geff
    Rt = x.HX[b]
    Bm = x.Bm[b]
    qb = x.qb[b]
    sig = 0.0
    for ci in range(nc):  # row rr of R^T = s_rr Bm[rr] W; sigma = the largest |row|^2
        cap = x.cap[b, ci]
        scale = pgm_qp_scale(cap, cmax)
        for i in range(V):
            rr = ci * V + i
            Rr = Rt[rr]
            Br = Bm[rr]
            for k in range(nv):
                Rr[k] = 0.0
            dg = 0.0
            for j in range(nv):  # row by row of W (contiguous)
                bj = Br[j]
                Wj = W[j]
                dg += bj * z[j]
                for k in range(nv):
                    Rr[k] += bj * Wj[k]
            qb[rr] = dg * scale  # D~[rr] . geff, for qb below
            s2 = 0.0
            for k in range(nv):
                Rr[k] *= scale
                s2 += Rr[k] * Rr[k]
            if s2 > sig:
                sig = s2
    if not (sig > 0.0):
        sig = 1.0
    prox = 2.0 * sig / gamma
    inv = 1.0 / (sig + prox)
    c = prox * inv
    if c < DUAL_MIN_C:  # the dual's x(lambda) carries round-off times 1/c: past QP_TOL
        return False
    si = math.sqrt(inv)
    y = x.dq[b]
    for k in range(nv):
        y[k] = 0.0
    for rr in range(n):
        for k in range(nv):
            Rt[rr, k] *= si
            y[k] += Rt[rr, k] * u0[rr]
    for rr in range(n):  # -(D~^T geff + (R^T R + prox I) u0) / (sigma + prox)
        dg = qb[rr]
        ry = 0.0
        for k in range(nv):
            ry += Rt[rr, k] * y[k]
        qb[rr] = -(dg * inv + ry + c * u0[rr])
    ok = qp_solve_dual(Rt, c, qb, n, nv, x.lo[b], x.hi[b], x.bstart[b, : nc + 1], x.btype[b, :nc], x.bmu[b, :nc],
                       x.wn[b], QP_MAXIT_DUAL, QP_TOL, x.qw[b], x.qinfo[b])  # fmt: skip
    st[S_QPIT] += x.qinfo[b, 0]
    if ok:
        x.qc[b] = c
    return ok


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
        scale = pgm_qp_scale(cap, cmax)
        x.bstart[b, ci] = V * ci
        x.btype[b, ci] = QP_SIMPLEX if live else QP_BOX
        x.bmu[b, ci] = cap / cmax if live else 0.0
        for i in range(V):
            rr = ci * V + i
            x.lo[b, rr] = 0.0
            x.hi[b, rr] = 0.0
            u[rr] = wts[rr] / scale if live else 0.0
    x.bstart[b, nc] = V * nc
    u0 = x.qw[b, x.qw.shape[1] - 1]  # the linearisation point (a row no solver reaches before qb is built)
    for rr in range(n):
        u0[rr] = u[rr]
    x.qc[b] = 0.0
    if pgm_qp_dual_range(n, nv) and pgm_qp_dual(m, x, b, n, nc, h, gamma, geff, u0, cmax, st):
        st[S_QP] += 1.0
        pgm_qp_unscale(x, b, nc, cmax)
        return True
    for rr in range(n):
        for j in range(nv):
            D[rr, j] = x.Bm[b, rr, j]
    lu_solve_rows(x.LU[b], x.piv[b], D, 0, n, nv)  # D = A^-1 B, four right-hand sides at a time
    for ci in range(nc):
        cap = x.cap[b, ci]
        scale = pgm_qp_scale(cap, cmax)
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
    matvec_add(QA, u0, qb, n, n)
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
    pgm_qp_unscale(x, b, nc, cmax)
    return True


@kernel
def pgm_qp_unscale(x, b, nc, cmax):
    """The solved force-scaled ``u`` in ``x.wn`` back to weights (an inert candidate keeps its own)."""
    V = x.vx
    for ci in range(nc):
        cap = x.cap[b, ci]
        live = cap > CAP_EPS * cmax
        for i in range(V):
            rr = ci * V + i
            x.wn[b, rr] = x.wn[b, rr] * cmax / cap if live else x.wts[b, rr]
