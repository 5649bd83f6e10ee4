"""Joint-space terms of the position-based step objective (paper 000 Eq. 5, Sec. 6): the work of
the control (torques, PD at q_k, stable PD at q), joint damping and armature, and the model's
passive joint forces as potentials -- springs ``k/2 (q - q_s)^2``, dry friction as the
dissipation potential ``f dt v_f log cosh(d / (dt v_f))`` (its gradient is the smoothed Coulomb
torque ``f tanh(v / v_f)`` of :mod:`pbsim.dynamics.passive` at ``v = d / dt``) and joint limits
``kp/2 (q - limit)^2`` past a limit (one-sided, C1) with their damper ``kd / (2 dt) (r - r_k)^2``
on the penetration ``r`` past the limit (``r_k`` at the step's start: the dissipation potential of
``-kd dr/dt``, on while the iterate is past the limit; C1 when the step starts inside).  Without
the damper a joint that starts outside its range is flung by the spring's energy (the gymnasium
humanoid's knees, 2 degrees outside at qpos0: 0.59 rad in 100 ms of free fall; MuJoCo 0.037).
Fixed tendons' limits get the same damper (:func:`pbsim.dynamics.tendon.tendon_energy`).  Being
terms of the minimised objective, a large step cannot jump through a limit.  ``d = q (-) q_k`` is
the step's tangent displacement; ``h = dE/dd`` (exact for 1-DOF joints; ball/free joints: through
dexp^-1 in :func:`joint_gradient`).
Shared by every position-based method (PBAD orders 2-4 now; PBFD, PBD-NMDP next)."""
import math

from pbsim.jit import kernel
from pbsim.control.control import PD, SPD
from pbsim.dynamics.joints import PRISMATIC, REVOLUTE, difference_config
from pbsim.dynamics.liegroup import dexpinv_velocity
from pbsim.dynamics.passive import FRICTION_VEL, ball_springs
from pbsim.dynamics.tendon import tendon_energy, tendon_hessian


@kernel
def log_cosh(u):
    a = abs(u)
    return a + math.log1p(math.exp(-2.0 * a)) - math.log(2.0)


@kernel
def passive_energy(m, q, d, dt, h):
    """Springs, dry friction and limits of the 1-DOF joints at ``q`` (step ``d``): adds dE/dd to
    ``h``, returns the energy (with the ball and free joints' springs, whose gradient
    :func:`joint_gradient` adds in the tangent space at q)."""
    e = ball_springs(m, q, 0.0, h)
    for i in range(m.nb):
        jt = m.jtype[i]
        if jt != REVOLUTE and jt != PRISMATIC:
            continue
        j = m.iv[i]
        x = q[m.iq[i]]
        k = m.stiffness[j]
        if k != 0.0:
            r = x - m.springref[m.iq[i]]
            e += 0.5 * k * r * r
            h[j] += k * r
        f = m.frictionloss[j]
        if f > 0.0:
            u = d[j] / (dt * FRICTION_VEL)
            e += f * dt * FRICTION_VEL * log_cosh(u)
            h[j] += f * math.tanh(u)
        kp = m.limit_kp[j]
        if kp > 0.0:
            r = limit_excess(m, j, x)
            e += 0.5 * kp * r * r
            h[j] += kp * r
            if r != 0.0:  # the damper: kd / (2 dt) (r - r_k)^2, r_k the penetration at x_k = x - d
                rk = limit_excess(m, j, x - d[j])
                cd = m.limit_kd[j] / dt
                e += 0.5 * cd * (r - rk) * (r - rk) - 0.5 * cd * rk * rk  # 0 where r = 0: continuous
                h[j] += cd * (r - rk)
    return e


@kernel
def limit_excess(m, j, x):
    """How far coordinate ``x`` of DOF ``j`` is past its limits (signed; 0 inside)."""
    if x > m.upper[j]:
        return x - m.upper[j]
    if x < m.lower[j]:
        return x - m.lower[j]
    return 0.0


@kernel
def passive_hessian(m, q, d, dt, H):
    """The diagonal of :func:`passive_energy`'s Hessian added to ``H`` (ball/free springs: ``k``,
    exact at their rest)."""
    for i in range(m.nb):
        jt = m.jtype[i]
        if jt != REVOLUTE and jt != PRISMATIC:
            for r in range(m.nvj[i]):
                H[m.iv[i] + r, m.iv[i] + r] += m.stiffness[m.iv[i] + r]
            continue
        j = m.iv[i]
        x = q[m.iq[i]]
        H[j, j] += m.stiffness[j]
        f = m.frictionloss[j]
        if f > 0.0:
            t = math.tanh(d[j] / (dt * FRICTION_VEL))
            H[j, j] += f / (dt * FRICTION_VEL) * (1.0 - t * t)
        if m.limit_kp[j] > 0.0 and (x > m.upper[j] or x < m.lower[j]):
            H[j, j] += m.limit_kp[j] + m.limit_kd[j] / dt


@kernel
def joint_energy(m, c, b, q, qk, vk, dt, d, h, eref, Rj):
    """E of the joint-space terms at ``q`` for the step from (q_k, v_k); ``d = q (-) q_k`` (filled
    here), ``h = dE/dd`` (filled), ``eref`` nv scratch, ``Rj`` 3x3 scratch."""
    difference_config(m, qk, q, d, Rj)
    bt = b if c.tau.shape[0] > 1 else 0
    bp = b if c.kp.shape[0] > 1 else 0
    bd = b if c.kd.shape[0] > 1 else 0
    bq = b if c.q_ref.shape[0] > 1 else 0
    bv = b if c.v_ref.shape[0] > 1 else 0
    spd = c.mode == SPD
    inv2 = 1.0 / (dt * dt)
    e = 0.0
    for j in range(m.nv):
        tau = c.tau[bt, j]
        kd = 0.0
        if c.mode == PD:  # plain PD: explicit, at (q_k, v_k)
            tau += -c.kd[bd, j] * (vk[j] - c.v_ref[bv, j])
        elif spd:
            kd = c.kd[bd, j]
            tau += kd * c.v_ref[bv, j]
        dd = d[j]
        dprev = dt * vk[j]
        cdamp = (m.damping[j] + kd) / dt
        carm = m.armature[j] * inv2
        e += -tau * dd + 0.5 * cdamp * dd * dd + 0.5 * carm * (dd - dprev) * (dd - dprev)
        h[j] = -tau + cdamp * dd + carm * (dd - dprev)
    if c.mode == PD or spd:
        q_at = qk if c.mode == PD else q
        difference_config(m, c.q_ref[bq], q_at, eref, Rj)
        for j in range(m.nv):
            kp = c.kp[bp, j]
            if c.mode == PD:
                h[j] += kp * eref[j]  # constant torque -kp e(q_k): linear work
                e += kp * eref[j] * d[j]
            else:
                e += 0.5 * kp * eref[j] * eref[j]
    e += passive_energy(m, q, d, dt, h)
    e += tendon_energy(m, c, b, q, d, dt, h)  # fixed tendons (pbsim.dynamics.tendon)
    return e


@kernel
def joint_gradient(m, c, b, q, d, h, eref, tmp, Rj, g):
    """Adds the tangent gradient of :func:`joint_energy` to ``g``: ``J_r^-T(d) h`` and, for stable
    PD, ``J_r^-T(e_ref) kp e_ref`` (``h`` is overwritten)."""
    for j in range(m.nv):
        tmp[j] = -d[j]
    dexpinv_velocity(m, tmp, h, h)  # J_r^-T(d) h = J_r^-1(-d) h (in place is safe)
    for j in range(m.nv):
        g[j] += h[j]
    ball_springs(m, q, 1.0, g)  # ball/free springs: k e, already the tangent gradient at q
    if c.mode == SPD:
        bp = b if c.kp.shape[0] > 1 else 0
        bq = b if c.q_ref.shape[0] > 1 else 0
        difference_config(m, c.q_ref[bq], q, eref, Rj)
        for j in range(m.nv):
            tmp[j] = -eref[j]
            h[j] = c.kp[bp, j] * eref[j]
        dexpinv_velocity(m, tmp, h, h)
        for j in range(m.nv):
            g[j] += h[j]


@kernel
def joint_hessian(m, c, b, q, d, dt, H):
    """Adds the (diagonal) Hessian of :func:`joint_energy` to ``H``."""
    spd = c.mode == SPD
    bp = b if c.kp.shape[0] > 1 else 0
    bd = b if c.kd.shape[0] > 1 else 0
    inv2 = 1.0 / (dt * dt)
    for j in range(m.nv):
        kd = c.kd[bd, j] if spd else 0.0
        kp = c.kp[bp, j] if spd else 0.0
        H[j, j] += (m.damping[j] + kd) / dt + m.armature[j] * inv2 + kp
    passive_hessian(m, q, d, dt, H)
    tendon_hessian(m, c, b, q, d, dt, H)


@kernel
def passive_residual(m, q, vel, ru):
    """Eq. 6's force residual at a collocation node (configuration ``q``, joint velocity ``vel``):
    adds minus the passive torques -- springs ``k (q - q_s)``, dry friction ``f tanh(vel / v_f)``,
    limits ``kp (q - limit) + kd vel`` past a limit -- to ``ru`` (nv,); ball/free springs ``k e``."""
    ball_springs(m, q, 1.0, ru)
    for i in range(m.nb):
        jt = m.jtype[i]
        if jt != REVOLUTE and jt != PRISMATIC:
            continue
        j = m.iv[i]
        x = q[m.iq[i]]
        ru[j] += m.stiffness[j] * (x - m.springref[m.iq[i]])
        f = m.frictionloss[j]
        if f > 0.0:
            ru[j] += f * math.tanh(vel[j] / FRICTION_VEL)
        if m.limit_kp[j] > 0.0:
            r = limit_excess(m, j, x)
            if r != 0.0:
                ru[j] += m.limit_kp[j] * r + m.limit_kd[j] * vel[j]


@kernel
def passive_residual_jacobian(m, q, vel, dvel, same, J, r0, c0):
    """d :func:`passive_residual` at node u / d(node v) into the diagonal of block (r0, c0):
    ``dvel`` = d vel / d q_v (C1[u, v] / dt), ``same``: v == u (springs and limits act there)."""
    for i in range(m.nb):
        jt = m.jtype[i]
        if jt != REVOLUTE and jt != PRISMATIC:
            if same:  # ball/free springs: k (exact at their rest)
                for r in range(m.nvj[i]):
                    J[r0 + m.iv[i] + r, c0 + m.iv[i] + r] += m.stiffness[m.iv[i] + r]
            continue
        j = m.iv[i]
        x = q[m.iq[i]]
        f = m.frictionloss[j]
        if f > 0.0:
            t = math.tanh(vel[j] / FRICTION_VEL)
            J[r0 + j, c0 + j] += f / FRICTION_VEL * (1.0 - t * t) * dvel
        if same:
            J[r0 + j, c0 + j] += m.stiffness[j]
            if m.limit_kp[j] > 0.0 and (x > m.upper[j] or x < m.lower[j]):
                J[r0 + j, c0 + j] += m.limit_kp[j]
        if m.limit_kp[j] > 0.0 and (x > m.upper[j] or x < m.lower[j]):
            J[r0 + j, c0 + j] += m.limit_kd[j] * dvel
