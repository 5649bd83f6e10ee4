"""Generalized forces and accelerations shared by the explicit integrators."""
from collections import namedtuple

import numpy as np

from pbsim.backends.kernel import kernel
from pbsim.contact.penalty import contact_generalized_forces
from pbsim.control.pd import control_torques
from pbsim.dynamics.aba import aba_backward, aba_forward, aba_init
from pbsim.dynamics.kinematics import velocity_pass, world_pass

# Scratch for the explicit integrators (leading axis B).
StepWork = namedtuple("StepWork", "qa va tau arm dq dqs kq kv")


def make_step_work(model, batch: int, stages: int = 4) -> StepWork:
    B, nq, nv = max(batch, 1), model.nq, model.nv
    z = np.zeros
    return StepWork(z((B, nq)), z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)),
                    z((B, stages, nv)), z((B, stages, nv)))


@kernel
def forward_dynamics(m, s, c, w, sw, b, q, v, dt, implicit_damping, qdd):
    """qdd for state rows (q, v): control torques (SPD through MABA), joint damping, contact.

    With ``implicit_damping`` the damping torque is evaluated at the new velocity
    (``-d (v + dt qdd)``), which ABA absorbs like the SPD term (D += dt d)."""
    tau = sw.tau[b]
    arm = sw.arm[b]
    control_torques(m, c, b, q, v, dt, sw.dq[b], w.Rj[b], tau, arm)
    for j in range(m.nv):
        tau[j] -= m.damping[j] * v[j]
        if implicit_damping:
            arm[j] += dt * m.damping[j]
    velocity_pass(m, w, b, q, v)
    if s.npts > 0:
        world_pass(m, w, b)
        contact_generalized_forces(m, s, w, b, q, v, tau)
    aba_init(m, w, b)
    aba_backward(m, w, b, tau, arm)
    aba_forward(m, w, b, qdd)
