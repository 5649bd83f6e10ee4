"""The contact kernels' CUDA twins (``cuda_twin``) against the CPU kernels on 2 states of a box
(8 corner points) on a plane, in two halves (see test_cuda_twin.py):

- :func:`cpu_outputs` runs the compiled CPU kernels; the test calls it in the pytest process,
  so the subprocess compiles no CPU kernel;
- ``python _cudasim_check.py CPU.npz`` (under NUMBA_ENABLE_CUDASIM=1) runs the twins on the same
  inputs and prints the max abs differences against the stored CPU outputs as
  ``DIFF name value scale`` lines.  Without an argument it computes both halves itself.
"""

import sys
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[2])]

from numba import cuda  # noqa: E402  (the simulator swaps this module global inside kernels)

from _models import free_body  # noqa: E402
from pbsim.contact import make_scene  # noqa: E402
from pbsim.contact.penalty import contact_generalized_forces  # noqa: E402
from pbsim.contact.query import contact_query_state  # noqa: E402
from pbsim.dynamics.kinematics import fk_state, velocity_pass, world_pass  # noqa: E402
from pbsim.dynamics.workspace import work_for  # noqa: E402

NAMES = ("X", "d", "n", "dd_dv", "tau")


def setup():
    """(model, kernel scene arrays, q, v): a box resting 3-4.5 cm above a plane, 2 states."""
    m = free_body("box", [0.1, 0.2, 0.05])
    sc = make_scene(m, mu=0.5, box_edge_points=0)
    ks = sc.kernel_arrays(m)
    assert ks.npts == 8
    B = 2
    q = np.tile(m.neutral(), (B, 1))
    q[:, 2] = [0.03, 0.045]
    q[1, 3:7] = [0.98, 0.1, 0.15, 0.05]
    q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1)[:, None]
    v = np.array([[0.3, -0.2, -0.5, 0.4, 0.1, -0.7], [-0.1, 0.2, -1.0, 0.0, 0.5, 0.2]])
    return m, ks, q, v


def _outputs(m, ks, B):
    n, nv = ks.npts, m.nv
    return np.zeros((B, n, 3)), np.zeros((B, n)), np.zeros((B, n, 3)), np.zeros((B, n, nv)), np.zeros((B, nv))


def cpu_outputs() -> dict:
    m, ks, q, v = setup()
    B = q.shape[0]
    cpu = _outputs(m, ks, B)
    w = work_for(m, B)
    for b in range(B):
        fk_state(m.k, w, b, q[b])
        contact_query_state(m.k, ks, w, b, cpu[0][b], cpu[1][b], cpu[2][b], cpu[3][b])
        velocity_pass(m.k, w, b, q[b], v[b])
        world_pass(m.k, w, b)
        contact_generalized_forces(m.k, ks, w, b, q[b], v[b], cpu[4][b])
    assert (cpu[1] > 0).sum(axis=1).min() >= 1 and np.abs(cpu[4]).max() > 1.0  # contacts and forces exist
    return dict(zip(NAMES, cpu))


def _query_kernel(mk, s, w, q, v, X, D, N, dD, tau):
    i = cuda.grid(1)
    if i < q.shape[0]:
        fk_t(mk, w, i, q[i])
        cq_t(mk, s, w, i, X[i], D[i], N[i], dD[i])
        vel_t(mk, w, i, q[i], v[i])
        wp_t(mk, w, i)
        gf_t(mk, s, w, i, q[i], v[i], tau[i])


def gpu_outputs() -> dict:
    global fk_t, vel_t, wp_t, cq_t, gf_t
    from pbsim.jit import cuda_twin

    m, ks, q, v = setup()
    B = q.shape[0]
    fk_t, vel_t, wp_t = cuda_twin(fk_state), cuda_twin(velocity_pass), cuda_twin(world_pass)
    cq_t, gf_t = cuda_twin(contact_query_state), cuda_twin(contact_generalized_forces)
    gpu = _outputs(m, ks, B)
    cuda.jit(_query_kernel)[1, B](m.k, ks, work_for(m, B), q, v, *gpu)
    return dict(zip(NAMES, gpu))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        with np.load(sys.argv[1]) as f:
            cpu = dict(f)
    else:
        cpu = cpu_outputs()
    gpu = gpu_outputs()
    for name in NAMES:
        print("DIFF", name, float(np.abs(cpu[name] - gpu[name]).max()), float(np.abs(cpu[name]).max()))
