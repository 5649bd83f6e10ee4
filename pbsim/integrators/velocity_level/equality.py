"""Equality constraints in a velocity-level step (``ne_mdp``, ``ne_dry``): the step's velocities
projected onto ``J v+ = -phi / dt`` in the metric of the step's ``Mt``.

With the rows ``phi``, ``J`` of the active constraints at q (:func:`pbsim.dynamics.equality.equality_rows`),
``Y = Mt^-1 J^T`` and ``S = J Y``, the projector ``P u = u - Y S^-1 J u`` is Mt-orthogonal, so
``P Mt^-1`` is symmetric: every velocity of the step is ``v+ = P v* + Y S^-1 (-phi / dt) + P Mt^-1
J_c^T f`` and the contact problem (ne_mdp's QP, ne_dry's LCP) sees the constrained response
``J_c P Mt^-1 J_c^T`` and the constrained free velocity.  The constraint impulses are exact
(bilateral, solved with the contact forces); ``q+ = q (+) dt v+`` is then projected onto
``phi = 0`` (Newton steps in the mass metric until one starts below :data:`PROJECT_TOL`) against
the first-order drift, and ``v+`` onto ``J(q+) v = 0``.  Redundant rows (a planar model's
out-of-plane connect rows) are dropped by :func:`~pbsim.dynamics.equality.eq_factor`.
"""

from __future__ import annotations

from pbsim.jit import kernel, unused
from pbsim.dynamics.equality import (eq_factor, eq_respond, equality_project_mass, equality_project_velocity,
                                     equality_rows)
from pbsim.optim.linalg import cholesky_solve


@kernel
def velocity_eq_rows(m, w, b, q, v):
    """``phi``, ``J`` of the active constraints at q into ``w.er``, ``w.eJ`` (world poses at q expected)."""
    if w.eJ.shape[1] > 0:
        equality_rows(m, w, b, q, v, False, True)


@kernel
def velocity_eq_factor(m, w, b, L, tmp):
    """``Y = Mt^-1 J^T`` into ``w.eY`` and the factor of ``S = J Y`` into ``w.eK``/``w.ed``, from the
    step's Cholesky factor ``L`` of ``Mt`` (``tmp``: nv scratch)."""
    K = w.eJ.shape[1]
    nv = m.nv
    J = w.eJ[b]
    Y = w.eY[b]
    S = w.eK[b]
    for r in range(K):
        cholesky_solve(L, J[r], tmp, nv)
        for j in range(nv):
            Y[j, r] = tmp[j]
    for a in range(K):
        for c in range(K):
            s = 0.0
            for j in range(nv):
                s += J[a, j] * Y[j, c]
            S[a, c] = s  # J Mt^-1 J^T
    eq_factor(S, w.ed[b], K)


@kernel
def velocity_eq_project(m, w, b, u, rate):
    """``u += Y S^-1 (-rate phi - J u)`` (``rate`` 1/dt: the step's free velocity, aimed at
    ``phi(q+) = 0`` to first order; 0: a contact response, projected onto ``J u = 0``)."""
    K = w.eJ.shape[1]
    J = w.eJ[b]
    lam = w.el[b]
    for r in range(K):
        s = -rate * w.er[b, r]
        for j in range(m.nv):
            s -= J[r, j] * u[j]
        lam[r] = s
    eq_respond(m, w, b, K, u)


@kernel
def velocity_eq_free(m, w, b, L, vs, dv, tmp, dt):
    """With equality constraints: their factor from ``L`` (:func:`velocity_eq_factor`) and the free
    velocity ``vs`` (= ``dv``) aimed at them.  Returns whether the model has any (then each contact
    response is to be projected with :func:`velocity_eq_project`)."""
    if w.eJ.shape[1] == 0:
        return False
    velocity_eq_factor(m, w, b, L, tmp)
    velocity_eq_project(m, w, b, vs, 1.0 / dt)
    for j in range(m.nv):
        dv[j] = vs[j]
    return True


@kernel
def velocity_eq_finish(m, w, b, qn, vn):
    """``q+`` onto ``phi = 0`` by Newton steps in the mass metric until a step starts from
    ``|phi| <= PROJECT_TOL`` (at most :data:`PROJECT_MAX`: a forward step's drift at 50 ms needs
    more than the position-based steps' two), then ``v+`` onto ``J(q+) v = 0`` in the same metric
    with that last step's rows and factor (post-stabilisation: ``J(q) v+ = 0`` at the step's start
    leaves ``J(q+) v+ = O(dt)``, which fed the next steps' drift)."""
    K = w.eJ.shape[1]
    if K == 0:
        return
    for _it in range(PROJECT_MAX):
        equality_project_mass(m, w, b, qn, 1)
        r = 0.0
        for k in range(K):
            if abs(w.er[b, k]) > r:
                r = abs(w.er[b, k])
        if r <= PROJECT_TOL:
            break
    equality_project_velocity(m, w, b, vn)


PROJECT_TOL = 1e-13  # [m or rad] the end-of-step projection's last Newton step starts below this
PROJECT_MAX = 8


@kernel
def no_velocity_eq(m, w, b, L, vs, dv, tmp, dt):
    """Stands in for :func:`velocity_eq_free` in a build for a model without equality constraints."""
    return False


# The kernels a velocity-level step reaches only for equality constraints, with their stand-ins:
# compiled only into runs of models that have them (pbsim.jit.Variants).  Compiled into every build,
# they made ne_mdp's CUDA build of a model without them 25 % larger (docs/robots.md).
VELOCITY_EQ_FEATURE = {"velocity_eq_rows": unused, "velocity_eq_free": no_velocity_eq, "velocity_eq_project": unused,
                       "velocity_eq_finish": unused}
