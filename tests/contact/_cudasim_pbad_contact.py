"""PBAD's step kernel with contact on non-plane shapes (static Box, heightfield bowl, Sphere), run
by the CUDA backend (``CudaBatch``: the step kernel's ``cuda_twin``) against the CPU integrator,
in two halves (see test_contact_energy.py):

- :func:`cpu_outputs` runs ``make("pbad", ...).step`` (compiled CPU kernels) in the pytest process;
- ``python _cudasim_pbad_contact.py CPU.npz`` (under NUMBA_ENABLE_CUDASIM=1) runs the CUDA path on
  the same inputs and prints ``DIFF name value`` lines (relative max differences) and
  ``ITER same|differ`` (LM iterations of the last step).
"""

import sys
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[1]), str(Path(__file__).parents[2])]

from _models import free_body  # noqa: E402
from cudasim_steps import cpu_steps, gpu_steps, print_diffs  # noqa: E402
from pbsim.contact import Box, HeightField, Sphere, make_scene  # noqa: E402

DT, STEPS = 0.05, 2


def setup():
    """(model, scene, q, v): a box falling onto a static Box (trajectory 0) and into a heightfield
    bowl (trajectory 1), both points already in contact."""
    m = free_body("box", [0.1, 0.1, 0.1])
    xs = np.linspace(-1, 1, 21)
    X, Y = np.meshgrid(xs, xs, indexing="ij")
    env = [
        Box([0.4, 0.4, 0.1], np.eye(3), [1.5, 0.0, 0.0]),
        HeightField(0.1 + 0.2 * (X * X + Y * Y), (-1, 1, -1, 1)),
        Sphere([0.0, 1.5, 0.0], 0.3),
    ]
    scene = make_scene(m, ground=None, environment=env, mu=0.5, box_edge_points=0)
    q = np.tile(m.neutral(), (2, 1))
    q[0, :3] = [1.5, 0.05, 0.198]
    q[1, :3] = [0.05, -0.02, 0.2]
    q[1, 3:7] = [0.99, 0.05, -0.1, 0.02]
    q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1)[:, None]
    v = np.array([[0.3, -0.2, -0.5, 0.4, 0.1, -0.7], [-0.1, 0.2, -1.0, 0.0, 0.5, 0.2]])
    return m, scene, q, v


def cpu_outputs() -> dict:
    from pbsim.contact import contact_query

    m, scene, q, v = setup()
    assert (contact_query(m, scene, q)["d"] > 0).any(axis=1).all()  # both start in contact
    return cpu_steps("pbad", m, scene, q, v, STEPS, DT, lambda d: d.converged.all() and (d.iterations >= 2).all())


def gpu_outputs() -> dict:
    m, scene, q, v = setup()
    return gpu_steps("pbad", m, scene, q, v, STEPS, DT)


if __name__ == "__main__":
    with np.load(sys.argv[1]) as f:
        cpu = dict(f)
    print_diffs(cpu, gpu_outputs())
