"""The deepest contact point of a state (the integrators' penetration diagnostic); the signed depths
at the explicit prediction ``q (+) dt v`` (the contact set of ``ne_mdp`` / ``nmdp``)."""
import numpy as np
from numba import prange

from pbsim.backends.kernel import kernel
from pbsim.contact.query import contact_detect, item_culled, pair_detect
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
def max_pair_depth(s, Rw, pw):
    """Largest depth of a body-body point in the shape it faces (world poses ``Rw``, ``pw`` of every
    body; the broadphase skips items whose bounding spheres are apart)."""
    dmax = 0.0
    for it in range(s.nitem):
        A = s.it_a[it]
        B = s.it_b[it]
        if item_culled(s, it, Rw[A], pw[A], Rw[B], pw[B], 0.0):
            continue
        for k in range(s.it_start[it], s.it_start[it + 1]):
            _x, _y, _z, sd, _nx, _ny, _nz = pair_detect(s, k, Rw[A], pw[A], Rw[B], pw[B])
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
