"""Jacobians of points and frames attached to bodies, in world coordinates."""
from numba import prange

from pbsim.jit import kernel
from pbsim.dynamics.kinematics import fk_state


@kernel
def dof_point_twist(m, Rw, pw, j, k, px, py, pz):
    """World-axes ``(w_x, w_y, w_z, v_x, v_y, v_z)`` of DOF ``k`` of body ``j`` at unit rate: the
    angular velocity and the velocity of the world point ``p`` (column of the point Jacobian)."""
    s = m.S[j, k]
    dx = px - pw[j, 0]
    dy = py - pw[j, 1]
    dz = pz - pw[j, 2]
    wx = Rw[j, 0, 0] * s[0] + Rw[j, 0, 1] * s[1] + Rw[j, 0, 2] * s[2]
    wy = Rw[j, 1, 0] * s[0] + Rw[j, 1, 1] * s[1] + Rw[j, 1, 2] * s[2]
    wz = Rw[j, 2, 0] * s[0] + Rw[j, 2, 1] * s[1] + Rw[j, 2, 2] * s[2]
    vx = Rw[j, 0, 0] * s[3] + Rw[j, 0, 1] * s[4] + Rw[j, 0, 2] * s[5] + wy * dz - wz * dy  # v + w x (p - o_j)
    vy = Rw[j, 1, 0] * s[3] + Rw[j, 1, 1] * s[4] + Rw[j, 1, 2] * s[5] + wz * dx - wx * dz
    vz = Rw[j, 2, 0] * s[3] + Rw[j, 2, 1] * s[4] + Rw[j, 2, 2] * s[5] + wx * dy - wy * dx
    return wx, wy, wz, vx, vy, vz


@kernel
def point_jacobian(m, w, b, body, point, J):
    """J (6, nv): rows 0-2 angular velocity of ``body``, rows 3-5 linear velocity of ``point``
    (given in the body frame), both in world axes: ``[w; v_P] = J qd``.  Needs world poses."""
    Rw = w.Rw[b]
    pw = w.pw[b]
    px = pw[body, 0] + Rw[body, 0, 0] * point[0] + Rw[body, 0, 1] * point[1] + Rw[body, 0, 2] * point[2]
    py = pw[body, 1] + Rw[body, 1, 0] * point[0] + Rw[body, 1, 1] * point[1] + Rw[body, 1, 2] * point[2]
    pz = pw[body, 2] + Rw[body, 2, 0] * point[0] + Rw[body, 2, 1] * point[1] + Rw[body, 2, 2] * point[2]
    for r in range(6):
        for c in range(m.nv):
            J[r, c] = 0.0
    j = body
    while j >= 0:
        j0 = m.iv[j]
        for k in range(m.nvj[j]):
            s = m.S[j, k]
            wx = Rw[j, 0, 0] * s[0] + Rw[j, 0, 1] * s[1] + Rw[j, 0, 2] * s[2]
            wy = Rw[j, 1, 0] * s[0] + Rw[j, 1, 1] * s[1] + Rw[j, 1, 2] * s[2]
            wz = Rw[j, 2, 0] * s[0] + Rw[j, 2, 1] * s[1] + Rw[j, 2, 2] * s[2]
            vx = Rw[j, 0, 0] * s[3] + Rw[j, 0, 1] * s[4] + Rw[j, 0, 2] * s[5]
            vy = Rw[j, 1, 0] * s[3] + Rw[j, 1, 1] * s[4] + Rw[j, 1, 2] * s[5]
            vz = Rw[j, 2, 0] * s[3] + Rw[j, 2, 1] * s[4] + Rw[j, 2, 2] * s[5]
            dx = px - pw[j, 0]
            dy = py - pw[j, 1]
            dz = pz - pw[j, 2]
            J[0, j0 + k] = wx
            J[1, j0 + k] = wy
            J[2, j0 + k] = wz
            J[3, j0 + k] = vx + wy * dz - wz * dy
            J[4, j0 + k] = vy + wz * dx - wx * dz
            J[5, j0 + k] = vz + wx * dy - wy * dx
        j = m.parent[j]


@kernel(parallel=True)
def point_jacobian_batch(m, w, q, body, point, J):
    for b in prange(q.shape[0]):
        fk_state(m, w, b, q[b])
        point_jacobian(m, w, b, body, point, J[b])
