"""A contact step kernel run by the CUDA backend (``CudaBatch``: the step kernel's ``cuda_twin``,
:func:`pbsim.optim.qp.qp_solve_as` included) against the CPU integrator, in two halves (as
_cudasim_pbfd.py): :func:`cpu_outputs` in the pytest process; ``python _cudasim_ne_mdp.py
CPU.npz [METHOD]`` (under NUMBA_ENABLE_CUDASIM=1) runs the CUDA path on the same inputs and prints
``DIFF name value`` lines (relative max differences) and ``ITER same|differ`` (iterations of the
last step).  METHOD: ``ne_mdp`` (default), or ``nmdp`` / ``pbd_nmdp`` (the PGM kernel of
integrators/pgm/ with the NE or position-based hooks)."""

import sys
from pathlib import Path

import numpy as np

sys.path[:0] = [
    str(Path(__file__).parents[1]),
    str(Path(__file__).parents[2]),
    str(Path(__file__).parents[2] / "scripts" / "figures"),
]

from cudasim_steps import cpu_steps, gpu_steps, print_diffs  # noqa: E402

DT, STEPS = 0.005, 3


def setup():
    """(model, scene, q, v): a box sliding on the plane 2 mm in, and one falling onto it tilted."""
    from bench_ne_mdp import box
    from pbsim.contact import make_scene

    m = box()
    scene = make_scene(m, mu=0.5, box_edge_points=0)
    q = np.tile(m.neutral(), (2, 1))
    q[0, 2] = 0.048
    q[1, 2] = 0.07
    q[1, 3:7] = [0.99, 0.05, -0.1, 0.02]
    q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1)[:, None]
    v = np.array([[0.5, 0.1, -0.1, 0.1, 0.05, -0.2], [-0.3, 0.1, -1.0, 0.0, 0.2, 0.1]])
    return m, scene, q, v


def _converged_in_contact(d) -> bool:
    return bool(d.converged.all()) and bool((d.extra.get("active_contacts", np.ones(1)) > 0).all())


def cpu_outputs(method="ne_mdp") -> dict:
    m, scene, q, v = setup()
    return cpu_steps(method, m, scene, q, v, STEPS, DT, _converged_in_contact)


def gpu_outputs(method="ne_mdp") -> dict:
    m, scene, q, v = setup()
    return gpu_steps(method, m, scene, q, v, STEPS, DT)


if __name__ == "__main__":
    with np.load(sys.argv[1]) as f:
        cpu = dict(f)
    print_diffs(cpu, gpu_outputs(*sys.argv[2:3]))
