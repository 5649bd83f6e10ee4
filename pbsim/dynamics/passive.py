"""Passive joint forces from the model, in the stable-PD form (torque now + an implicit diagonal):
joint limits (one-sided spring-damper, pbsim.model.limits), joint springs (MJCF stiffness toward
springref) and dry joint friction (MJCF frictionloss, URDF <dynamics friction>, smoothed).

Every term is ``tau = t0 - a qdd`` with ``a`` added to the diagonal the solver absorbs (as SPD's
``dt kd``), which keeps a stiff spring or a steep friction curve stable at any dt."""
import math

from numba import prange

from pbsim.jit import kernel
from pbsim.dynamics.joints import BALL, FREE, PRISMATIC, REVOLUTE
from pbsim.dynamics.spatial import quat_log_xyz, quat_rotate_inv


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
def limit_torques(m, q, v, dt, soft_limits, tau, arm):
    """Joint-limit torques into ``tau`` (nv,) and their implicit diagonal into ``arm``.

    An active joint (:func:`limit_error`) gets the stable-PD torque toward its limit (paper 001
    Eq. 7 with the limit as target): ``-kp (e + dt v+) - kd v+``, ``v+`` the step's new velocity,
    i.e. ``-kp (e + dt v) - kd v`` now and ``dt kd + dt^2 kp`` added to the diagonal the solver
    absorbs (stable for any kp and dt).  Runge-Kutta stages get the same form: an explicit
    limit spring diverged (the ant under rk4 at dt = 1 ms: a loaded joint's effective inertia is
    far below its subtree's, so w dt >> 1).  Inside RK stages the diagonal also damps motion
    along a limit (measured: the ant rests on its limits at 0.535 m under rk4, 0.358 m under
    euler, 0.382 m in MuJoCo).  With ``soft_limits`` the DOFs under MuJoCo's limit law
    (``m.lim_soft``, :mod:`pbsim.dynamics.limits`) are left to it."""
    for i in range(m.nb):
        active, e = limit_error(m, i, q, v, dt)
        if active:
            j = m.iv[i]
            if soft_limits and m.lim_soft[j] != 0.0:
                continue
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
def ball_springs(m, q, scale, out):
    """Springs of ball and free joints (MJCF ``stiffness``, MuJoCo's ``qfrc_spring``): adds
    ``scale k e`` to ``out`` (nv) and returns the energy ``1/2 sum k e^2``.  ``e`` is the spring's
    displacement from ``springref`` in pbsim's tangent coordinates at q: a ball joint's rotation
    vector ``log(q_s^-1 q)``; a free joint's ``R(q)^T (p - p_s)`` (its linear DOFs are in the body
    frame) and rotation vector.  ``scale = -1``: the spring torque; ``+1``: the gradient of the
    energy in the tangent space at q (exact: ``J_r^-T(phi) phi = phi``); 0: the energy alone."""
    e = 0.0
    for i in range(m.nb):
        jt = m.jtype[i]
        if jt != BALL and jt != FREE:
            continue
        j = m.iv[i]
        k = m.iq[i]
        if m.stiffness[j] == 0.0:
            continue
        if jt == BALL:
            r0, r1, r2 = quat_log_xyz(m.springref[k:k + 4], q[k:k + 4])
            ja = j
        else:
            qr = q[k + 3:k + 7]
            e0, e1, e2 = quat_rotate_inv(qr, q[k] - m.springref[k], q[k + 1] - m.springref[k + 1],
                                         q[k + 2] - m.springref[k + 2])
            e += spring3(m, j, e0, e1, e2, scale, out)
            r0, r1, r2 = quat_log_xyz(m.springref[k + 3:k + 7], qr)
            ja = j + 3
        e += spring3(m, ja, r0, r1, r2, scale, out)
    return e


@kernel
def spring3(m, j, e0, e1, e2, scale, out):
    """DOFs j..j+2 with displacement e: ``out += scale k e``; returns ``1/2 sum k e^2``."""
    c0 = m.stiffness[j]
    c1 = m.stiffness[j + 1]
    c2 = m.stiffness[j + 2]
    out[j] += scale * c0 * e0
    out[j + 1] += scale * c1 * e1
    out[j + 2] += scale * c2 * e2
    return 0.5 * (c0 * e0 * e0 + c1 * e1 * e1 + c2 * e2 * e2)


@kernel(parallel=True)
def ball_spring_energy_batch(m, q, scratch, e):
    """``e[b]`` = the energy of :func:`ball_springs` at ``q[b]`` (``scratch`` (B, nv))."""
    for b in prange(q.shape[0]):
        e[b] = ball_springs(m, q[b], 0.0, scratch[b])


@kernel
def ball_spring_step(m, v, dt, c, out, diag):
    """The implicit part of :func:`ball_springs`' torque: per DOF of a ball or free joint with a
    spring, ``-k dt v`` added to ``out`` (the spring at ``q + dt v``, to first order) and ``c k``
    to ``diag`` (the stable-PD diagonal: ``c = dt^2``; the variational form's ``c = -1``)."""
    for i in range(m.nb):
        jt = m.jtype[i]
        if jt == BALL or jt == FREE:
            for r in range(m.nvj[i]):
                j = m.iv[i] + r
                k = m.stiffness[j]
                out[j] += -k * dt * v[j]
                diag[j] += c * k


@kernel
def passive_torques(m, q, v, dt, implicit, soft_limits, tau, arm):
    """Joint springs, dry friction and limits of state row (q, v) into ``tau`` / ``arm`` (nv,).

    Spring ``-k (q - q_s)`` on 1-DOF joints, at the predicted ``q + dt v+`` (stable PD):
    ``-k (q - q_s + dt v)`` now and ``dt^2 k`` on the diagonal; ball and free joints' springs
    (:func:`ball_springs`) the same way.  Dry friction, smoothed:
    ``-f tanh(v+ / v_f)`` linearised in the new velocity, ``-f tanh(v / v_f)`` now and
    ``dt f / v_f (1 - tanh^2)`` on the diagonal (``v_f`` = FRICTION_VEL; a joint below its
    friction torque creeps at most ~v_f).  Limits: :func:`limit_torques`.  With ``implicit``
    False (the Runge-Kutta stages, which must see the exact ODE to keep their order) the spring
    is the plain ``-k (q - q_s)``; friction and limits stay linearised (stability first).
    ``soft_limits``: see :func:`limit_torques`."""
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
    limit_torques(m, q, v, dt, soft_limits, tau, arm)
    ball_springs(m, q, -1.0, tau)
    if implicit:
        ball_spring_step(m, v, dt, dt * dt, tau, arm)


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
    ball_springs(m, q, -1.0, t0)  # ball/free springs: -k (e + d) (to first order in d)
    ball_spring_step(m, v, 0.0, -1.0, t0, t1)
