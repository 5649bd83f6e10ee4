"""M(q)^-1 applied in O(n): the articulated-body factor of M + diag(arm_extra) at zero velocity, and
the impulse-based ABA solve with it (paper 004 Eq. 25; Featherstone RBDA Sec. 7.3).  Used by the
variational integrator's RIQN update and as PBAD's LBFGS preconditioner (paper 000 Sec. 5)."""
from pbsim.jit import kernel
from pbsim.dynamics.aba import aba_backward, aba_init, joint_acceleration
from pbsim.dynamics.kinematics import velocity_pass
from pbsim.dynamics.spatial import force_to_parent_add, motion_to_child


@kernel
def minv_factor(m, w, b, q, zero, arm_extra):
    """Articulated inertias at q with zero velocity: the O(n) factor of ``M(q) + diag(arm_extra)``."""
    velocity_pass(m, w, b, q, zero)
    aba_init(m, w, b)
    aba_backward(m, w, b, zero, arm_extra)


@kernel
def minv_solve(m, w, b, tau, x):
    """``x = (M + diag(arm_extra))^-1 tau`` from :func:`minv_factor` (impulse-based ABA, Eq. 25:
    no velocity, no gravity), O(n): backward pass of the bias impulses, forward pass."""
    pA = w.pA[b]
    u = w.u[b]
    acc = w.acc[b]
    du = w.vec[b, 0]
    t6 = w.vec[b, 1]
    for i in range(m.nb):
        for r in range(6):
            pA[i, r] = 0.0
    for i in range(m.nb - 1, -1, -1):
        j0 = m.iv[i]
        nvi = m.nvj[i]
        for a in range(nvi):
            s = tau[j0 + a]
            for r in range(6):
                s -= m.S[i, a, r] * pA[i, r]
            u[i, a] = s
        par = m.parent[i]
        if par >= 0:
            for a in range(nvi):
                s = 0.0
                for k in range(nvi):
                    s += w.Dinv[b, i, a, k] * u[i, k]
                du[a] = s
            for r in range(6):
                s = pA[i, r]
                for a in range(nvi):
                    s += w.U[b, i, a, r] * du[a]
                t6[r] = s
            force_to_parent_add(w.R[b, i], w.p[b, i], t6, pA[par])
    for i in range(m.nb):
        par = m.parent[i]
        j0 = m.iv[i]
        nvi = m.nvj[i]
        if par >= 0:
            motion_to_child(w.R[b, i], w.p[b, i], acc[par], acc[i])
        else:
            for r in range(6):
                acc[i, r] = 0.0
        joint_acceleration(m, w, b, i, du, x)
