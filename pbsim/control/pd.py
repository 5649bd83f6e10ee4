"""PD and stable-PD joint torques, evaluated inside integrator kernels (paper 001 Eq. 1-2, 6)."""
from pbsim.jit import kernel
from pbsim.control.control import EXACT, PD, SPD
from pbsim.dynamics.joints import difference_config, integrate_config


@kernel
def control_torques(m, c, b, q, v, dt, dq, qs, Rj, tau, arm):
    """Actuation torque of the control for state b, and the SPD diagonal term.

    ``tau`` (nv,) receives the torques; ``arm`` (nv,) receives ``dt * kd`` when the control is
    stable PD (added to D inside ABA, which makes it MABA: paper 001 Eq. 37-38), zero otherwise.
    Plain PD (Eq. 1): ``-kp (q (-) q_ref) - kd (v - v_ref)``.  SPD: ``tau`` holds the explicit part
    Q of Eq. 40, ``-kp e - kd (v - v_ref)``, and the full SPD torque (Eq. 6) is ``Q - arm * qdd``.
    The position error is taken on the configuration manifold, in the tangent space (body-frame
    velocities of ball and free joints): PD ``e = -(q_ref (-) q)``; SPD with the paper's first-order
    prediction (``c.predict`` LINEAR, the default) ``e = -(q_ref (-) q) + dt v``, and with the exact
    prediction (EXACT) ``e = -(q_ref (-) q')``, ``q' = q (+) dt v``.  The two agree for 1-DOF joints
    and to first order in the error for ball and free joints.
    ``dq`` is nv scratch, ``qs`` nq scratch, ``Rj`` 3x3 scratch; ``q`` and ``v`` are 1-D rows.
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
        exact = c.mode == SPD and c.predict == EXACT
        if exact:
            for j in range(m.nv):
                dq[j] = dt * v[j]
            integrate_config(m, q, dq, qs, Rj)  # q' = q (+) dt v  (Eq. 4, first line, on the manifold)
        else:
            for k in range(m.nq):
                qs[k] = q[k]
        difference_config(m, qs, c.q_ref[bq], dq, Rj)  # dq = q_ref (-) q'
        if c.mode == SPD and not exact:
            for j in range(m.nv):
                dq[j] -= dt * v[j]  # first-order Taylor q + dt v (Eq. 4), in the tangent space at q
        for j in range(m.nv):
            tau[j] += c.kp[bp, j] * dq[j] - c.kd[bd, j] * (v[j] - c.v_ref[bv, j])  # Eq. 40 / Eq. 1
            arm[j] = dt * c.kd[bd, j] if c.mode == SPD else 0.0  # K_i = Kd dt (Eq. 38)
