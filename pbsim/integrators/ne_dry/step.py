"""The ``ne_dry`` step kernel: semi-implicit Euler on the Newton-Euler equations with Coulomb dry
friction as a velocity-level LCP (Stewart & Trinkle 1996; Anitescu & Potra 1997), solved by
Lemke's method (:func:`pbsim.optim.lcp.lemke`).

One step of trajectory b, with ``Mt = M(q) + diag(arm)`` (CRBA's dense mass matrix, armature
included, plus the implicit diagonal of :func:`pbsim.control.solve.joint_forces`: stable-PD
``dt Kd``, implicit damping ``dt d``, the passive limits/springs/friction terms)::

    v*  = v + Mt^-1 dt (tau - h(q, v))                        (free velocity)
    v+  = v* + Mt^-1 (Jn^T ln + D^T beta)                     (contact impulses)
    q+  = q (+) dt v+

For every contact point k whose signed depth ``sd_k`` (the scene's one detection,
:func:`pbsim.contact.query.contact_detect`; between bodies :func:`pbsim.contact.query.pair_detect`,
the rows through the relative Jacobian ``J_A - J_B``, at most ``max_contacts`` such points, the
deepest: an overflow flags the step) is above ``-margin``, with gap ``g_k = -sd_k``,
normal ``n_k``, tangents ``t1_k, t2_k`` and the four friction directions
``d_kj = +t1, +t2, -t1, -t2`` (rows ``Jn_k = n_k^T J_lin``, ``D_kj = d_kj^T J_lin``)::

    0 <= ln_k     _|_  Jn_k v+ + b_k            >= 0
    0 <= beta_kj  _|_  D_kj v+ + gamma_k         >= 0
    0 <= gamma_k  _|_  mu ln_k - sum_j beta_kj   >= 0

``gamma_k`` is the slack (at a sliding contact the tangential speed along the cone edge).  With
``G = A Mt^-1 A^T`` over the rows ``A = [n; t1; t2]`` this is the LCP, in ``z = [ln; beta; gamma]``
(sizes nc, 4 nc, nc)::

    | Gnn   Gnd   0 |       | Jn v* + b |
    | Gdn   Gdd   E |  z +  | D v*      |  =  w
    | mu   -E^T   0 |       | 0         |

(``E``: a column of ones per contact over its four directions).  Penetration correction
(Anitescu-style for a gap, Baumgarte-style for a penetration)::

    b_k = g_k / dt                 if g_k >= 0   (a point may close its gap within the step)
    b_k = baumgarte * g_k / dt     if g_k <  0   (a fraction of the depth pushed out per step)

The tangent frame: ``t1`` is the direction of the point's free tangential velocity
``(I - n n^T) J_lin v*`` when that is above :data:`VT_EPS`, else the projection of world x (world y
when the normal is within 25 deg of x) onto the tangent plane; ``t2 = n x t1``.  Aligning a cone
edge with the sliding direction makes the pyramid's sliding friction exactly ``mu ln`` in any
direction (a fixed frame would give ``mu ln / sqrt 2`` to diagonal sliding).

The LCP goes to :func:`pbsim.optim.lcp.lemke_regularized` (Lemke, retried with a growing
diagonal regularization when floating point loses the pivot path; a solution must meet the
conditions to ``LCP_TOL max|q|``).  If that ends without a solution, the frictionless LCP (the
leading ``Gnn`` block) is solved instead, and failing that no contact impulse is applied; either
way the step reports ``converged = 0``.  Effort clamping (``Control(clamp=True)``) re-solves the
step with saturated stable-PD joints fixed at their limit (the explicit integrators' active set,
:func:`pbsim.control.solve.clamp_active_set`), at most 4 times.
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from pbsim.jit import kernel
from pbsim.contact.depth import pair_candidates_state
from pbsim.contact.nmdp import vertex_angle
from pbsim.contact.query import contact_detect, pair_detect
from pbsim.control.solve import joint_forces
from pbsim.dynamics.crba import crba_state
from pbsim.integrators.velocity_level.contact import (BODY_CONTACT, contact_force_jt, contact_normal_row,
                                                      no_pair_candidates)
from pbsim.integrators.velocity_level.equality import (VELOCITY_EQ_FEATURE, velocity_eq_finish, velocity_eq_free,
                                                       velocity_eq_project, velocity_eq_rows)
from pbsim.integrators.velocity_level.finish import clamp_velocity_step, finish_step
from pbsim.integrators.velocity_level.free import bias_forces, factor_or_nan, free_velocity
from pbsim.optim.lcp import LCP_SOLVED, lemke_regularized
from pbsim.optim.linalg import cholesky_solve

VT_EPS = 1e-6  # [m/s] free tangential speed above which the first friction direction follows it
LCP_TOL = 1e-6  # an LCP solution is accepted when it violates the conditions by <= LCP_TOL max|q|

# The step's scratch ``x`` (leading axis B on the arrays, P = max(1, scene contact points)):
# Mt (nv, nv) M(q) then the Cholesky factor of M + diag(arm); h (nv) bias forces; rhs, dv (nv);
# vs (nv) free velocity; zero (nv) zeros (RNEA's qdd); act (P) ints: active points; gap (P);
# nrm, pos (P, 3) normals and world points; A, X (3P, nv) rows [n; t1; t2] per contact and
# Mt^-1 A^T; u (3P) A v*; G (3P, 3P); Ml (6P, 6P), ql, z (6P) the LCP; W (6P + 3, 6P), basis (6P)
# Lemke's scratch; info (4): [pivots, residual, converged, active contacts]; the body-body
# candidates (act >= npts: pbsim.contact.depth.pair_candidates_state): Tq (nb, 3, 4), cface (P) ints,
# csig, csc (P), ovf (1) the candidates the step dropped; mu, margin, baumgarte, maxit: the options
# (maxit 0: automatic, 100 + 10 x the LCP size), F (3, 3) the up frame, npair the body-body buffer's
# size.
NeDryX = namedtuple("NeDryX", "Mt h rhs dv vs zero act gap nrm pos A X u G Ml ql z W basis info "
                              "Tq cface csig csc ovf mu margin baumgarte maxit F npair")
BATCHED = ("Mt", "h", "rhs", "dv", "vs", "zero", "act", "gap", "nrm", "pos", "A", "X", "u", "G", "Ml",
           "ql", "z", "W", "basis", "info", "Tq", "cface", "csig", "csc", "ovf")


def make_ne_dry_extra(model, npts: int, B: int, mu: float, margin: float, baumgarte: float, maxit: int,
                      npair: int = 0) -> NeDryX:
    """Scratch for ``B`` trajectories of ``model`` with ``npts`` scene contact points and room for
    ``npair`` body-body candidates."""
    from pbsim.contact.nmdp import tangent_frame

    nv = max(model.nv, 1)
    P = max(int(npts) + int(npair), 1)
    B = max(int(B), 1)
    z = np.zeros
    L = 6 * P
    return NeDryX(z((B, nv, nv)), z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)),
                  z((B, P), np.int64), z((B, P)), z((B, P, 3)), z((B, P, 3)), z((B, 3 * P, nv)),
                  z((B, 3 * P, nv)), z((B, 3 * P)), z((B, 3 * P, 3 * P)), z((B, L, L)), z((B, L)), z((B, L)),
                  z((B, L + 3, L)), z((B, L), np.int64), z((B, 4)),
                  z((B, max(model.nb, 1), 3, 4)), z((B, P), np.int64), np.ones((B, P)), z((B, P)), z((B, 1)),
                  float(mu), float(margin), float(baumgarte), int(maxit), tangent_frame(model), int(npair))


@kernel
def _tangent(nx, ny, nz):
    """A unit tangent: world x projected on the plane normal to n (world y if n is near x)."""
    if abs(nx) < 0.9:
        ax, ay, az = 1.0, 0.0, 0.0
    else:
        ax, ay, az = 0.0, 1.0, 0.0
    d = ax * nx + ay * ny + az * nz
    tx, ty, tz = ax - d * nx, ay - d * ny, az - d * nz
    s = math.sqrt(tx * tx + ty * ty + tz * tz)
    return tx / s, ty / s, tz / s


@kernel
def ne_dry_detect(m, s, w, x, b):
    """Active contact points of state b (world poses done): their indices, gaps, normals and
    world points into ``x``; returns their number."""
    nc = 0
    for k in range(s.npts):
        body = s.pt_body[k]
        px, py, pz, sd, nx, ny, nz = contact_detect(s, k, w.Rw[b, body], w.pw[b, body])
        if sd > -x.margin:
            x.act[b, nc] = k
            x.gap[b, nc] = -sd
            x.nrm[b, nc, 0], x.nrm[b, nc, 1], x.nrm[b, nc, 2] = nx, ny, nz
            x.pos[b, nc, 0], x.pos[b, nc, 1], x.pos[b, nc, 2] = px, py, pz
            nc += 1
    return nc


@kernel
def ne_dry_pair_detect(m, s, w, x, b, q, nw):
    """The body-body points with signed depth above ``-margin`` at q (world poses done), after the
    ``nw`` environment contacts: candidates ``s.npts + k`` (:func:`pbsim.contact.depth.
    pair_candidates_state`, at most ``x.npair``, the deepest kept, the number dropped in ``x.ovf``)
    with their gap ``-sd``, normal (out of the other body's shape) and point.  Returns how many."""
    n, over = pair_candidates_state(m, s, w, b, q, q, False, x.Tq[b], x.margin, x.F, nw, x.npair, x.act[b],
                                    x.cface[b], x.csig[b], x.csc[b])
    x.ovf[b, 0] = over
    for c in range(nw, nw + n):
        k = x.act[b, c] - s.npts
        it = s.pp_item[k]
        A = s.it_a[it]
        B = s.it_b[it]
        px, py, pz, sd, nx, ny, nz = pair_detect(s, k, w.Rw[b, A], w.pw[b, A], w.Rw[b, B], w.pw[b, B], x.cface[b, c])
        x.gap[b, c] = -sd
        x.nrm[b, c, 0], x.nrm[b, c, 1], x.nrm[b, c, 2] = nx, ny, nz
        x.pos[b, c, 0], x.pos[b, c, 1], x.pos[b, c, 2] = px, py, pz
    return n


@kernel
def ne_dry_rows(m, s, w, x, b, nc, nv):
    """Rows ``[J^T n; J^T t1; J^T t2]`` of the active contacts (tangents aligned with the free
    tangential velocity ``x.vs``) and ``u = A v*``; contacts that cannot move are dropped.
    Returns the number kept."""
    A = x.A[b]
    vs = x.vs[b]
    kept = 0
    for c in range(nc):
        k = x.act[b, c]
        nx, ny, nz = x.nrm[b, c, 0], x.nrm[b, c, 1], x.nrm[b, c, 2]
        px, py, pz = x.pos[b, c, 0], x.pos[b, c, 1], x.pos[b, c, 2]
        t1x, t1y, t1z = _tangent(nx, ny, nz)
        t2x, t2y, t2z = ny * t1z - nz * t1y, nz * t1x - nx * t1z, nx * t1y - ny * t1x
        r0 = 3 * kept
        for r in range(1, 3):
            for j in range(nv):
                A[r0 + r, j] = 0.0
        if not contact_normal_row(m, s, w, b, k, px, py, pz, nx, ny, nz, A[r0], nv):
            continue
        contact_force_jt(m, s, w, b, k, px, py, pz, t1x, t1y, t1z, A[r0 + 1])
        contact_force_jt(m, s, w, b, k, px, py, pz, t2x, t2y, t2z, A[r0 + 2])
        for r in range(3):
            acc = 0.0
            for j in range(nv):
                acc += A[r0 + r, j] * vs[j]
            x.u[b, r0 + r] = acc
        u1 = x.u[b, r0 + 1]
        u2 = x.u[b, r0 + 2]
        sp = math.sqrt(u1 * u1 + u2 * u2)
        if sp > VT_EPS:  # rotate (t1, t2) so that t1 follows the tangential velocity
            ca = u1 / sp
            sa = u2 / sp
            for j in range(nv):
                a1 = A[r0 + 1, j]
                a2 = A[r0 + 2, j]
                A[r0 + 1, j] = ca * a1 + sa * a2
                A[r0 + 2, j] = -sa * a1 + ca * a2
            x.u[b, r0 + 1] = sp
            x.u[b, r0 + 2] = 0.0
        if kept != c:
            x.act[b, kept] = k
            x.gap[b, kept] = x.gap[b, c]
        kept += 1
    return kept


@kernel
def ne_dry_lcp(s, x, b, nc, dt):
    """The LCP (``x.Ml``, ``x.ql``, size 6 nc) from ``G``, ``u`` and the gaps (friction: ``x.mu``,
    a body-body point's own ``s.pp_mu``)."""
    G = x.G[b]
    Ml = x.Ml[b]
    ql = x.ql[b]
    N = 6 * nc
    mu = x.mu
    for i in range(N):
        for j in range(N):
            Ml[i, j] = 0.0
    for k in range(nc):
        nk = 3 * k
        for l in range(nc):
            nl = 3 * l
            Ml[k, l] = G[nk, nl]
            for mm in range(4):
                cm, sm = vertex_angle(mm, 4)
                gnd = cm * G[nk, nl + 1] + sm * G[nk, nl + 2]
                Ml[k, nc + 4 * l + mm] = gnd
                Ml[nc + 4 * l + mm, k] = gnd
            for jj in range(4):
                cj, sj = vertex_angle(jj, 4)
                for mm in range(4):
                    cm, sm = vertex_angle(mm, 4)
                    Ml[nc + 4 * k + jj, nc + 4 * l + mm] = (cj * (cm * G[nk + 1, nl + 1] + sm * G[nk + 1, nl + 2])
                                                            + sj * (cm * G[nk + 2, nl + 1] + sm * G[nk + 2, nl + 2]))
        for jj in range(4):
            Ml[nc + 4 * k + jj, 5 * nc + k] = 1.0
            Ml[5 * nc + k, nc + 4 * k + jj] = -1.0
        kp = x.act[b, k]
        Ml[5 * nc + k, k] = mu if kp < s.npts else s.pp_mu[kp - s.npts]
        g = x.gap[b, k]
        bias = g / dt if g >= 0.0 else x.baumgarte * g / dt
        ql[k] = x.u[b, nk] + bias
        for jj in range(4):
            cj, sj = vertex_angle(jj, 4)
            ql[nc + 4 * k + jj] = cj * x.u[b, nk + 1] + sj * x.u[b, nk + 2]
        ql[5 * nc + k] = 0.0


@kernel
def ne_dry_velocity(m, s, c, w, sw, x, b, v, dt, nc0, first):
    """v+ into ``x.dv`` from the factored ``x.Mt`` (with the step's ``arm``): free velocity, then
    the contact LCP.  ``first``: build the contact rows (their tangents follow this v*).
    Returns ``(contacts kept, pivots, residual, solved)``."""
    nv = m.nv
    L = x.Mt[b]
    free_velocity(L, sw.tau[b], x.h[b], v, dt, x.rhs[b], x.dv[b], x.vs[b], nv)
    # equality constraints: v* and every contact response projected onto them (velocity_level.equality)
    eq = velocity_eq_free(m, w, b, L, x.vs[b], x.dv[b], x.rhs[b], dt)
    nc = nc0
    if first:
        nc = ne_dry_rows(m, s, w, x, b, nc0, nv)
    else:  # a re-solve (effort clamping): same rows, new v*
        for r in range(3 * nc):
            acc = 0.0
            for j in range(nv):
                acc += x.A[b, r, j] * x.vs[b, j]
            x.u[b, r] = acc
    if nc == 0:
        return 0, 0, 0.0, True
    nr = 3 * nc
    for r in range(nr):
        cholesky_solve(L, x.A[b, r], x.X[b, r], nv)
        if eq:
            velocity_eq_project(m, w, b, x.X[b, r], 0.0)
    for r in range(nr):
        for q in range(r, nr):
            acc = 0.0
            for j in range(nv):
                acc += x.A[b, r, j] * x.X[b, q, j]
            x.G[b, r, q] = acc
            x.G[b, q, r] = acc
    ne_dry_lcp(s, x, b, nc, dt)
    N = 6 * nc
    cap = x.maxit if x.maxit > 0 else 100 + 10 * N
    zz = x.z[b]
    st, piv, eps, res = lemke_regularized(x.Ml[b], x.ql[b], N, zz, cap, x.W[b], x.basis[b], LCP_TOL)
    solved = st == LCP_SOLVED
    if not solved:  # frictionless fallback: the leading Gnn block of the same LCP
        st2, piv2, eps2, res2 = lemke_regularized(x.Ml[b], x.ql[b], nc, zz, cap, x.W[b], x.basis[b], LCP_TOL)
        piv += piv2
        for i in range(nc, N):
            zz[i] = 0.0
        if st2 != LCP_SOLVED:
            for i in range(N):
                zz[i] = 0.0
    for k in range(nc):
        fn = zz[k]
        f1 = zz[nc + 4 * k] - zz[nc + 4 * k + 2]
        f2 = zz[nc + 4 * k + 1] - zz[nc + 4 * k + 3]
        for j in range(nv):
            x.dv[b, j] += fn * x.X[b, 3 * k, j] + f1 * x.X[b, 3 * k + 1, j] + f2 * x.X[b, 3 * k + 2, j]
    return nc, piv, res, solved


@kernel
def ne_dry_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """The contract's step (:class:`pbsim.integrators.base.StepSpec`): one ``ne_dry`` step of
    trajectory b, ``(q[b], v[b]) -> (qn[b], vn[b])``; ``x.info[b]`` = [Lemke pivots, LCP
    residual, converged, active contacts]."""
    nv = m.nv
    qb = q[b]
    vb = v[b]
    joint_forces(m, c, w, sw, b, qb, vb, dt, True, False)
    bias_forces(m, w, b, qb, vb, x.zero[b], x.h[b])  # h(q, v): Coriolis, centrifugal, gravity
    Mt = x.Mt[b]
    crba_state(m, w, b, qb, Mt)  # M(q) (full, symmetric); also the world poses
    # the factor is formed in the lower triangle; M stays in the strict upper one, its diagonal in zero
    for j in range(nv):
        x.zero[b, j] = Mt[j, j]
    velocity_eq_rows(m, w, b, qb, vb)  # equality constraints' rows at q (none: no-op)
    nc0 = ne_dry_detect(m, s, w, x, b) if s.npts > 0 else 0
    x.ovf[b, 0] = 0.0
    if s.nitem > 0:
        nc0 += ne_dry_pair_detect(m, s, w, x, b, qb, nc0)
    nc = 0
    piv = 0
    res = 0.0
    ok = True
    for it in range(5):
        for i in range(nv):
            Mt[i, i] = x.zero[b, i] + sw.arm[b, i]
            for j in range(i):
                Mt[i, j] = Mt[j, i]
        if not factor_or_nan(Mt, x.dv[b], nv):
            ok = False
            break
        nci, p, r, solved = ne_dry_velocity(m, s, c, w, sw, x, b, vb, dt, nc if it > 0 else nc0, it == 0)
        nc = nci
        piv += p
        res = r
        ok = solved
        if c.clamp == 0:
            break
        # effort clamping: saturated stable-PD joints become explicit at their limit
        if not clamp_velocity_step(m, c, sw, b, vb, x.dv[b], dt) or it == 4:
            break
    if x.ovf[b, 0] > 0.0:  # the body-body candidate buffer overflowed: flagged, never silent
        ok = False
    finish_step(m, w, sw, b, qb, x.dv[b], dt, qn, vn, x.info[b], piv, res, ok, nc)
    velocity_eq_finish(m, w, b, qn[b], vn[b])


# the body-body parts, compiled only into runs whose scene has body-body items, and the equality
# constraints, only into runs of models that have them (Variants)
FEATURES = {"body_contact": {**BODY_CONTACT, "ne_dry_pair_detect": no_pair_candidates}, "equality": VELOCITY_EQ_FEATURE}
