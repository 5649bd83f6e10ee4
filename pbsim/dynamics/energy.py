"""Kinetic and potential energy: T = 1/2 sum v_i^T I_i v_i, V = -sum m_i g . c_i (world com; less
the share held up by gravity compensation, pbsim.dynamics.gravcomp), and
the kinetic energy's gradient in O(n)."""
from numba import prange

from pbsim.jit import kernel
from pbsim.dynamics.gravcomp import weight_moment
from pbsim.dynamics.kinematics import velocity_pass, world_pass
from pbsim.dynamics.spatial import force_to_parent_add, mat6_vec, motion_cross


@kernel
def energy_state(m, w, b, q, v, out):
    """out[b, 0] = kinetic, out[b, 1] = potential (zero at the world origin).  Armature's
    rotor energy 1/2 armature v^2 is part of the kinetic energy."""
    velocity_pass(m, w, b, q, v)
    world_pass(m, w, b)
    ke = 0.0
    pe = 0.0
    Iv = w.vec[b, 0]
    for i in range(m.nb):
        mat6_vec(m.inertia[i], w.vel[b, i], Iv)
        for r in range(6):
            ke += 0.5 * w.vel[b, i, r] * Iv[r]
        mw, s0, s1, s2 = weight_moment(m, i)  # gravity's mass and first moment (less gravcomp's)
        for r in range(3):
            Rr = w.Rw[b, i, r]
            pe -= m.gravity[r] * (mw * w.pw[b, i, r] + Rr[0] * s0 + Rr[1] * s1 + Rr[2] * s2)
    for j in range(m.nv):
        ke += 0.5 * m.armature[j] * v[j] * v[j]
    out[0] = ke
    out[1] = pe


@kernel(parallel=True)
def energy_batch(m, w, q, v, out):
    for b in prange(q.shape[0]):
        energy_state(m, w, b, q[b], v[b], out[b])


@kernel
def kinetic_energy_gradient_state(m, w, b, q, v, dk_dq, dk_dv):
    """``dk_dq = dK/dq`` (tangent ``q (+) dq``, as pbsim.dynamics.rnea_derivatives) and ``dk_dv =
    dK/dqd = M(q) qd`` of ``K = 1/2 qd^T M(q) qd`` in O(n).

    Moving joint j by ``dq`` moves its subtree by the twist ``xi = S_j dq``, so for b in subtree(j)
    ``dv_b = xi x (v_b - v_lambda(j))`` and ``dI_b = xi x* I_b - I_b xi x`` (world frame; the joint's
    own bracket term for ball/free joints included).  Summed, ``1/2 v^T dI v`` cancels the
    ``xi x v_b`` part and leaves ``dK/dq_j = -(S_j x v_lambda(j)) . H_j`` with ``H_j = sum_{b in
    subtree(j)} I_b v_b`` (the note's form, shown here for every joint type); ``dK/dqd_j = S_j . H_j``
    (+ armature).  Evaluated in body j's coordinates (the motion-force pairing is frame-free)."""
    velocity_pass(m, w, b, q, v)
    H = w.pA[b]
    vp = w.vec[b, 0]
    u = w.vec[b, 1]
    for i in range(m.nb):
        mat6_vec(m.inertia[i], w.vel[b, i], H[i])
    for i in range(m.nb - 1, -1, -1):  # H[i] holds subtree(i)'s momentum in body i's frame here
        j0 = m.iv[i]
        nvi = m.nvj[i]
        for r in range(6):  # the parent's velocity in body i's frame: v_i - S_i qd_i
            s = w.vel[b, i, r]
            for k in range(nvi):
                s -= m.S[i, k, r] * v[j0 + k]
            vp[r] = s
        for k in range(nvi):
            motion_cross(m.S[i, k], vp, u)
            gq = 0.0
            gv = m.armature[j0 + k] * v[j0 + k]
            for r in range(6):
                gq -= u[r] * H[i, r]
                gv += m.S[i, k, r] * H[i, r]
            dk_dq[j0 + k] = gq
            dk_dv[j0 + k] = gv
        par = m.parent[i]
        if par >= 0:
            force_to_parent_add(w.R[b, i], w.p[b, i], H[i], H[par])


@kernel(parallel=True)
def kinetic_energy_gradient_batch(m, w, q, v, dk_dq, dk_dv):
    for b in prange(q.shape[0]):
        kinetic_energy_gradient_state(m, w, b, q[b], v[b], dk_dq[b], dk_dv[b])
