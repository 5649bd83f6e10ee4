"""Fluid forces: MuJoCo's inertia-box model (``<option density viscosity wind>``), ``qfrc_fluid``.

Each body of the file (a *part*: bodies that pbsim fuses through fixed joints keep one each) moves
through a medium of density ``rho`` and viscosity ``beta`` blowing at ``wind`` as the box of the
same mass and principal inertia, ``b_i = sqrt(6 (I_j + I_k - I_i) / m)`` (``Model.fluid``,
:mod:`pbsim.model.fluid`).  In the frame of its principal axes at its centre of mass, with
``w`` its angular velocity and ``u`` its velocity less the wind's (both in that frame),
``d = (b_0 + b_1 + b_2) / 3``::

    torque_i = -pi d^3 beta w_i  - rho b_i (b_j^4 + b_k^4) / 64 |w_i| w_i      (MuJoCo's passive fluid force)
    force_i  = -3 pi d beta u_i  - rho / 2 b_j b_k |u_i| u_i

applied at the centre of mass.  The force is explicit: evaluated at the step's state, as MuJoCo
evaluates its passive forces (the methods that take it: ``Integrator.supports_fluid``).
"""

import math

from numba import prange

from pbsim.dynamics.jacobian import dof_point_twist
from pbsim.dynamics.kinematics import fk_state
from pbsim.jit import kernel


@kernel
def fluid_frame(m, Rw, pw, f):
    """Part ``f``'s principal frame in world axes, ``R`` row-major (9 values), then its centre (3)."""
    i = m.fl_body[f]
    A = Rw[i]
    F = m.fl_R[f]
    lp = m.fl_p[f]
    return (A[0, 0] * F[0, 0] + A[0, 1] * F[1, 0] + A[0, 2] * F[2, 0],
            A[0, 0] * F[0, 1] + A[0, 1] * F[1, 1] + A[0, 2] * F[2, 1],
            A[0, 0] * F[0, 2] + A[0, 1] * F[1, 2] + A[0, 2] * F[2, 2],
            A[1, 0] * F[0, 0] + A[1, 1] * F[1, 0] + A[1, 2] * F[2, 0],
            A[1, 0] * F[0, 1] + A[1, 1] * F[1, 1] + A[1, 2] * F[2, 1],
            A[1, 0] * F[0, 2] + A[1, 1] * F[1, 2] + A[1, 2] * F[2, 2],
            A[2, 0] * F[0, 0] + A[2, 1] * F[1, 0] + A[2, 2] * F[2, 0],
            A[2, 0] * F[0, 1] + A[2, 1] * F[1, 1] + A[2, 2] * F[2, 1],
            A[2, 0] * F[0, 2] + A[2, 1] * F[1, 2] + A[2, 2] * F[2, 2],
            pw[i, 0] + A[0, 0] * lp[0] + A[0, 1] * lp[1] + A[0, 2] * lp[2],
            pw[i, 1] + A[1, 0] * lp[0] + A[1, 1] * lp[1] + A[1, 2] * lp[2],
            pw[i, 2] + A[2, 0] * lp[0] + A[2, 1] * lp[1] + A[2, 2] * lp[2])


@kernel
def fluid_axis(rho, beta, d, bi, bj, bk, w, u):
    """Torque and force along one principal axis ``i`` (``bj``, ``bk`` the other two box sides) at
    local angular velocity ``w`` and relative velocity ``u`` along it (module docstring)."""
    tq = -math.pi * d * d * d * beta * w - rho * bi * (bj ** 4 + bk ** 4) / 64.0 * abs(w) * w
    fc = -3.0 * math.pi * d * beta * u - 0.5 * rho * bj * bk * abs(u) * u
    return tq, fc


@kernel
def fluid_forces(m, w, b, q, v, tau):
    """MuJoCo's ``qfrc_fluid`` at state row ``(q, v)`` added to ``tau`` (nv): per part, its wrench
    (:func:`fluid_axis` in its principal frame) through the Jacobian of its centre.  FK of q into
    ``w`` first when the model has fluid parts; nothing otherwise."""
    nf = m.fl_body.shape[0]
    if nf == 0:
        return
    fk_state(m, w, b, q)
    Rw = w.Rw[b]
    pw = w.pw[b]
    rho = m.fl_medium[0]
    beta = m.fl_medium[1]
    for f in range(nf):
        r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz = fluid_frame(m, Rw, pw, f)
        ox = oy = oz = ux = uy = uz = 0.0  # world angular velocity, velocity of the centre
        j = m.fl_body[f]
        while j >= 0:
            j0 = m.iv[j]
            for k in range(m.nvj[j]):
                wx, wy, wz, vx, vy, vz = dof_point_twist(m, Rw, pw, j, k, px, py, pz)
                s = v[j0 + k]
                ox += wx * s
                oy += wy * s
                oz += wz * s
                ux += vx * s
                uy += vy * s
                uz += vz * s
            j = m.parent[j]
        ux -= m.fl_medium[2]
        uy -= m.fl_medium[3]
        uz -= m.fl_medium[4]
        bx = m.fl_box[f]
        d = (bx[0] + bx[1] + bx[2]) / 3.0
        t0, f0 = fluid_axis(rho, beta, d, bx[0], bx[1], bx[2], r00 * ox + r10 * oy + r20 * oz,
                            r00 * ux + r10 * uy + r20 * uz)  # local axes: R^T (.)
        t1, f1 = fluid_axis(rho, beta, d, bx[1], bx[2], bx[0], r01 * ox + r11 * oy + r21 * oz,
                            r01 * ux + r11 * uy + r21 * uz)
        t2, f2 = fluid_axis(rho, beta, d, bx[2], bx[0], bx[1], r02 * ox + r12 * oy + r22 * oz,
                            r02 * ux + r12 * uy + r22 * uz)
        tx = r00 * t0 + r01 * t1 + r02 * t2  # world axes: R (.)
        ty = r10 * t0 + r11 * t1 + r12 * t2
        tz = r20 * t0 + r21 * t1 + r22 * t2
        fx = r00 * f0 + r01 * f1 + r02 * f2
        fy = r10 * f0 + r11 * f1 + r12 * f2
        fz = r20 * f0 + r21 * f1 + r22 * f2
        j = m.fl_body[f]
        while j >= 0:
            j0 = m.iv[j]
            for k in range(m.nvj[j]):
                wx, wy, wz, vx, vy, vz = dof_point_twist(m, Rw, pw, j, k, px, py, pz)
                tau[j0 + k] += wx * tx + wy * ty + wz * tz + vx * fx + vy * fy + vz * fz
            j = m.parent[j]


@kernel(parallel=True)
def fluid_batch(m, w, q, v, out):
    """``out[b]`` (nv) = ``qfrc_fluid`` at ``(q[b], v[b])``."""
    for b in prange(q.shape[0]):
        for j in range(out.shape[1]):
            out[b, j] = 0.0
        fluid_forces(m, w, b, q[b], v[b], out[b])
