"""PD and stable-PD joint torques, evaluated inside integrator kernels."""
from pbsim.backends.kernel import kernel
from pbsim.control.control import PD, SPD
from pbsim.dynamics.joints import difference_config


@kernel
def control_torques(m, c, b, q, v, dt, dq, Rj, tau, arm):
    """Total joint torque of the control for state b, and the SPD diagonal term.

    ``tau`` (nv,) receives the torques; ``arm`` (nv,) receives ``dt * kd`` when the control is
    stable PD (to be added to D inside ABA, which makes it MABA: paper 001 Eq. 7, Appendix A),
    zero otherwise.  Plain PD (Eq. 2): ``-kp (q - q_ref) - kd (v - v_ref)``; SPD (Eq. 6) uses
    ``q + dt v`` for q and leaves ``- kd dt qdd`` to the ``arm`` term.  ``dq`` is nv scratch,
    ``Rj`` 3x3 scratch; ``q`` and ``v`` are 1-D rows.
    """
    bt = b if c.tau.shape[0] > 1 else 0
    for j in range(m.nv):
        tau[j] = c.tau[bt, j]
        arm[j] = 0.0
    if c.mode == PD or c.mode == SPD:
        bp = b if c.kp.shape[0] > 1 else 0
        bd = b if c.kd.shape[0] > 1 else 0
        bq = b if c.q_ref.shape[0] > 1 else 0
        bv = b if c.v_ref.shape[0] > 1 else 0
        difference_config(m, c.q_ref[bq], q, dq, Rj)  # dq = q (-) q_ref
        for j in range(m.nv):
            e = dq[j]
            if c.mode == SPD:
                e += dt * v[j]
            tau[j] += -c.kp[bp, j] * e - c.kd[bd, j] * (v[j] - c.v_ref[bv, j])
            arm[j] = dt * c.kd[bd, j] if c.mode == SPD else 0.0
