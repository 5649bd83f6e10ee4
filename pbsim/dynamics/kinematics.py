"""Forward kinematics: body poses in parent and world, body velocities and bias accelerations."""
from numba import prange

from pbsim.jit import kernel
from pbsim.dynamics.joints import body_in_parent
from pbsim.dynamics.spatial import motion_cross, motion_to_child


@kernel
def pose_pass(m, w, b, q):
    """Pose of every body in its parent (w.R, w.p) for state b; ``q`` is the (nq,) row."""
    for i in range(m.nb):
        body_in_parent(m, i, q, w.R[b, i], w.p[b, i], w.Rj[b])


@kernel
def world_pass(m, w, b):
    """World poses (w.Rw, w.pw) from the parent-relative ones."""
    R = w.R[b]
    p = w.p[b]
    Rw = w.Rw[b]
    pw = w.pw[b]
    for i in range(m.nb):
        par = m.parent[i]
        if par < 0:
            for r in range(3):
                for c in range(3):
                    Rw[i, r, c] = R[i, r, c]
                pw[i, r] = p[i, r]
        else:
            for r in range(3):
                for c in range(3):
                    Rw[i, r, c] = Rw[par, r, 0] * R[i, 0, c] + Rw[par, r, 1] * R[i, 1, c] + Rw[par, r, 2] * R[i, 2, c]
                pw[i, r] = pw[par, r] + Rw[par, r, 0] * p[i, 0] + Rw[par, r, 1] * p[i, 1] + Rw[par, r, 2] * p[i, 2]


@kernel
def velocity_pass(m, w, b, q, v):
    """Poses in parent, body velocities ``v_i = X_i v_parent + S_i qd_i`` and the bias
    acceleration ``c_i = v_i x (S_i qd_i)`` (Featherstone Table 5.1).  ``q``, ``v`` are rows."""
    vb = v
    R = w.R[b]
    p = w.p[b]
    vel = w.vel[b]
    c = w.c[b]
    for i in range(m.nb):
        body_in_parent(m, i, q, R[i], p[i], w.Rj[b])
        par = m.parent[i]
        j0 = m.iv[i]
        nvi = m.nvj[i]
        for r in range(6):
            s = 0.0
            for k in range(nvi):
                s += m.S[i, k, r] * vb[j0 + k]
            c[i, r] = s  # vJ
        if par >= 0:
            motion_to_child(R[i], p[i], vel[par], vel[i])
            for r in range(6):
                vel[i, r] += c[i, r]
        else:
            for r in range(6):
                vel[i, r] = c[i, r]
        motion_cross(vel[i], c[i], c[i])


@kernel
def point_motion(w, b, body, t0, t1, t2):
    """Velocity and classical acceleration at ``qdd = 0`` of the point ``(t0, t1, t2)`` fixed on
    ``body`` (body axes, both results too): ``v + w x p`` and ``a + wd x p + w x (v + w x p)`` from
    the body's velocity (:func:`velocity_pass`) and bias acceleration in ``w.acc`` (``a`` at
    ``qdd = 0``, :func:`pbsim.dynamics.equality.eq_bias_pass`)."""
    vel = w.vel[b]
    acc = w.acc[b]
    w0, w1, w2 = vel[body, 0], vel[body, 1], vel[body, 2]
    vx = vel[body, 3] + w1 * t2 - w2 * t1
    vy = vel[body, 4] + w2 * t0 - w0 * t2
    vz = vel[body, 5] + w0 * t1 - w1 * t0
    ax = acc[body, 3] + acc[body, 1] * t2 - acc[body, 2] * t1 + w1 * vz - w2 * vy
    ay = acc[body, 4] + acc[body, 2] * t0 - acc[body, 0] * t2 + w2 * vx - w0 * vz
    az = acc[body, 5] + acc[body, 0] * t1 - acc[body, 1] * t0 + w0 * vy - w1 * vx
    return vx, vy, vz, ax, ay, az


@kernel
def fk_state(m, w, b, q):
    pose_pass(m, w, b, q)
    world_pass(m, w, b)


@kernel(parallel=True)
def fk_batch(m, w, q):
    for b in prange(q.shape[0]):
        fk_state(m, w, b, q[b])
