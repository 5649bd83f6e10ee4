"""Actuators with a site transmission (MJCF ``<general site=...>`` without ``refsite``): the
actuator's force ``f`` pushes and twists at the site, along the site's axes scaled by the gear::

    F = R_s g[0:3] f,   T = R_s g[3:6] f,   tau = J_lin(p_s)^T F + J_ang^T T   (MuJoCo's site transmission)

``R_s``, ``p_s`` the site's world pose.  Its length is 0 (MuJoCo's, without a refsite), so only a
force with no length/velocity term is imported (``f = gain u + b0``, clamped to forcerange).
Explicit, at the step's state, in the explicit methods (``control/solve.py: joint_forces``) and
variational; the position-based methods refuse such a model (``Integrator.spatial_tendons``).
The control's ``sa_*`` rows (:mod:`pbsim.control.actuators`) carry site, gear and force."""

from pbsim.jit import kernel
from pbsim.dynamics.jacobian import dof_point_twist
from pbsim.dynamics.kinematics import fk_state


@kernel
def site_forces(m, c, w, b, q, tau):
    """The site actuators' generalized force at configuration row ``q`` added to ``tau`` (nv);
    FK of q into ``w`` first when there are any."""
    n = c.sa_body.shape[0]
    if n == 0:
        return
    fk_state(m, w, b, q)
    bc = b if c.sa_f.shape[0] > 1 else 0
    Rw = w.Rw[b]
    pw = w.pw[b]
    for a in range(n):
        body = c.sa_body[a]
        f = c.sa_f[bc, a]
        if f == 0.0 or body < 0:
            continue
        Rb = Rw[body]
        l = c.sa_pos[a]
        px = pw[body, 0] + Rb[0, 0] * l[0] + Rb[0, 1] * l[1] + Rb[0, 2] * l[2]
        py = pw[body, 1] + Rb[1, 0] * l[0] + Rb[1, 1] * l[1] + Rb[1, 2] * l[2]
        pz = pw[body, 2] + Rb[2, 0] * l[0] + Rb[2, 1] * l[1] + Rb[2, 2] * l[2]
        # the gear's force and torque in the body frame: R_site g, then to world
        g = c.sa_gear[a]
        Rs = c.sa_rot[a]
        fb0 = (Rs[0, 0] * g[0] + Rs[0, 1] * g[1] + Rs[0, 2] * g[2]) * f
        fb1 = (Rs[1, 0] * g[0] + Rs[1, 1] * g[1] + Rs[1, 2] * g[2]) * f
        fb2 = (Rs[2, 0] * g[0] + Rs[2, 1] * g[1] + Rs[2, 2] * g[2]) * f
        tb0 = (Rs[0, 0] * g[3] + Rs[0, 1] * g[4] + Rs[0, 2] * g[5]) * f
        tb1 = (Rs[1, 0] * g[3] + Rs[1, 1] * g[4] + Rs[1, 2] * g[5]) * f
        tb2 = (Rs[2, 0] * g[3] + Rs[2, 1] * g[4] + Rs[2, 2] * g[5]) * f
        fx = Rb[0, 0] * fb0 + Rb[0, 1] * fb1 + Rb[0, 2] * fb2
        fy = Rb[1, 0] * fb0 + Rb[1, 1] * fb1 + Rb[1, 2] * fb2
        fz = Rb[2, 0] * fb0 + Rb[2, 1] * fb1 + Rb[2, 2] * fb2
        tx = Rb[0, 0] * tb0 + Rb[0, 1] * tb1 + Rb[0, 2] * tb2
        ty = Rb[1, 0] * tb0 + Rb[1, 1] * tb1 + Rb[1, 2] * tb2
        tz = Rb[2, 0] * tb0 + Rb[2, 1] * tb1 + Rb[2, 2] * tb2
        j = body
        while j >= 0:  # tau_k += (w_k x (p - o_j) + v_k) . F + w_k . T over the chain's DOFs
            j0 = m.iv[j]
            for k in range(m.nvj[j]):
                wx, wy, wz, vx, vy, vz = dof_point_twist(m, Rw, pw, j, k, px, py, pz)
                tau[j0 + k] += vx * fx + vy * fy + vz * fz + wx * tx + wy * ty + wz * tz
            j = m.parent[j]
