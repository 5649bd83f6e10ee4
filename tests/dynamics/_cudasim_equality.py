"""Equality constraints in the explicit steps' CUDA twins (``CudaBatch``: the step kernel's
``cuda_twin``) against the CPU integrator, in two halves (as tests/integrators/_cudasim_pbfd.py):

- :func:`cpu_outputs` runs ``make(method, ...).step`` (compiled CPU kernels) in the pytest process;
- ``python _cudasim_equality.py CPU.npz`` (under NUMBA_ENABLE_CUDASIM=1) runs the CUDA path on the
  same inputs and prints ``DIFF name value`` lines (relative max differences).

Models: the four-bar closed by ``connect`` and the free box ``weld``ed to an arm of
test_equality.py, two trajectories each (the second starting 0.05 rad off the constraint), and
MuJoCo's limit constraint on the tendon ranges and ball cone of test_limits_mujoco.py (the second
trajectory thrown into them), 5 steps of euler and rk4 at 1 ms.
"""

import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[1]), str(Path(__file__).parents[2])]

import pbsim  # noqa: E402
from cudasim_steps import cpu_steps, gpu_steps, print_diffs  # noqa: E402
from test_equality import _xml  # noqa: E402
from test_limits_mujoco import TENDONS  # noqa: E402

CASES = [(name, method) for name in ("fourbar", "weld", "limits") for method in ("euler", "rk4")]
STEPS, DT = 5, 1e-3


def setup(name):
    p = Path(tempfile.mkdtemp()) / f"{name}.xml"
    p.write_text(TENDONS.format(dt=DT, integ="Euler") if name == "limits" else _xml(name, DT, "Euler"))
    m = pbsim.load(str(p))
    q = np.repeat(m.default_configuration()[None], 2, axis=0)
    v = np.zeros((2, m.nv))
    if name == "limits":  # q0 inside every limit but the rope's; thrown into the others
        q[1, :3] = [0.28, 0.0, 0.1]
        v[1, :] = [3.0, -4.0, 6.0, 2.0, 3.0, 0.0]
    else:
        q[1, 0] += 0.05
    return m, q, v


def cpu_outputs() -> dict:
    out = {}
    for name, method in CASES:
        m, q, v = setup(name)
        for k, a in cpu_steps(method, m, None, q, v, STEPS, DT, lambda d: True).items():
            out[f"{name}_{method}_{k}"] = a
    return out


if __name__ == "__main__":
    ref = np.load(sys.argv[1])
    for name, method in CASES:
        m, q, v = setup(name)
        gpu = gpu_steps(method, m, None, q, v, STEPS, DT)
        print_diffs({k: ref[f"{name}_{method}_{k}"] for k in ("q", "v", "e", "it")}, gpu, f"_{name}_{method}")
