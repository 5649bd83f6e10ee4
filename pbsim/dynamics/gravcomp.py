"""Gravity compensation (MJCF ``<body gravcomp="c">``, MuJoCo's ``qfrc_gravcomp``): a force
``-c m g`` at the centre of mass of each such body, as if that share of its weight were held up
by an outside support.  ``Model.gravcomp`` (nb, 4) holds per pbsim body the compensated mass
``m_gc = sum c m`` and its first moment ``sum c m x`` in the body frame (a pbsim body may be
several MJCF bodies fused by fixed joints, each with its own ``c``).

Two forms, the same force:

- explicit steps (``control/solve.py: joint_forces``, the variational forcing):
  ``tau += J(x_gc)^T (-m_gc g)`` at the step's configuration, as MuJoCo's passive force is
  explicit in its Euler and RK4;
- position-based steps, the variational integrator's discrete Lagrangian (DRNEA's gravity
  wrench, :func:`weight_wrench`) and the energies: the potential ``V = -g . (m c - m_gc x_gc)``
  per body (:func:`weight_moment`, gravity's own potential with the held-up share taken out),
  exact at any step.
"""
from numba import prange

from pbsim.jit import kernel
from pbsim.dynamics.jacobian import dof_point_twist
from pbsim.dynamics.kinematics import fk_state


@kernel
def weight_moment(m, i):
    """``(m_w, s_x, s_y, s_z)`` of body ``i``: the mass gravity pulls on and its first moment in
    the body frame (``m - m_gc``, ``m c - m_gc x_gc``); the potential is ``-g . (m_w p + R s)``."""
    gc = m.gravcomp[i]
    mi = m.mass[i]
    return (mi - gc[0], mi * m.com[i, 0] - gc[1], mi * m.com[i, 1] - gc[2], mi * m.com[i, 2] - gc[3])


@kernel
def weight_wrench(m, i, ax, ay, az, out):
    """``out`` (6,) = the wrench ``[s x a; m_w a]`` at body ``i``'s origin of the weight it carries
    under the acceleration ``a`` (body axes): ``I_i [0; a]`` with gravcomp's share taken out."""
    mw, s0, s1, s2 = weight_moment(m, i)
    out[0] = s1 * az - s2 * ay
    out[1] = s2 * ax - s0 * az
    out[2] = s0 * ay - s1 * ax
    out[3] = mw * ax
    out[4] = mw * ay
    out[5] = mw * az


@kernel
def has_gravcomp(m):
    """Whether any body is compensated."""
    for i in range(m.nb):
        if m.gravcomp[i, 0] != 0.0:
            return True
    return False


@kernel
def gravcomp_point_force(m, w, b, i):
    """``(px, py, pz, fx, fy, fz)``: body ``i``'s compensating force ``-m_gc g`` and the world point
    ``x_gc`` it acts at (world poses in ``w``; ``m_gc != 0``)."""
    gm = m.gravcomp[i, 0]
    Rw = w.Rw[b]
    pw = w.pw[b]
    lx = m.gravcomp[i, 1] / gm
    ly = m.gravcomp[i, 2] / gm
    lz = m.gravcomp[i, 3] / gm
    return (pw[i, 0] + Rw[i, 0, 0] * lx + Rw[i, 0, 1] * ly + Rw[i, 0, 2] * lz,
            pw[i, 1] + Rw[i, 1, 0] * lx + Rw[i, 1, 1] * ly + Rw[i, 1, 2] * lz,
            pw[i, 2] + Rw[i, 2, 0] * lx + Rw[i, 2, 1] * ly + Rw[i, 2, 2] * lz,
            -gm * m.gravity[0], -gm * m.gravity[1], -gm * m.gravity[2])


@kernel
def gravcomp_forces(m, w, b, q, scale, tau):
    """``scale`` times MuJoCo's ``qfrc_gravcomp`` at configuration row ``q`` added to ``tau`` (nv): per body the
    world force ``-m_gc g`` at ``x_gc`` through the point Jacobian of its chain.  FK of q into
    ``w`` first when any body is compensated; nothing otherwise."""
    if not has_gravcomp(m):
        return
    fk_state(m, w, b, q)
    Rw = w.Rw[b]
    pw = w.pw[b]
    for i in range(m.nb):
        if m.gravcomp[i, 0] == 0.0:
            continue
        px, py, pz, fx, fy, fz = gravcomp_point_force(m, w, b, i)
        fx *= scale
        fy *= scale
        fz *= scale
        j = i
        while j >= 0:
            j0 = m.iv[j]
            for k in range(m.nvj[j]):
                _wx, _wy, _wz, vx, vy, vz = dof_point_twist(m, Rw, pw, j, k, px, py, pz)
                tau[j0 + k] += vx * fx + vy * fy + vz * fz
            j = m.parent[j]


@kernel(parallel=True)
def gravcomp_batch(m, w, q, out):
    """``out[b]`` (nv) = ``qfrc_gravcomp`` at ``q[b]``."""
    for b in prange(q.shape[0]):
        for j in range(m.nv):
            out[b, j] = 0.0
        gravcomp_forces(m, w, b, q[b], 1.0, out[b])
