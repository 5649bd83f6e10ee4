"""Contact between bodies in the NMDP step kernels and the velocity-level baselines through the CUDA
backend (``CudaBatch``: the step kernels' ``cuda_twin``) against the CPU integrators, in two halves (as
_cudasim_ne_mdp.py):

- :func:`cpu_outputs` runs ``make(method, ...).step`` in the pytest process;
- ``python _cudasim_body_nmdp.py CPU.npz METHOD`` (under NUMBA_ENABLE_CUDASIM=1) runs the CUDA path on
  the same inputs and prints ``DIFF name value`` / ``ITER`` lines.

The model: a box yawed and moving, 1 mm into another box resting on the floor (MJCF written here):
both directions of the box-box items, the bounded candidate buffer, the relative Jacobian."""

import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).parents[1]), str(Path(__file__).parents[2])]

from cudasim_steps import cpu_steps, gpu_steps, print_diffs  # noqa: E402

XML = """<mujoco><worldbody><geom name="floor" type="plane" size="5 5 0.1"/>
<body name="b1" pos="0 0 0.098"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1"/></body>
<body name="b2" pos="0.02 0 0.2955" euler="3 2 25"><freejoint/><geom type="box" size="0.08 0.08 0.08" mass="0.5"/></body>
</worldbody></mujoco>"""
DT = {"nmdp": 0.02, "pbd_nmdp": 0.02, "ne_mdp": 0.005, "ne_dry": 0.005}
STEPS = 1


def setup():
    """(model, scene, q, v): two trajectories of the two boxes."""
    import pbsim
    from pbsim.contact import make_scene

    p = Path(tempfile.mkdtemp()) / "two_boxes.xml"
    p.write_text(XML)
    m = pbsim.load(str(p))
    scene = make_scene(m, mu=0.5)
    assert scene.kernel_arrays(m).nitem == 2
    q = np.tile(m.default_configuration(), (2, 1))
    q[1, 7] += 0.01
    v = np.zeros((2, m.nv))
    v[:, 6:9] = [[0.2, -0.1, -0.3], [-0.1, 0.05, -0.6]]
    v[:, 9:12] = [[0.5, 0.2, -1.0], [0.0, 0.3, 0.4]]
    return m, scene, q, v


def cpu_outputs(method="nmdp") -> dict:
    m, scene, q, v = setup()
    return cpu_steps(method, m, scene, q, v, STEPS, DT[method], lambda d: bool(d.converged.all()))


def gpu_outputs(method="nmdp") -> dict:
    m, scene, q, v = setup()
    return gpu_steps(method, m, scene, q, v, STEPS, DT[method])


if __name__ == "__main__":
    with np.load(sys.argv[1]) as f:
        cpu = dict(f)
    print_diffs(cpu, gpu_outputs(*sys.argv[2:3]))
