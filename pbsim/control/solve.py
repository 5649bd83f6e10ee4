"""The acceleration of a step under SPD: solver dispatch (MABA / SF / DF) and effort clamping."""
from pbsim.jit import kernel
from pbsim.control.control import DF, SF, SPD
from pbsim.control.dense import spd_dense
from pbsim.control.sparse import spd_sparse
from pbsim.control.pd import control_torques
from pbsim.dynamics.aba import aba_backward, aba_forward, aba_init
from pbsim.dynamics.equality import equality_accel
from pbsim.dynamics.limits import limit_apply, limit_rows
from pbsim.dynamics.mimic import mimic_accel
from pbsim.dynamics.passive import passive_torques
from pbsim.dynamics.fluid import fluid_forces
from pbsim.dynamics.gravcomp import gravcomp_forces
from pbsim.dynamics.tendon import tendon_forces
from pbsim.control.site_actuators import site_forces


@kernel
def accel_solve(m, c, w, sw, b, q, v, tau, arm, qdd):
    """(M + diag(arm)) qdd = tau - h.  SPD with solver DF/SF factorizes M + Kd dt (paper 001
    Sec. 2.3); everything else runs ABA with ``arm`` added to D, i.e. MABA (Eq. 30-46).  Expects
    ``velocity_pass`` done for (q, v).  DF/SF need ``sw.Md`` of size nv (else MABA is used).
    With coupled mimic joints, qdd is the coupled solution (:mod:`pbsim.dynamics.mimic`); with
    equality constraints, the constrained one (:mod:`pbsim.dynamics.equality`)."""
    dense_ok = sw.Md.shape[1] >= m.nv
    if c.mode == SPD and c.solver == DF and dense_ok:
        spd_dense(m, w, b, q, v, tau, arm, sw.Md[b], sw.hv[b], sw.zv[b], qdd)
    elif c.mode == SPD and c.solver == SF and dense_ok:
        spd_sparse(m, w, b, q, v, tau, arm, c.dof_parent, sw.Md[b], sw.hv[b], sw.zv[b], qdd)
    else:
        aba_init(m, w, b)
        aba_backward(m, w, b, tau, arm)
        aba_forward(m, w, b, qdd)
    if m.mimic_vs.shape[0] > 0 or m.eq_type.shape[0] > 0:  # constrained: project qdd with ABA's factor
        aba_factor_after_dense(m, c, w, sw, b, tau, arm)
    if m.mimic_vs.shape[0] > 0:  # coupled mimic joints (the factor of M + diag(arm))
        mimic_accel(m, w, b, qdd)
    if m.eq_type.shape[0] > 0:  # equality constraints: the same, with rows depending on q
        equality_accel(m, w, b, q, v, qdd)


@kernel(inline=True)
def aba_factor_after_dense(m, c, w, sw, b, tau, arm):
    """ABA's articulated-body factor of ``M + diag(arm)`` where :func:`accel_solve` ran a dense SPD
    solver (DF/SF leave none; O(n)); the other paths have it already.  The constraint projections
    (mimic, equality, limits) solve through it."""
    if c.mode == SPD and (c.solver == DF or c.solver == SF) and sw.Md.shape[1] >= m.nv:
        aba_init(m, w, b)
        aba_backward(m, w, b, tau, arm)


@kernel
def limit_solve(m, c, w, sw, b, q, v, dt, qdd):
    """MuJoCo's limit constraint and tendon armature on ``qdd`` after :func:`accel_solve` (and the equality
    constraints' step target): :func:`pbsim.dynamics.limits.limit_accel`, with ABA's factor made
    first where the dense SPD solvers left none.  Returns the number of active limit rows."""
    if w.lJ.shape[1] == 0:  # no limit rows and no tendon armature
        return 0
    n = limit_rows(m, w, b, q, v, dt)
    if n == 0:
        return 0
    aba_factor_after_dense(m, c, w, sw, b, sw.tau[b], sw.arm[b])
    limit_apply(m, w, b, n, qdd)
    return n


@kernel
def preclip_explicit(m, c, sw, b, tau):
    """Clip the explicit actuation (joints without an implicit Kd dt term) to +-effort."""
    for j in range(m.nv):
        if sw.kc[b, j] == 0.0:
            lim = c.effort[j]
            a = sw.tc[b, j]
            if a > lim or a < -lim:
                cl = lim if a > 0.0 else -lim
                tau[j] += cl - a
                sw.tc[b, j] = cl


@kernel(inline=True)
def clamp_joint(c, sw, b, j, a, tau, arm):
    """Joint j's stable-PD actuation ``a`` beyond its effort limit: fixed at the limit as an
    explicit torque (``tau`` takes the difference, its ``Kd dt`` leaves ``arm``).  Returns whether
    it was clamped."""
    lim = c.effort[j]
    if a > lim or a < -lim:
        cl = lim if a > 0.0 else -lim
        tau[j] += cl - sw.tc[b, j]
        arm[j] -= sw.kc[b, j]
        sw.tc[b, j] = cl
        sw.kc[b, j] = 0.0
        return True
    return False


@kernel
def clamp_active_set(m, c, w, sw, b, q, v, tau, arm, qdd):
    """Effort clamping with SPD (documented interplay): the SPD torque ``Q - Kd dt qdd`` (Eq. 6)
    depends on the solution, so after a solve every joint whose torque exceeds its limit is fixed
    at the limit as an explicit torque (its ``Kd dt`` leaves D) and the system is solved again;
    unsaturated joints stay implicit.  At most 4 re-solves; joints never leave the active set."""
    for _it in range(4):
        changed = False
        for j in range(m.nv):
            kc = sw.kc[b, j]
            if kc == 0.0:
                continue
            if clamp_joint(c, sw, b, j, sw.tc[b, j] - kc * qdd[j], tau, arm):
                changed = True
        if not changed:
            break
        accel_solve(m, c, w, sw, b, q, v, tau, arm, qdd)


@kernel
def joint_forces(m, c, w, sw, b, q, v, dt, implicit_damping, soft_limits):
    """Generalized joint forces of a step into ``sw.tau[b]`` and the implicit diagonal into
    ``sw.arm[b]``: control torques (SPD: ``dt Kd``, paper 001 Eq. 7), pre-clipping if asked, and
    joint damping (implicit: ``-d (v + dt qdd)``, absorbed like the SPD term) and the model's
    springs, dry friction and limits (:func:`pbsim.dynamics.passive.passive_torques`, implicit like SPD),
    the tendons' forces (:func:`pbsim.dynamics.tendon.tendon_forces`) and the bodies' gravity
    compensation (:func:`pbsim.dynamics.gravcomp.gravcomp_forces`) and the fluid forces
    (:func:`pbsim.dynamics.fluid.fluid_forces`), both explicit as MuJoCo's.  The control's own
    Q and ``dt Kd`` are kept in ``sw.tc``/``sw.kc`` for Eq. 6 and clamping.  With ``soft_limits``
    the DOFs under MuJoCo's limit law (``m.lim_soft``) get no limit spring: the caller adds
    :func:`limit_solve` (the explicit methods)."""
    tau = sw.tau[b]
    arm = sw.arm[b]
    control_torques(m, c, b, q, v, dt, sw.dq[b], sw.qs[b], w.Rj[b], tau, arm)
    for j in range(m.nv):
        sw.tc[b, j] = tau[j]
        sw.kc[b, j] = arm[j]
    if c.clamp != 0:
        preclip_explicit(m, c, sw, b, tau)
    for j in range(m.nv):
        tau[j] -= m.damping[j] * v[j]
        if implicit_damping:
            arm[j] += dt * m.damping[j]
    passive_torques(m, q, v, dt, implicit_damping, soft_limits, tau, arm)
    tendon_forces(m, c, w, b, q, v, dt, implicit_damping, soft_limits, tau, arm)  # tendons' passive and actuated forces
    site_forces(m, c, w, b, q, tau)  # site-transmission actuators
    gravcomp_forces(m, w, b, q, 1.0, tau)  # bodies' gravity compensation (MuJoCo's qfrc_gravcomp): explicit
    fluid_forces(m, w, b, q, v, tau)  # the medium's drag (MuJoCo's qfrc_fluid): explicit


@kernel
def spd_at_new_state(m, c, sw, b, h):
    """Turn :func:`joint_forces`' stable PD (Tan et al.'s: ``arm = h Kd``, Kp on the prediction
    ``q + h v``) into backward Euler's ``-Kp (q + h v+ - qbar) - Kd (v+ - vbar)``: ``h^2 Kp`` added
    to ``sw.arm`` and to the control's own implicit term ``sw.kc``.  No-op unless the control is SPD."""
    if c.mode != SPD:
        return
    bp = b if c.kp.shape[0] > 1 else 0
    for j in range(m.nv):
        sw.arm[b, j] += h * h * c.kp[bp, j]
        sw.kc[b, j] += h * h * c.kp[bp, j]


@kernel
def solve_and_clamp(m, c, w, sw, b, q, v, qdd):
    """qdd from ``sw.tau``/``sw.arm`` by the control's solver, then effort clamping if asked.
    Expects the velocity pass done for state b."""
    accel_solve(m, c, w, sw, b, q, v, sw.tau[b], sw.arm[b], qdd)
    if c.clamp != 0:
        clamp_active_set(m, c, w, sw, b, q, v, sw.tau[b], sw.arm[b], qdd)
