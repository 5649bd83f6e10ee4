"""Generalized forces and accelerations shared by the explicit integrators."""
from collections import namedtuple

import numpy as np

from pbsim.backends.kernel import kernel
from pbsim.contact.penalty import contact_generalized_forces
from pbsim.control.solve import joint_forces, solve_and_clamp
from pbsim.dynamics.kinematics import velocity_pass, world_pass

# Scratch for the explicit integrators (leading axis B).
# qs: nq scratch for the SPD prediction q (+) dt v; tc/kc: the control's own torque and Kd dt
# (for clamping and logging); Md, hv, zv: mass matrix, bias and a zero row for the DF/SF solvers.
StepWork = namedtuple("StepWork", "qa va tau arm dq dqs kq kv qs tc kc Md hv zv")


def make_step_work(model, batch: int, stages: int = 4, dense: bool | None = None) -> StepWork:
    """Scratch for ``batch`` states.  ``dense``: allocate the (B, nv, nv) matrix the DF/SF SPD
    solvers need (None: only when it takes <= 64 MiB; without it DF/SF fall back to MABA)."""
    B, nq, nv = max(batch, 1), model.nq, model.nv
    z = np.zeros
    if dense is None:
        dense = B * nv * nv * 8 <= 64 * 2 ** 20
    nd = nv if dense else 1
    return StepWork(z((B, nq)), z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)),
                    z((B, stages, nv)), z((B, stages, nv)), z((B, nq)), z((B, nv)), z((B, nv)),
                    z((B, nd, nd)), z((B, nv)), z((B, nv)))


@kernel
def forward_dynamics(m, s, c, w, sw, b, q, v, dt, implicit_damping, qdd):
    """qdd for state rows (q, v): control torques (SPD through MABA, or DF/SF as the control
    selects; effort clamping if asked), joint damping, contact.

    With ``implicit_damping`` the damping torque is evaluated at the new velocity
    (``-d (v + dt qdd)``), which ABA absorbs like the SPD term (D += dt d)."""
    joint_forces(m, c, w, sw, b, q, v, dt, implicit_damping)
    velocity_pass(m, w, b, q, v)
    if s.npts > 0:
        world_pass(m, w, b)
        contact_generalized_forces(m, s, w, b, q, v, sw.tau[b])
    solve_and_clamp(m, c, w, sw, b, q, v, qdd)
