"""Joint models: pose of a body in its parent, and the configuration-space group.

Joint types (``Model.jtype``):

====  =========  ==  ==  ==========================================================
code  name       nq  nv  coordinates
====  =========  ==  ==  ==========================================================
0     revolute    1   1  angle about ``axis`` (URDF revolute/continuous, MJCF hinge)
1     prismatic   1   1  displacement along ``axis`` (URDF prismatic, MJCF slide)
2     ball        4   3  q: quaternion (w,x,y,z); v: angular velocity in the child frame
3     free        7   6  q: position in parent + quaternion; v: [linear, angular] in the
                         child frame (as Pinocchio's free-flyer)
====  =========  ==  ==  ==========================================================

The group is R^3 x SO(3) for a free joint: ``integrate`` moves the position by
``R dv_lin`` and the rotation by ``R exp(dv_ang)``; ``difference`` is its exact inverse.
"""
import numpy as np

from pbsim.backends.kernel import kernel
from pbsim.dynamics.spatial import axis_angle_to_rot, quat_exp_mul, quat_log_between, quat_to_rot

REVOLUTE, PRISMATIC, BALL, FREE = 0, 1, 2, 3
JOINT_NAMES = {REVOLUTE: "revolute", PRISMATIC: "prismatic", BALL: "ball", FREE: "free"}
JOINT_NQ = {REVOLUTE: 1, PRISMATIC: 1, BALL: 4, FREE: 7}
JOINT_NV = {REVOLUTE: 1, PRISMATIC: 1, BALL: 3, FREE: 6}


def motion_subspace(jtype: int, axis) -> np.ndarray:
    """Constant motion subspace in child coordinates; row k is column k of S (6 x nv)."""
    S = np.zeros((6, 6))
    if jtype == REVOLUTE:
        S[0, 0:3] = axis
    elif jtype == PRISMATIC:
        S[0, 3:6] = axis
    elif jtype == BALL:
        S[0:3, 0:3] = np.eye(3)
    elif jtype == FREE:
        S[0:3, 3:6] = np.eye(3)  # v[0:3] is linear velocity
        S[3:6, 0:3] = np.eye(3)  # v[3:6] is angular velocity
    return S


@kernel
def body_in_parent(m, i, q, R, p, Rj):
    """Pose (R, p) of body ``i`` in its parent: tree placement composed with joint motion.

    ``Rj`` is 3x3 scratch.
    """
    jt = m.jtype[i]
    k = m.iq[i]
    TR = m.tree_R[i]
    Tp = m.tree_p[i]
    jx = 0.0
    jy = 0.0
    jz = 0.0
    if jt == REVOLUTE:
        axis_angle_to_rot(m.axis[i], q[k], Rj)
    elif jt == PRISMATIC:
        for r in range(3):
            for c in range(3):
                Rj[r, c] = 1.0 if r == c else 0.0
        jx = m.axis[i, 0] * q[k]
        jy = m.axis[i, 1] * q[k]
        jz = m.axis[i, 2] * q[k]
    elif jt == BALL:
        quat_to_rot(q[k:k + 4], Rj)
    else:
        quat_to_rot(q[k + 3:k + 7], Rj)
        jx = q[k]
        jy = q[k + 1]
        jz = q[k + 2]
    for r in range(3):
        for c in range(3):
            R[r, c] = TR[r, 0] * Rj[0, c] + TR[r, 1] * Rj[1, c] + TR[r, 2] * Rj[2, c]
        p[r] = Tp[r] + TR[r, 0] * jx + TR[r, 1] * jy + TR[r, 2] * jz


@kernel
def integrate_config(m, q, dv, out, Rj):
    """``out = q (+) dv``: move configuration ``q`` by tangent vector ``dv`` (may alias q)."""
    for i in range(m.nb):
        jt = m.jtype[i]
        k = m.iq[i]
        j = m.iv[i]
        if jt == REVOLUTE or jt == PRISMATIC:
            out[k] = q[k] + dv[j]
        elif jt == BALL:
            quat_exp_mul(q[k:k + 4], dv[j], dv[j + 1], dv[j + 2], out[k:k + 4])
        else:
            quat_to_rot(q[k + 3:k + 7], Rj)
            for r in range(3):
                out[k + r] = q[k + r] + Rj[r, 0] * dv[j] + Rj[r, 1] * dv[j + 1] + Rj[r, 2] * dv[j + 2]
            quat_exp_mul(q[k + 3:k + 7], dv[j + 3], dv[j + 4], dv[j + 5], out[k + 3:k + 7])


@kernel
def difference_config(m, q0, q1, out, Rj):
    """``out = q1 (-) q0``: the tangent vector that ``integrate`` maps q0 to q1 with."""
    for i in range(m.nb):
        jt = m.jtype[i]
        k = m.iq[i]
        j = m.iv[i]
        if jt == REVOLUTE or jt == PRISMATIC:
            out[j] = q1[k] - q0[k]
        elif jt == BALL:
            quat_log_between(q0[k:k + 4], q1[k:k + 4], out[j:j + 3])
        else:
            quat_to_rot(q0[k + 3:k + 7], Rj)
            dx = q1[k] - q0[k]
            dy = q1[k + 1] - q0[k + 1]
            dz = q1[k + 2] - q0[k + 2]
            for r in range(3):
                out[j + r] = Rj[0, r] * dx + Rj[1, r] * dy + Rj[2, r] * dz
            quat_log_between(q0[k + 3:k + 7], q1[k + 3:k + 7], out[j + 3:j + 6])
