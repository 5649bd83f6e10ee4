"""Passive joint forces from the model, in the stable-PD form (torque now + an implicit diagonal):
joint limits (one-sided spring-damper, pbsim.model.limits), joint springs (MJCF stiffness toward
springref) and dry joint friction (MJCF frictionloss, URDF <dynamics friction>, smoothed).

Every term is ``tau = t0 - a qdd`` with ``a`` added to the diagonal the solver absorbs (as SPD's
``dt kd``), which keeps a stiff spring or a steep friction curve stable at any dt."""
import math

from pbsim.jit import kernel
from pbsim.dynamics.joints import PRISMATIC, REVOLUTE


@kernel
def limit_error(m, i, q, v, dt):
    """``(active, e)`` for body ``i``'s joint: active when it is a 1-DOF joint with a limit gain
    whose explicit prediction ``q + dt v`` passes a finite limit; ``e = q - that limit``.
    (Predicting engages the limit on the step that would cross it.)"""
    jt = m.jtype[i]
    if jt != REVOLUTE and jt != PRISMATIC:
        return False, 0.0
    j = m.iv[i]
    if m.limit_kp[j] <= 0.0:
        return False, 0.0
    x = q[m.iq[i]]
    pred = x + dt * v[j]
    if pred > m.upper[j]:
        return True, x - m.upper[j]
    if pred < m.lower[j]:
        return True, x - m.lower[j]
    return False, 0.0


@kernel
def limit_torques(m, q, v, dt, tau, arm):
    """Joint-limit torques into ``tau`` (nv,) and their implicit diagonal into ``arm``.

    An active joint (:func:`limit_error`) gets the stable-PD torque toward its limit (paper 001
    Eq. 7 with the limit as target): ``-kp (e + dt v+) - kd v+``, ``v+`` the step's new velocity,
    i.e. ``-kp (e + dt v) - kd v`` now and ``dt kd + dt^2 kp`` added to the diagonal the solver
    absorbs (stable for any kp and dt).  Runge-Kutta stages get the same form: an explicit
    limit spring diverged (the ant under rk4 at dt = 1 ms: a loaded joint's effective inertia is
    far below its subtree's, so w dt >> 1).  Inside RK stages the diagonal also damps motion
    along a limit (measured: the ant rests on its limits at 0.535 m under rk4, 0.358 m under
    euler, 0.382 m in MuJoCo)."""
    for i in range(m.nb):
        active, e = limit_error(m, i, q, v, dt)
        if active:
            j = m.iv[i]
            kp = m.limit_kp[j]
            kd = m.limit_kd[j]
            tau[j] += -kp * (e + dt * v[j]) - kd * v[j]
            arm[j] += dt * kd + dt * dt * kp


@kernel
def limit_project(m, q0, q, v):
    """Put 1-DOF joints that crossed a limit during the step (inside at ``q0``, past it at ``q``)
    back on it and stop their velocity into it (inelastic).

    For explicit Euler only: it moves q with the velocity of the step's start (``q+ = q + dt v``),
    which no force can change within the step; measured on a 6 rad/s swing into a limit at
    dt = 20 ms, the torque alone lets it overshoot by 0.10 rad (0 with this projection).  The
    other methods see the limit torque in the velocity that moves q (RK2-4 overshoot 0.03 rad
    there without projection; semi-implicit Euler 0); projecting them too would make the limit
    rigid for them and soft for the rest (a resting ant stood 0.18 m taller under rk4 than under
    euler).  A joint that starts outside its limits (an MJCF qpos0 outside the range) is left to
    the limit torque: snapping it onto the limit in one step would kick the robot."""
    for i in range(m.nb):
        jt = m.jtype[i]
        if jt != REVOLUTE and jt != PRISMATIC:
            continue
        j = m.iv[i]
        if m.limit_kp[j] <= 0.0:
            continue
        k = m.iq[i]
        if q0[k] > m.upper[j] or q0[k] < m.lower[j]:
            continue
        if q[k] > m.upper[j]:
            q[k] = m.upper[j]
            if v[j] > 0.0:
                v[j] = 0.0
        elif q[k] < m.lower[j]:
            q[k] = m.lower[j]
            if v[j] < 0.0:
                v[j] = 0.0


FRICTION_VEL = 0.01  # m/s or rad/s: dry friction is -f tanh(v / FRICTION_VEL)


@kernel
def passive_torques(m, q, v, dt, implicit, tau, arm):
    """Joint springs, dry friction and limits of state row (q, v) into ``tau`` / ``arm`` (nv,).

    Spring ``-k (q - q_s)`` on 1-DOF joints, at the predicted ``q + dt v+`` (stable PD):
    ``-k (q - q_s + dt v)`` now and ``dt^2 k`` on the diagonal.  Dry friction, smoothed:
    ``-f tanh(v+ / v_f)`` linearised in the new velocity, ``-f tanh(v / v_f)`` now and
    ``dt f / v_f (1 - tanh^2)`` on the diagonal (``v_f`` = FRICTION_VEL; a joint below its
    friction torque creeps at most ~v_f).  Limits: :func:`limit_torques`.  With ``implicit``
    False (the Runge-Kutta stages, which must see the exact ODE to keep their order) the spring
    is the plain ``-k (q - q_s)``; friction and limits stay linearised (stability first)."""
    for i in range(m.nb):
        jt = m.jtype[i]
        if jt != REVOLUTE and jt != PRISMATIC:
            continue
        j = m.iv[i]
        k = m.stiffness[j]
        if k != 0.0:
            x = m.iq[i]
            if implicit:
                tau[j] += -k * (q[x] - m.springref[x] + dt * v[j])
                arm[j] += dt * dt * k
            else:
                tau[j] += -k * (q[x] - m.springref[x])
        f = m.frictionloss[j]
        if f > 0.0:
            t = math.tanh(v[j] / FRICTION_VEL)
            tau[j] += -f * t
            arm[j] += dt * f / FRICTION_VEL * (1.0 - t * t)
    limit_torques(m, q, v, dt, tau, arm)


@kernel
def passive_linear(m, q, v, dt, t0, t1):
    """The same springs, dry friction and limits as :func:`passive_torques`, as a torque affine in
    the step's displacement ``d = q+ (-) q`` (``v+ = d / dt``): ``t0 + t1 * d`` per DOF added to
    ``t0``, ``t1`` (nv,): the form the variational integrator's DEL impulse takes."""
    for i in range(m.nb):
        jt = m.jtype[i]
        if jt != REVOLUTE and jt != PRISMATIC:
            continue
        j = m.iv[i]
        x = m.iq[i]
        k = m.stiffness[j]
        if k != 0.0:  # -k (q - q_s + d)
            t0[j] += -k * (q[x] - m.springref[x])
            t1[j] += -k
        f = m.frictionloss[j]
        if f > 0.0:  # -f tanh(v+ / v_f), linearised about v
            t = math.tanh(v[j] / FRICTION_VEL)
            s = f / FRICTION_VEL * (1.0 - t * t)
            t0[j] += -f * t + s * v[j]
            t1[j] += -s / dt
        active, e = limit_error(m, i, q, v, dt)
        if active:  # -kp (e + d) - kd d / dt
            t0[j] += -m.limit_kp[j] * e
            t1[j] += -m.limit_kp[j] - m.limit_kd[j] / dt
