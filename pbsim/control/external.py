"""External forces on bodies (a push, a drag spring, a payload), as joint torques.

pbsim's one force input every integrator honours is the joint-force vector ``Control(tau=...)``
(explicit, implicit and position-based methods all add it to the generalized forces of the step).
A force ``f`` (world axes, N) applied at a point ``p`` fixed on a body, plus a torque ``m``
(world axes, N m) on that body, is the generalized force

    tau = J(q)^T [m; f],    J = pbsim.point_jacobian(model, q, body, p)  (6 x nv, [angular; linear])

(virtual work: ``tau . qd = m . w + f . v_p``).  :func:`body_wrench_torque` computes it at the
configuration ``q`` the step starts from; the force is held constant over the step (an explicit
load, as pybullet's ``applyExternalForce`` and MuJoCo's ``xfrc_applied``)::

    tau = pbsim.control.body_wrench_torque(model, state.q[0], "hand", force=[0, 0, 50], point=[0, 0, 0.1])
    new, diag = integ.step(state, pbsim.Control(tau=tau), dt)

The viewer's ctrl-drag spring uses this path.  Add it to the torques of any other control
(``Control(mode="spd", tau=tau, ...)``).
"""

from __future__ import annotations

import numpy as np

from pbsim.errors import InputError


def body_wrench_torque(model, q, body, force=(0.0, 0.0, 0.0), point=(0.0, 0.0, 0.0), torque=(0.0, 0.0, 0.0)):
    """(nv,) joint torques equivalent to ``force`` (world axes, N) applied at ``point`` (in the
    body's frame, m) of ``body`` (index or name) plus ``torque`` (world axes, N m) on that body,
    at configuration ``q`` (nq,): ``J(q)^T [torque; force]``."""
    from pbsim.dynamics.api import point_jacobian

    f = np.asarray(force, dtype=np.float64).reshape(-1)
    m = np.asarray(torque, dtype=np.float64).reshape(-1)
    if f.shape != (3,) or m.shape != (3,):
        raise InputError(f"force and torque must be 3-vectors; got shapes {np.shape(force)} and {np.shape(torque)}")
    if not (np.all(np.isfinite(f)) and np.all(np.isfinite(m))):
        raise InputError("force and torque must be finite")
    q = np.asarray(q, dtype=np.float64)
    if q.ndim != 1:
        raise InputError(f"q must have shape ({model.nq},); got {q.shape}")
    J = point_jacobian(model, q, body, point)
    return J.T @ np.concatenate([m, f])
