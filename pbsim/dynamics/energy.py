"""Kinetic and potential energy: T = 1/2 sum v_i^T I_i v_i, V = -sum m_i g . c_i (world com)."""
from numba import prange

from pbsim.backends.kernel import kernel
from pbsim.dynamics.kinematics import velocity_pass, world_pass
from pbsim.dynamics.spatial import mat6_vec


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
        for r in range(3):
            cw = w.pw[b, i, r]
            for k in range(3):
                cw += w.Rw[b, i, r, k] * m.com[i, k]
            pe -= m.mass[i] * m.gravity[r] * cw
    for j in range(m.nv):
        ke += 0.5 * m.armature[j] * v[j] * v[j]
    out[0] = ke
    out[1] = pe


@kernel(parallel=True)
def energy_batch(m, w, q, v, out):
    for b in prange(q.shape[0]):
        energy_state(m, w, b, q[b], v[b], out[b])
