"""Passive joint forces from the model: joint limits (one-sided spring-damper, pbsim.model.limits)."""
from pbsim.backends.kernel import kernel
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
    absorbs (stable for any kp and dt)."""
    for i in range(m.nb):
        active, e = limit_error(m, i, q, v, dt)
        if active:
            j = m.iv[i]
            kp = m.limit_kp[j]
            kd = m.limit_kd[j]
            tau[j] += -kp * (e + dt * v[j]) - kd * v[j]
            arm[j] += dt * kd + dt * dt * kp


@kernel
def limit_project(m, q, v):
    """Put 1-DOF joints past a limit back on it and stop their velocity into it (inelastic).

    The explicit Runge-Kutta family moves q with velocities of the step's start, which the
    limit torque cannot change within the step (explicit Euler: ``q+ = q + dt v``): measured,
    a 6 rad/s swing overshoots a limit by 0.10 rad at dt = 20 ms (explicit Euler) and 0.03
    (RK4) with the torque alone, 0 with this projection after the step.  Semi-implicit Euler
    does not need it (its q moves with the new velocity)."""
    for i in range(m.nb):
        jt = m.jtype[i]
        if jt != REVOLUTE and jt != PRISMATIC:
            continue
        j = m.iv[i]
        if m.limit_kp[j] <= 0.0:
            continue
        k = m.iq[i]
        if q[k] > m.upper[j]:
            q[k] = m.upper[j]
            if v[j] > 0.0:
                v[j] = 0.0
        elif q[k] < m.lower[j]:
            q[k] = m.lower[j]
            if v[j] < 0.0:
                v[j] = 0.0
