"""The end of a velocity-level step: effort clamping of the stable-PD joints and ``q+ = q (+) dt v+`` with its info."""

from __future__ import annotations

from pbsim.jit import kernel
from pbsim.control.solve import clamp_joint
from pbsim.dynamics.joints import integrate_config


@kernel
def clamp_velocity_step(m, c, sw, b, v, vn, dt):
    """Effort clamping of a velocity-level step (``Control(clamp=True)``): every stable-PD joint
    whose torque ``tc - kc (vn - v) / dt`` exceeds its limit is fixed at the limit as an explicit
    torque (its ``kc`` leaves ``sw.arm``), the explicit integrators' active set
    (:func:`pbsim.control.solve.clamp_active_set`).  Returns whether any joint changed (then
    the step is to be solved again)."""
    changed = False
    for j in range(m.nv):
        kc = sw.kc[b, j]
        if kc == 0.0:
            continue
        if clamp_joint(c, sw, b, j, sw.tc[b, j] - kc * (vn[j] - v[j]) / dt, sw.tau[b], sw.arm[b]):
            changed = True
    return changed


@kernel
def finish_step(m, w, sw, b, q, v1, dt, qn, vn, info, iterations, residual, ok, contacts):
    """``vn[b] = v1``, ``qn[b] = q (+) dt v1`` and ``info`` = [iterations, residual, converged,
    contacts]."""
    for j in range(m.nv):
        vn[b, j] = v1[j]
        sw.dq[b, j] = dt * v1[j]
    integrate_config(m, q, sw.dq[b], qn[b], w.Rj[b])
    info[0] = iterations
    info[1] = residual
    info[2] = 1.0 if ok else 0.0
    info[3] = contacts
