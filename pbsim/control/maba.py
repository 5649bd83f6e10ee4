"""Standalone MABA (paper 001 Sec. 5, Appendix A Eq. 30-46): the SPD acceleration *and* the SPD
control torque, so the torque can be logged, clamped or tailored before forward dynamics.

The integrators use the embedded form (``arm = Kd dt`` added to D inside ABA, one pass); this
module runs the same passes and returns ``tau = Q - Kd dt qdd`` (Eq. 6/40) as well.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from pbsim.jit import kernel
from pbsim.control.control import Control
from pbsim.control.solve import joint_forces, solve_and_clamp
from pbsim.dynamics.api import as_batch
from pbsim.dynamics.kinematics import velocity_pass
from pbsim.dynamics.workspace import work_for
from pbsim.errors import InputError


@kernel
def maba_state(m, c, w, sw, b, q, v, dt, qdd, tau_out):
    """SPD acceleration of state b by the control's solver (MABA/SF/DF) with the model's joint
    damping taken implicitly (as the ``euler`` step does), and the actuation torque of Eq. 6."""
    joint_forces(m, c, w, sw, b, q, v, dt, True, False)
    velocity_pass(m, w, b, q, v)
    solve_and_clamp(m, c, w, sw, b, q, v, qdd)
    for j in range(m.nv):
        tau_out[j] = sw.tc[b, j] - sw.kc[b, j] * qdd[j]  # Eq. 6: Q - Kd dt qdd


@kernel(parallel=True)
def maba_batch(m, c, w, sw, q, v, dt, qdd, tau_out):
    for i in prange(q.shape[0]):
        b = np.int64(i)
        maba_state(m, c, w, sw, b, q[b], v[b], dt, qdd[b], tau_out[b])


def spd_forward(model, q, v, control: Control, dt: float, solver: str | None = None):
    """``(qdd, tau)``: the stable-PD acceleration (paper 001 Eq. 7) and the control torque (Eq. 6)
    for state(s) ``q``, ``v`` (single or batched).  ``solver`` overrides ``control.spd_solver``
    ("maba", "sf", "df").  Plain PD / torque controls return their explicit torque."""
    from dataclasses import replace

    from pbsim.control.stepwork import make_step_work

    dt = float(dt)
    if not np.isfinite(dt) or dt <= 0:
        raise InputError(f"dt must be a positive finite number, got {dt!r}")
    if solver is not None:
        control = replace(control, spd_solver=solver)
    Q, single = as_batch(q, model.nq, "q")
    B = Q.shape[0]
    V, _ = as_batch(v, model.nv, "v", B)
    kc = control.kernel_arrays(model, B)
    sw = make_step_work(model, B, stages=1, dense=kc.solver != 0)
    qdd = np.empty((B, model.nv))
    tau = np.empty((B, model.nv))
    maba_batch(model.k, kc, work_for(model, B), sw, Q, V, dt, qdd, tau)
    return (qdd[0], tau[0]) if single else (qdd, tau)


def maba(model, q, v, control: Control, dt: float):
    """Standalone MABA: ``(qdd, tau)`` with ``tau`` the SPD torque to log/clamp (Sec. 5)."""
    return spd_forward(model, q, v, control, dt, solver="maba")
