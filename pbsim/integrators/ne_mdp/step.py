"""The ``ne_mdp`` step kernel: NMDP's baseline NE-MDP (paper 002 Eq. 3 with the sign corrected
to ``+C``, notes/pbfd_nmdp.md B2): forward Newton-Euler with the contact forces chosen by the
maximal dissipation principle, one convex QP per step.

One step of trajectory b, with ``H = M(q)`` (CRBA, armature included), ``C = h(q, v)`` (RNEA's
Coriolis, centrifugal and gravity terms), ``tau`` and the implicit diagonal ``arm`` of
:func:`pbsim.control.solve.joint_forces` (stable PD ``dt Kd``, implicit damping, passive springs /
friction / joint limits: ``H^ = H + diag(arm)``, what MABA adds to ABA's D; with the option
``spd="backward"`` SPD's ``arm`` also takes ``dt^2 Kp``: its torque is then ``-Kp (q + dt v+ - qbar)
- Kd (v+ - vbar)``, at the new state, as in nmdp)::

    v(w) = v + dt H^^-1 (tau - C + sum_x J_x^T V_x w_x)      (V_x: 3 x V vertex matrix at q)
    w*   = argmin 1/2 v(w)^T H v(w)   s.t. w_x >= 0, 1^T w_x <= 1 per contact point
    q+   = q (+) dt v(w*)

With ``v* = v(0)`` and the columns ``X_i = dt H^^-1 J^T v^i`` (one per vertex) the QP is
``min 1/2 w^T (X^T H X) w + (X^T H v*)^T w`` over per-contact simplex blocks.  It is solved in the
variables ``u = w capacity / c_max`` (``c_max``: the step's largest capacity; per contact the capped
simplex ``u >= 0``, ``sum u <= capacity / c_max``, exact projections all the same), scaled by its
largest diagonal entry, by :func:`pbsim.optim.qp.qp_solve_as` (the primal active-set method, from
``u = 0``; FISTA, :func:`~pbsim.optim.qp.qp_solve`, took ~570x longer on the Robosimian's QPs:
docs/benchmarks/nmdp.md, "QP solver"): every variable
then has the scale of its direction, not of its depth (in ``w`` a candidate of capacity zeta
beside one carrying the weight has ~1e-9 of the curvature and FISTA crawls), and the KKT residual
(the natural residual) is in units of the largest capacity: ``tol`` 1e-6 is a force error of about
1e-6 of it.

The contact set is fixed for the step (note B5 item 8): a point is a candidate when its signed depth
``r - phi`` is above ``-margin`` at ``q`` or at the predicted ``q (+) dt v``; so is a body-body point
(contact between bodies, :mod:`pbsim.contact.pairs`: its normal out of the other body's shape, its
row ``(J_A - J_B)^T`` through :func:`pbsim.contact.query.pair_force_jt`, its own mu, the tangent
basis from ``sign(n . up) n``), at most ``max_contacts`` of them (the deepest; an overflow flags
the step: not converged, ``extra["contact_overflow"]``).  Its vertices
(:mod:`pbsim.contact.nmdp`) are evaluated at ``q`` (the forward scheme): capacity
``k d^3 + zeta`` with the depth ``d`` at ``q``, directions ``n + mu t^i`` from the smooth tangent
basis; the force acts at the point's sphere surface ``x - r n`` (the penalty model's point).  A
candidate whose normal row ``J^T n`` vanishes (a point on a fixed body) is dropped.

Effort clamping (``Control(clamp=True)``) re-solves the step with saturated stable-PD joints fixed
at their limit (the explicit integrators' active set), at most 4 times, like ``ne_dry``.
``info`` = [QP iterations, KKT residual, converged, candidate contacts]; converged is 0 when the QP
did not reach ``tol`` within ``maxit`` iterations (or the mass matrix could not be factored).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from pbsim.jit import kernel
from pbsim.contact.depth import pair_candidates_state, predicted_depths_state
from pbsim.contact.nmdp import nmdp_capacity, nmdp_direction, pair_direction
from pbsim.contact.query import contact_detect, pair_detect
from pbsim.control.solve import joint_forces, spd_at_new_state
from pbsim.dynamics.crba import crba_state
from pbsim.integrators.velocity_level.contact import (BODY_CONTACT, contact_force_jt, contact_normal_row,
                                                      no_pair_candidates, no_pair_direction)
from pbsim.integrators.velocity_level.equality import (VELOCITY_EQ_FEATURE, velocity_eq_finish, velocity_eq_free,
                                                       velocity_eq_project, velocity_eq_rows)
from pbsim.integrators.velocity_level.finish import clamp_velocity_step, finish_step
from pbsim.integrators.velocity_level.free import bias_forces, factor_or_nan, free_velocity
from pbsim.optim.linalg import cholesky_solve, gram_symmetric
from pbsim.optim.qp import QP_SIMPLEX, qp_solve_as, qp_work_as

# The step's scratch ``x`` (leading axis B on the arrays; P = max(1, scene points), V = vx, MP = P V):
# H (nv, nv) M(q); L (nv, nv) Cholesky factor of M + diag(arm); h (nv) bias forces; rhs, vs, dv,
# zero (nv); qp (nq) the predicted configuration; sdp (P) signed depths there; act (P) ints:
# candidate points; pos, nrm (P, 3) force points and normals; cap (P) capacities; X, HX (MP, nv)
# the columns dt H^^-1 J^T v^i and H X_i; A (MP, MP), g, w (MP) the QP; lo, hi (MP) unused bounds;
# bstart (P + 1), btype (P), bmu (P) its blocks; qw (qp_work_as) its scratch; qinfo (4) its info;
# info (4) [QP iterations, residual, converged, candidates]; the body-body candidates (kp >= npts in
# act: pbsim.contact.depth.pair_candidates_state): Tq (nb, 3, 4), cface (P) ints, csig, csc (P), ovf
# (1) the candidates the step dropped; F (3, 3) the up frame of the tangent basis; k, zeta, mu, vx,
# margin, maxit, tol, spd, npair (the body-body buffer's size): the options.
SPD_TAN, SPD_BACKWARD = 0, 1  # the spd option: Tan et al.'s stable PD / at the new state (backward Euler)
NeMdpX = namedtuple(
    "NeMdpX",
    "H L h rhs vs dv zero qp sdp act pos nrm cap X HX A g w lo hi bstart btype bmu qw qinfo info "
    "Tq cface csig csc ovf F k zeta mu vx margin maxit tol spd npair",
)
BATCHED = (
    "H", "L", "h", "rhs", "vs", "dv", "zero", "qp", "sdp", "act", "pos", "nrm", "cap", "X", "HX", "A", "g", "w",
    "lo", "hi", "bstart", "btype", "bmu", "qw", "qinfo", "info", "Tq", "cface", "csig", "csc", "ovf",
)  # fmt: skip


def make_ne_mdp_extra(model, npts, B, F, k, zeta, mu, vx, margin, maxit, tol, spd=SPD_TAN, npair=0) -> NeMdpX:
    """Scratch for ``B`` trajectories of ``model`` with ``npts`` scene contact points and room for
    ``npair`` body-body candidates."""
    nv = max(model.nv, 1)
    P = max(int(npts) + int(npair), 1)
    B = max(int(B), 1)
    MP = P * int(vx)
    z = np.zeros
    return NeMdpX(
        z((B, nv, nv)), z((B, nv, nv)), z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)),
        z((B, max(model.nq, 1))), z((B, P)), z((B, P), np.int64), z((B, P, 3)), z((B, P, 3)), z((B, P)),
        z((B, MP, nv)), z((B, MP, nv)), z((B, MP, MP)), z((B, MP)), z((B, MP)),
        np.full((B, MP), -np.inf), np.full((B, MP), np.inf), z((B, P + 1), np.int64),
        np.full((B, P), QP_SIMPLEX, np.int64), z((B, P)), z((B, *qp_work_as(MP, 2 * nv + 16).shape)), z((B, 4)), z((B, 4)),
        z((B, max(model.nb, 1), 3, 4)), z((B, P), np.int64), np.ones((B, P)), z((B, P)), z((B, 1)),
        np.ascontiguousarray(F, dtype=np.float64), float(k), float(zeta), float(mu), int(vx), float(margin),
        int(maxit), float(tol), int(spd), int(npair),
    )  # fmt: skip


@kernel
def ne_mdp_candidates(m, s, w, x, b, q, v, dt, dq):
    """The step's contact set (module docstring) into ``x.act``/``pos``/``nrm``/``cap``; returns
    its size.  Leaves the world poses at q."""
    predicted_depths_state(m, s, w, b, q, v, dt, dq, x.qp[b], x.sdp[b])
    nc = 0
    for kp in range(s.npts):
        body = s.pt_body[kp]
        px, py, pz, sd, nx, ny, nz = contact_detect(s, kp, w.Rw[b, body], w.pw[b, body])
        if not (sd > -x.margin or x.sdp[b, kp] > -x.margin):
            continue
        r = s.pt_radius[kp]
        x.act[b, nc] = kp
        x.pos[b, nc, 0], x.pos[b, nc, 1], x.pos[b, nc, 2] = px - r * nx, py - r * ny, pz - r * nz
        x.nrm[b, nc, 0], x.nrm[b, nc, 1], x.nrm[b, nc, 2] = nx, ny, nz
        x.cap[b, nc] = nmdp_capacity(x.k, x.zeta, sd, True)
        nc += 1
    x.ovf[b, 0] = 0.0
    if s.nitem > 0:
        nc += ne_mdp_pair_candidates(m, s, w, x, b, q, nc)
    return nc


@kernel
def ne_mdp_pair_candidates(m, s, w, x, b, q, nw):
    """The body-body part of the contact set after the ``nw`` environment candidates (signed depth
    above ``-margin`` at q or at the prediction ``x.qp``: :func:`pbsim.contact.depth.
    pair_candidates_state`, at most ``x.npair``, the deepest kept, the number dropped in
    ``x.ovf``): force point ``x - r n``, normal and capacity at q.  Returns how many it added."""
    n, over = pair_candidates_state(m, s, w, b, q, x.qp[b], True, x.Tq[b], x.margin, x.F, nw, x.npair, x.act[b],
                                    x.cface[b], x.csig[b], x.csc[b])
    x.ovf[b, 0] = over
    for c in range(nw, nw + n):
        k = x.act[b, c] - s.npts
        it = s.pp_item[k]
        A = s.it_a[it]
        B = s.it_b[it]
        px, py, pz, sd, nx, ny, nz = pair_detect(s, k, w.Rw[b, A], w.pw[b, A], w.Rw[b, B], w.pw[b, B], x.cface[b, c])
        r = s.pp_radius[k]
        x.pos[b, c, 0], x.pos[b, c, 1], x.pos[b, c, 2] = px - r * nx, py - r * ny, pz - r * nz
        x.nrm[b, c, 0], x.nrm[b, c, 1], x.nrm[b, c, 2] = nx, ny, nz
        x.cap[b, c] = nmdp_capacity(x.k, x.zeta, sd, True)
    return n


@kernel
def ne_mdp_columns(m, s, w, x, b, nc):
    """``J^T (n + mu t^i)`` of every candidate's vertex directions into the rows of ``x.X`` (poses
    at q); drops the candidates that cannot move or have no capacity.  Returns the number kept."""
    nv = m.nv
    V = x.vx
    X = x.X[b]
    kept = 0
    for c in range(nc):
        kp = x.act[b, c]
        nx, ny, nz = x.nrm[b, c, 0], x.nrm[b, c, 1], x.nrm[b, c, 2]
        px, py, pz = x.pos[b, c, 0], x.pos[b, c, 1], x.pos[b, c, 2]
        r0 = V * kept
        if not contact_normal_row(m, s, w, b, kp, px, py, pz, nx, ny, nz, X[r0], nv):
            continue
        cap = x.cap[b, c]
        if not (cap > 0.0):  # zeta = 0 and out of contact: no force
            continue
        pair = kp >= s.npts
        for i in range(V):
            if pair:  # a body-body point: its own mu, the basis sign of the contact set
                ux, uy, uz = pair_direction(x.F, s.pp_mu[kp - s.npts], x.csig[b, c], nx, ny, nz, i, V)
            else:
                ux, uy, uz = nmdp_direction(x.F, x.mu, nx, ny, nz, i, V)
            for j in range(nv):
                X[r0 + i, j] = 0.0
            contact_force_jt(m, s, w, b, kp, px, py, pz, ux, uy, uz, X[r0 + i])
        if kept != c:  # (a re-solve reads the kept candidates' points and normals again)
            x.act[b, kept] = kp
            x.cap[b, kept] = cap
            x.csig[b, kept] = x.csig[b, c]
            for j in range(3):
                x.pos[b, kept, j] = x.pos[b, c, j]
                x.nrm[b, kept, j] = x.nrm[b, c, j]
        kept += 1
    return kept


@kernel
def ne_mdp_velocity(m, w, x, b, v, tau, dt, nc, Jrows):
    """v(w*) into ``x.dv`` from the factor ``x.L`` (``Jrows``: the rows of ``x.X`` are still
    ``J^T (n + mu t^i)``; they are overwritten by ``dt H^^-1 J^T (n + mu t^i)``).  The QP is solved
    in the vertex forces ``f = c u`` (``c``: the largest capacity of the step), per contact
    ``u >= 0``, ``sum u <= capacity / c`` (capped simplices): every variable has the same scale
    whatever its point's depth (in the weights ``w`` a point of capacity zeta next to one of the
    weight's capacity makes FISTA crawl), scaled by the largest diagonal entry.  Returns
    ``(iterations, residual, solved)``."""
    nv = m.nv
    L = x.L[b]
    free_velocity(L, tau, x.h[b], v, dt, x.rhs[b], x.dv[b], x.vs[b], nv)
    # equality constraints: v* and every contact response projected onto them (velocity_level.equality)
    eq = velocity_eq_free(m, w, b, L, x.vs[b], x.dv[b], x.rhs[b], dt)
    if nc == 0:
        return 0, 0.0, True
    V = x.vx
    n = V * nc
    X = x.X[b]
    HX = x.HX[b]
    H = x.H[b]
    cmax = 0.0
    for c in range(nc):
        if x.cap[b, c] > cmax:
            cmax = x.cap[b, c]
    for r in range(n):
        if Jrows:
            cholesky_solve(L, X[r], X[r], nv)
            for j in range(nv):
                X[r, j] *= dt * cmax
            if eq:
                velocity_eq_project(m, w, b, X[r], 0.0)
        for i in range(nv):
            acc = 0.0
            for j in range(nv):
                acc += H[i, j] * X[r, j]
            HX[r, i] = acc
    A = x.A[b]
    g = x.g[b]
    for r in range(n):
        acc = 0.0
        for j in range(nv):
            acc += HX[r, j] * x.vs[b, j]
        g[r] = acc
    smax = gram_symmetric(X, HX, n, nv, A)
    wv = x.w[b]
    for r in range(n):
        wv[r] = 0.0
    if not (smax > 0.0):
        return 0, 0.0, smax == 0.0
    inv = 1.0 / smax
    for r in range(n):
        g[r] *= inv
        for c in range(n):
            A[r, c] *= inv
    bs = x.bstart[b]
    for c in range(nc + 1):
        bs[c] = V * c
    for c in range(nc):
        x.bmu[b, c] = x.cap[b, c] / cmax  # the simplex caps (> 0)
    ok = qp_solve_as(A, g, n, x.lo[b], x.hi[b], bs[: nc + 1], x.btype[b, :nc], x.bmu[b, :nc], wv, x.maxit, x.tol,
                  x.qw[b], x.qinfo[b])  # fmt: skip
    for r in range(n):
        wr = wv[r]
        if wr != 0.0:
            for j in range(nv):
                x.dv[b, j] += wr * X[r, j]
    return np.int64(x.qinfo[b, 0]), x.qinfo[b, 1], ok


@kernel
def ne_mdp_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """The contract's step (:class:`pbsim.integrators.base.StepSpec`): one ``ne_mdp`` step of
    trajectory b, ``(q[b], v[b]) -> (qn[b], vn[b])``; ``x.info[b]`` = [QP iterations, KKT
    residual, converged, candidate contacts]."""
    nv = m.nv
    qb = q[b]
    vb = v[b]
    joint_forces(m, c, w, sw, b, qb, vb, dt, True, False)
    if x.spd == SPD_BACKWARD:
        spd_at_new_state(m, c, sw, b, dt)
    nc0 = ne_mdp_candidates(m, s, w, x, b, qb, vb, dt, sw.dq[b]) if s.npts > 0 or s.nitem > 0 else 0
    bias_forces(m, w, b, qb, vb, x.zero[b], x.h[b])  # h(q, v): Coriolis, centrifugal, gravity
    H = x.H[b]
    L = x.L[b]
    crba_state(m, w, b, qb, H)  # M(q); also the world poses at q
    nc = ne_mdp_columns(m, s, w, x, b, nc0) if nc0 > 0 else 0
    velocity_eq_rows(m, w, b, qb, vb)  # equality constraints' rows at q (none: no-op)
    its = 0
    res = 0.0
    ok = True
    for it in range(5):
        for i in range(nv):
            for j in range(nv):
                L[i, j] = H[i, j]
            L[i, i] += sw.arm[b, i]
        if not factor_or_nan(L, x.dv[b], nv):
            ok = False
            break
        if it > 0 and nc > 0:  # a re-solve: the columns J^T v^i again (X was overwritten)
            nc = ne_mdp_columns(m, s, w, x, b, nc)
        i1, r1, solved = ne_mdp_velocity(m, w, x, b, vb, sw.tau[b], dt, nc, True)
        its += i1
        res = r1
        ok = solved
        if c.clamp == 0:
            break
        # effort clamping: saturated stable-PD joints become explicit at their limit
        if not clamp_velocity_step(m, c, sw, b, vb, x.dv[b], dt) or it == 4:
            break
    if x.ovf[b, 0] > 0.0:  # the body-body candidate buffer overflowed: flagged, never silent
        ok = False
    finish_step(m, w, sw, b, qb, x.dv[b], dt, qn, vn, x.info[b], its, res, ok, nc)
    velocity_eq_finish(m, w, b, qn[b], vn[b])


# the body-body parts, compiled only into runs whose scene has body-body items, and the equality
# constraints, only into runs of models that have them (Variants)
FEATURES = {"body_contact": {**BODY_CONTACT, "ne_mdp_pair_candidates": no_pair_candidates,
                              "pair_direction": no_pair_direction}, "equality": VELOCITY_EQ_FEATURE}
