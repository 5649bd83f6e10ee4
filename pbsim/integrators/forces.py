"""Generalized forces and accelerations shared by the explicit integrators."""
from pbsim.backends.kernel import kernel
from pbsim.contact.penalty import contact_generalized_forces
from pbsim.control.solve import joint_forces, solve_and_clamp
# the explicit integrators' scratch (sw) lives below them, where the control solvers allocate it too
from pbsim.control.stepwork import StepWork, make_step_work  # noqa: F401 (re-exported)
from pbsim.dynamics.kinematics import velocity_pass, world_pass


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
