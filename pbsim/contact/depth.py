"""The deepest contact point of a state (the integrators' penetration diagnostic); the signed depths
at the explicit prediction ``q (+) dt v`` (the contact set of ``ne_mdp`` / ``nmdp``) and the
body-body points that may touch within a step (:func:`pair_candidates_state`: the bounded
candidate buffer of ``nmdp``, ``pbd_nmdp``, ``ne_mdp``, ``ne_dry``)."""
import numpy as np
from numba import prange

from pbsim.jit import kernel
from pbsim.contact.query import contact_detect, item_culled, item_face, pair_detect
from pbsim.dynamics.joints import integrate_config
from pbsim.dynamics.kinematics import fk_state

# A state with a contact point deeper than Scene.max_penetration (default 0.05 m: ten times the
# penalty model's reference depth DELTA_REF = 5 mm -- deeper than any correctly resolved contact,
# shallow enough to catch a body sinking) is flagged: Diagnostics.deep, and by rollout.


@kernel
def max_depth_state(m, s, w, b, q):
    """Largest depth ``max(0, r - phi)`` over the contact points at configuration row ``q``: in the
    environment and in another body's shape (the body-body items)."""
    fk_state(m, w, b, q)
    dmax = 0.0
    for k in range(s.npts):
        body = s.pt_body[k]
        _x, _y, _z, sd, _nx, _ny, _nz = contact_detect(s, k, w.Rw[b, body], w.pw[b, body])
        if sd > dmax:
            dmax = sd
    if s.nitem > 0:
        d = max_pair_depth(s, w.Rw[b], w.pw[b])
        if d > dmax:
            dmax = d
    return dmax


@kernel
def item_depths(s, Rw, pw, out):
    """``out[it]``: the deepest point of body-body item ``it`` in the shape it faces at the world
    poses ``Rw``, ``pw`` (no broadphase: every item; the contact rules' overlap check)."""
    for it in range(s.nitem):
        A = s.it_a[it]
        B = s.it_b[it]
        face = item_face(s, it, Rw[A], pw[A], Rw[B], pw[B])
        dmax = -1e30
        for k in range(s.it_start[it], s.it_start[it + 1]):
            _x, _y, _z, sd, _nx, _ny, _nz = pair_detect(s, k, Rw[A], pw[A], Rw[B], pw[B], face)
            if sd > dmax:
                dmax = sd
        out[it] = dmax


@kernel
def max_pair_depth(s, Rw, pw):
    """Largest depth of a body-body point in the shape it faces (world poses ``Rw``, ``pw`` of every
    body; the broadphase skips items whose bounding spheres are apart)."""
    dmax = 0.0
    for it in range(s.nitem):
        A = s.it_a[it]
        B = s.it_b[it]
        if item_culled(s, it, Rw[A], pw[A], Rw[B], pw[B], 0.0):
            continue
        face = item_face(s, it, Rw[A], pw[A], Rw[B], pw[B])
        for k in range(s.it_start[it], s.it_start[it + 1]):
            _x, _y, _z, sd, _nx, _ny, _nz = pair_detect(s, k, Rw[A], pw[A], Rw[B], pw[B], face)
            if sd > dmax:
                dmax = sd
    return dmax


@kernel
def predicted_depths_state(m, s, w, b, q, v, dt, dq, qp, sdp):
    """``sdp[k]``: the signed depth ``r - phi`` of every contact point k at the predicted
    configuration ``qp = q (+) dt v`` (``dq``: scratch); leaves the world poses at ``q``."""
    for j in range(m.nv):
        dq[j] = dt * v[j]
    integrate_config(m, q, dq, qp, w.Rj[b])
    fk_state(m, w, b, qp)
    for k in range(s.npts):
        body = s.pt_body[k]
        _x, _y, _z, sd, _nx, _ny, _nz = contact_detect(s, k, w.Rw[b, body], w.pw[b, body])
        sdp[k] = sd
    fk_state(m, w, b, q)


@kernel(parallel=True)
def max_depth_batch(m, s, w, q, out):
    """``out[b]``: the deepest contact point of state ``q[b]`` (0 when none touches)."""
    for i in prange(q.shape[0]):
        b = np.int64(i)
        out[b] = max_depth_state(m, s, w, b, q[b])


@kernel
def pair_candidates_state(m, s, w, b, q, qp, predict, Tq, margin, F, nw, ncap, act, cface, csig, cscore):
    """The body-body points that may touch within a step: signed depth above ``-margin`` at the
    configuration ``q`` (whose world poses ``w`` holds on entry) or, with ``predict``, at ``qp`` (the
    explicit prediction), among the items the broadphase keeps with the margin
    (:func:`pbsim.contact.query.item_culled`) at either.  Each is appended to ``act[nw:]`` as ``s.npts
    + k`` (``k``: the body-body point; the candidate index space of the contact sets: below
    ``s.npts`` a point against the environment), with its item's face (:func:`item_face` at q, else
    at qp) in ``cface``, ``sign(n . up)`` of its normal at q in ``csig`` (``up = F[:, 2]``: the
    tangent basis' sign, :func:`pbsim.contact.nmdp.pair_basis`) and its score ``max(sd(q),
    sd(qp))`` in ``cscore``.  The buffer holds ``ncap``: beyond, the deepest (highest score) are
    kept.  Returns ``(appended, dropped)``: ``dropped > 0`` is an overflow, which the callers
    report (never silent).  ``Tq`` (nb, 3, 4): scratch (the poses at q); leaves the world poses
    at q."""
    for i in range(m.nb):
        for r in range(3):
            for c in range(3):
                Tq[i, r, c] = w.Rw[b, i, r, c]
            Tq[i, r, 3] = w.pw[b, i, r]
    if predict:
        fk_state(m, w, b, qp)
    n = 0
    over = 0
    for it in range(s.nitem):
        A = s.it_a[it]
        B = s.it_b[it]
        RA, pA, RB, pB = Tq[A], Tq[A, :, 3], Tq[B], Tq[B, :, 3]
        cut0 = item_culled(s, it, RA, pA, RB, pB, margin)
        cutp = True
        if predict:
            cutp = item_culled(s, it, w.Rw[b, A], w.pw[b, A], w.Rw[b, B], w.pw[b, B], margin)
        if cut0 and cutp:
            continue
        face = item_face(s, it, RA, pA, RB, pB)
        if face < 0 and predict:
            face = item_face(s, it, w.Rw[b, A], w.pw[b, A], w.Rw[b, B], w.pw[b, B])
        for k in range(s.it_start[it], s.it_start[it + 1]):
            _x, _y, _z, sd, nx, ny, nz = pair_detect(s, k, RA, pA, RB, pB, face)
            sc = sd
            if predict:
                _x, _y, _z, sdp, _a, _b, _c = pair_detect(s, k, w.Rw[b, A], w.pw[b, A], w.Rw[b, B], w.pw[b, B], face)
                if sdp > sc:
                    sc = sdp
            if not (sc > -margin):
                continue
            if n < ncap:
                slot = nw + n
                n += 1
            else:  # full: replace the shallowest if this one is deeper
                over += 1
                slot = -1
                lo = sc
                for i in range(nw, nw + ncap):
                    if cscore[i] < lo:
                        lo = cscore[i]
                        slot = i
                if slot < 0:
                    continue
            act[slot] = s.npts + k
            cface[slot] = face
            csig[slot] = 1.0 if nx * F[0, 2] + ny * F[1, 2] + nz * F[2, 2] >= 0.0 else -1.0
            cscore[slot] = sc
    if predict:
        fk_state(m, w, b, q)
    return n, over
