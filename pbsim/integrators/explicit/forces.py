"""Generalized forces and accelerations of the explicit integrators (control, damping, contact)."""
from pbsim.jit import kernel
from pbsim.contact.penalty import contact_generalized_forces, pair_generalized_forces
from pbsim.control.control import DF, SF, SPD
from pbsim.control.solve import joint_forces, limit_solve, solve_and_clamp  # noqa: F401 (limit_solve re-exported)
# the explicit integrators' scratch (sw) lives below them, where the control solvers allocate it too
from pbsim.control.stepwork import StepWork, make_step_work  # noqa: F401 (re-exported)
from pbsim.dynamics.kinematics import velocity_pass, world_pass


# Optional parts of ``forward_dynamics``: the kernels only each feature reaches.  Steps compile
# the variant a run uses (pbsim.jit.Variants), so a plain run does not compile the
# dense solvers and contact (-35 % first-run compile).  Two features, not one per option: each
# combination used is a compilation of its own.
FEATURES = {
    # SPD by the DF/SF factorizations (paper 001; MABA needs neither) and effort clamping
    "spd_extra": ("spd_dense", "spd_sparse", "clamp_active_set", "preclip_explicit"),
    "contact": ("contact_generalized_forces",),  # penalty contact with the scene
    "body_contact": ("pair_generalized_forces",),  # penalty contact between bodies
    # equality constraints (pbsim.dynamics.equality)
    "equality": ("equality_accel", "equality_project", "equality_step_target", "equality_correction",
                 "equality_project_velocity"),
    "limits": ("limit_solve",),  # MuJoCo's joint-limit constraint (pbsim.dynamics.limits)
}


def features_used(kc, ks, km=None) -> dict:
    """Which of :data:`FEATURES` a step with control arrays ``kc``, scene arrays ``ks`` and model
    arrays ``km`` runs, from the same flags ``forward_dynamics`` branches on."""
    return {"spd_extra": bool((kc.mode == SPD and kc.solver in (DF, SF)) or kc.clamp != 0),
            "contact": bool(ks.npts > 0), "body_contact": bool(ks.nitem > 0),
            "equality": km is not None and km.eq_type.shape[0] > 0,
            "limits": km is not None and (km.lim_kind.shape[0] > 0 or bool((km.lim_arm > 0).any()))}


@kernel
def forward_dynamics(m, s, c, w, sw, b, q, v, dt, implicit_damping, qdd):
    """qdd for state rows (q, v): control torques (SPD through MABA, or DF/SF as the control
    selects; effort clamping if asked), joint damping, contact.

    With ``implicit_damping`` the damping torque is evaluated at the new velocity
    (``-d (v + dt qdd)``), which ABA absorbs like the SPD term (D += dt d)."""
    joint_forces(m, c, w, sw, b, q, v, dt, implicit_damping, True)
    velocity_pass(m, w, b, q, v)
    if s.npts > 0 or s.nitem > 0:
        world_pass(m, w, b)
        if s.npts > 0:
            contact_generalized_forces(m, s, w, b, q, v, sw.tau[b])
        if s.nitem > 0:
            pair_generalized_forces(m, s, w, b, q, v, sw.tau[b])
    solve_and_clamp(m, c, w, sw, b, q, v, qdd)
