"""Configuration-space Lie-group operations: batched integrate/difference (kernels in joints.py)
and the right-trivialised inverse exponential differential used by Runge-Kutta-Munthe-Kaas."""
import math

from numba import prange

from pbsim.jit import kernel
from pbsim.dynamics.joints import BALL, FREE, difference_config, integrate_config


@kernel(parallel=True)
def integrate_batch(m, w, q, dv, out):
    for b in prange(q.shape[0]):
        integrate_config(m, q[b], dv[b], out[b], w.Rj[b])


@kernel(parallel=True)
def difference_batch(m, w, q0, q1, out):
    for b in prange(q0.shape[0]):
        difference_config(m, q0[b], q1[b], out[b], w.Rj[b])


@kernel
def dexpinv_velocity(m, dq, v, out):
    """``out = d(dq)/dt`` for velocity ``v`` at ``q_k (+) dq`` (right-trivialised dexp^-1)."""
    for i in range(m.nb):
        jt = m.jtype[i]
        j = m.iv[i]
        if jt == BALL or jt == FREE:
            a = j if jt == BALL else j + 3
            tx, ty, tz = dq[a], dq[a + 1], dq[a + 2]
            wx, wy, wz = v[a], v[a + 1], v[a + 2]
            th2 = tx * tx + ty * ty + tz * tz
            th = math.sqrt(th2)
            if th < 1e-6:
                k = 1.0 / 12.0 + th2 / 720.0
            else:
                k = 1.0 / th2 - (1.0 + math.cos(th)) / (2.0 * th * math.sin(th))
            cx = ty * wz - tz * wy  # theta x w
            cy = tz * wx - tx * wz
            cz = tx * wy - ty * wx
            ccx = ty * cz - tz * cy  # theta x (theta x w)
            ccy = tz * cx - tx * cz
            ccz = tx * cy - ty * cx
            out[a] = wx + 0.5 * cx + k * ccx  # Jr^-1(theta) w
            out[a + 1] = wy + 0.5 * cy + k * ccy
            out[a + 2] = wz + 0.5 * cz + k * ccz
            if jt == FREE:  # position part: x' = exp(theta^) v_lin
                lx, ly, lz = v[j], v[j + 1], v[j + 2]
                if th < 1e-12:
                    out[j], out[j + 1], out[j + 2] = lx, ly, lz
                else:
                    ux, uy, uz = tx / th, ty / th, tz / th
                    cs, sn = math.cos(th), math.sin(th)
                    d = (ux * lx + uy * ly + uz * lz) * (1.0 - cs)
                    out[j] = lx * cs + (uy * lz - uz * ly) * sn + ux * d
                    out[j + 1] = ly * cs + (uz * lx - ux * lz) * sn + uy * d
                    out[j + 2] = lz * cs + (ux * ly - uy * lx) * sn + uz * d
        else:
            for k2 in range(m.nvj[i]):
                out[j + k2] = v[j + k2]
