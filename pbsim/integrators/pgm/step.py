"""Algorithm 2 of paper 002 as one step kernel: adaptive dyadic sub-steps around Algorithm 1 (the contract's step).

**Algorithm 2** (B5 item 3) as a loop over dyadic ticks (no recursion, so it is one kernel): the
step is ``2^depth`` ticks; a sub-step of level L spans ``2^(depth-L)`` ticks and carries
``(theta, thetadot)`` to the next; a PGM that failed (initial projection failed or the LU was
singular) or ran out of ``max_iterations`` (the paper's Algorithm 1 has no cap: its not
converging is the divergence Algorithm 2 reacts to) splits the current sub-step in two (L + 1);
after a sub-step completes, the level goes back up while the position closes the parent's
interval -- exactly the recursion's order (the second half is tried at the size of the half,
whatever the first half became).  At ``L = depth`` (``alpha = 2^-depth``, 1/64 by default) a
failure is the **cap**: the sub-step takes the projection iterate with the smallest ``|G|_inf``
(out of iterations: its last accepted iterate, feasible) and the step is flagged (``stats[CAP]``,
converged 0), never silently.  **Step limiter** (ours, issue 30; option ``depth_limit``): a sub-step
that converged but drove a contact point deeper than ``Scene.max_penetration`` (and deeper than
the deepest point at its start, by more than ``DEEPER_TOL``) is split the same way, down to the same cap.

``info`` = [outer iterations (all sub-steps), largest final |G|_inf, converged (every sub-step
stopped by xtol, no cap), min alpha]; ``stats`` = [sub-steps, projection failures, QP solves that
did not reach their tolerance, cap hit, sub-steps at the iteration cap, rejections, Newton
iterations, largest final |G|_inf, largest |G|_inf of an accepted iterate (the initial projection
included), accepted iterates whose K rose (0 by construction: a check), K after the initial
projection and K at the end, both of the last sub-step (Theorem 5.5's invariants, B-T2), then the
work: evaluations of G (with A, B), LU factorizations, QPs, QP iterations (all sub-steps), then the
largest number of body-body candidates a (sub-)step's contact set dropped].
"""

from __future__ import annotations

import numpy as np

from pbsim.jit import kernel
from pbsim.contact.depth import max_depth_state
from pbsim.dynamics.equality import equality_project_mass
from pbsim.integrators.pgm.problem import S_CAP, S_ITCAP, S_OVER, S_RES, S_SUB, pgm_velocity
from pbsim.integrators.pgm.solve import pgm_solve


# the step limiter's "deeper than it began": by more than this [m].  Without it a point resting just
# past the bound, its depth moving by round-off, split every step to the cap: pybullet_data's a1 at
# rest 50.8 mm deep under nmdp at 20 ms ran 64 sub-steps a step, 0.9 s a step (issue 30)
DEEPER_TOL = 1e-6


@kernel
def pgm_too_deep(m, s, w, x, b, q0, th):
    """Whether the sub-step from ``q0`` to ``th`` left a contact point deeper than ``x.maxpen``
    (Scene.max_penetration) and deeper than the deepest at ``q0`` by more than ``DEEPER_TOL``: what
    the step limiter halves (a point already resting that deep does not trigger it: NMDP has no term
    that pushes it out)."""
    dend = max_depth_state(m, s, w, b, th)
    if not (dend > x.maxpen):
        return False
    return dend > max_depth_state(m, s, w, b, q0) + DEEPER_TOL


@kernel
def pgm_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """The contract's step: Algorithm 2 (dyadic sub-steps down to ``dt / 2^depth``) around
    Algorithm 1, ``(q[b], v[b]) -> (qn[b], vn[b])``; ``x.info[b]``, ``x.stats[b]`` (module
    docstring)."""
    nv = m.nv
    st = x.stats[b]
    for i in range(st.shape[0]):
        st[i] = 0.0
    q0 = x.q0[b]
    v0 = x.v0[b]
    for j in range(m.nq):
        q0[j] = q[b, j]
    for j in range(nv):
        v0[j] = v[b, j]
    depth = x.depth
    N = np.int64(1) << depth
    pos = np.int64(0)
    L = np.int64(0)
    its = 0
    rmax = 0.0
    conv = True
    amin = 1.0
    th = x.th[b]
    while pos < N:
        h = dt / float(np.int64(1) << L)
        status, k, res = pgm_solve(m, s, c, w, sw, x, b, q0, v0, h, dt, st)
        its += k
        if status != 0 and L < depth:  # failed or out of iterations: two halves
            L += 1
            continue
        if status == 0 and L < depth and x.maxpen > 0.0 and pgm_too_deep(m, s, w, x, b, q0, th):
            L += 1  # the step limiter (ours): a sub-step that drove a point past the bound, two halves
            continue
        if status == 2:
            st[S_CAP] = 1.0
            conv = False
        elif status == 1:
            st[S_ITCAP] += 1.0
            st[S_CAP] = 1.0
            conv = False
        if m.eq_type.shape[0] > 0:  # equality constraints (pbd_nmdp): th onto them, in the mass metric
            equality_project_mass(m, w, b, th, 2)
        pgm_velocity(m, w, x, b, q0, v0, th, h)
        for j in range(m.nq):
            q0[j] = th[j]
        for j in range(nv):
            v0[j] = x.vel[b, j]
        if not (res <= rmax):
            rmax = res
        a = h / dt
        if a < amin:
            amin = a
        st[S_SUB] += 1.0
        pos += N >> L
        while L > 0 and pos % (N >> (L - 1)) == 0:
            L -= 1
    for j in range(m.nq):
        qn[b, j] = q0[j]
    for j in range(nv):
        vn[b, j] = v0[j]
    st[S_RES] = rmax
    if st[S_OVER] > 0.0:  # the body-body candidate buffer overflowed: flagged, never silent
        conv = False
    info = x.info[b]
    info[0] = its
    info[1] = rmax
    info[2] = 1.0 if conv else 0.0
    info[3] = amin
