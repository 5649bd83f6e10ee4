"""The acceleration of a step under SPD: solver dispatch (MABA / SF / DF) and effort clamping."""
from pbsim.backends.kernel import kernel
from pbsim.control.control import DF, SF, SPD
from pbsim.control.dense import spd_dense
from pbsim.control.sparse import spd_sparse
from pbsim.dynamics.aba import aba_backward, aba_forward, aba_init


@kernel
def accel_solve(m, c, w, sw, b, q, v, tau, arm, qdd):
    """(M + diag(arm)) qdd = tau - h.  SPD with solver DF/SF factorizes M + Kd dt (paper 001
    Sec. 2.3); everything else runs ABA with ``arm`` added to D, i.e. MABA (Eq. 30-46).  Expects
    ``velocity_pass`` done for (q, v).  DF/SF need ``sw.Md`` of size nv (else MABA is used)."""
    dense_ok = sw.Md.shape[1] >= m.nv
    if c.mode == SPD and c.solver == DF and dense_ok:
        spd_dense(m, w, b, q, v, tau, arm, sw.Md[b], sw.hv[b], sw.zv[b], qdd)
    elif c.mode == SPD and c.solver == SF and dense_ok:
        spd_sparse(m, w, b, q, v, tau, arm, c.dof_parent, sw.Md[b], sw.hv[b], sw.zv[b], qdd)
    else:
        aba_init(m, w, b)
        aba_backward(m, w, b, tau, arm)
        aba_forward(m, w, b, qdd)


@kernel
def preclip_explicit(m, c, sw, b, tau):
    """Clip the explicit actuation (joints without an implicit Kd dt term) to +-effort."""
    for j in range(m.nv):
        if sw.kc[b, j] == 0.0:
            lim = c.effort[j]
            a = sw.tc[b, j]
            if a > lim or a < -lim:
                cl = lim if a > 0.0 else -lim
                tau[j] += cl - a
                sw.tc[b, j] = cl


@kernel
def clamp_active_set(m, c, w, sw, b, q, v, tau, arm, qdd):
    """Effort clamping with SPD (documented interplay): the SPD torque ``Q - Kd dt qdd`` (Eq. 6)
    depends on the solution, so after a solve every joint whose torque exceeds its limit is fixed
    at the limit as an explicit torque (its ``Kd dt`` leaves D) and the system is solved again;
    unsaturated joints stay implicit.  At most 4 re-solves; joints never leave the active set."""
    for it in range(4):
        changed = False
        for j in range(m.nv):
            kc = sw.kc[b, j]
            if kc == 0.0:
                continue
            lim = c.effort[j]
            a = sw.tc[b, j] - kc * qdd[j]
            if a > lim or a < -lim:
                cl = lim if a > 0.0 else -lim
                tau[j] += cl - sw.tc[b, j]
                arm[j] -= kc
                sw.tc[b, j] = cl
                sw.kc[b, j] = 0.0
                changed = True
        if not changed:
            break
        accel_solve(m, c, w, sw, b, q, v, tau, arm, qdd)
