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
import math

import numpy as np

from pbsim.jit import kernel
from pbsim.dynamics.spatial import quat_exp_mul, quat_log_between, quat_to_rot

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


@kernel(inline=True)
def body_in_parent(m, i, q, R, p, Rj):
    """Pose (R, p) of body ``i`` in its parent: tree placement composed with joint motion.

    The joint rotation is formed in scalars (no scratch, no array views); ``Rj`` is unused."""
    jt = m.jtype[i]
    k = m.iq[i]
    jx = 0.0
    jy = 0.0
    jz = 0.0
    if jt == REVOLUTE:  # Rodrigues
        x = m.axis[i, 0]
        y = m.axis[i, 1]
        z = m.axis[i, 2]
        c = math.cos(q[k])
        s = math.sin(q[k])
        t = 1.0 - c
        j00 = c + x * x * t
        j01 = x * y * t - z * s
        j02 = x * z * t + y * s
        j10 = y * x * t + z * s
        j11 = c + y * y * t
        j12 = y * z * t - x * s
        j20 = z * x * t - y * s
        j21 = z * y * t + x * s
        j22 = c + z * z * t
    elif jt == PRISMATIC:
        j00 = 1.0
        j01 = 0.0
        j02 = 0.0
        j10 = 0.0
        j11 = 1.0
        j12 = 0.0
        j20 = 0.0
        j21 = 0.0
        j22 = 1.0
        jx = m.axis[i, 0] * q[k]
        jy = m.axis[i, 1] * q[k]
        jz = m.axis[i, 2] * q[k]
    else:
        a = k if jt == BALL else k + 3
        if jt == FREE:
            jx = q[k]
            jy = q[k + 1]
            jz = q[k + 2]
        w = q[a]
        x = q[a + 1]
        y = q[a + 2]
        z = q[a + 3]
        n = 1.0 / math.sqrt(w * w + x * x + y * y + z * z)
        w *= n
        x *= n
        y *= n
        z *= n
        j00 = 1.0 - 2.0 * (y * y + z * z)
        j01 = 2.0 * (x * y - w * z)
        j02 = 2.0 * (x * z + w * y)
        j10 = 2.0 * (x * y + w * z)
        j11 = 1.0 - 2.0 * (x * x + z * z)
        j12 = 2.0 * (y * z - w * x)
        j20 = 2.0 * (x * z - w * y)
        j21 = 2.0 * (y * z + w * x)
        j22 = 1.0 - 2.0 * (x * x + y * y)
    T = m.tree_R
    for r in range(3):
        t0 = T[i, r, 0]
        t1 = T[i, r, 1]
        t2 = T[i, r, 2]
        R[r, 0] = t0 * j00 + t1 * j10 + t2 * j20
        R[r, 1] = t0 * j01 + t1 * j11 + t2 * j21
        R[r, 2] = t0 * j02 + t1 * j12 + t2 * j22
        p[r] = m.tree_p[i, r] + t0 * jx + t1 * jy + t2 * jz


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
