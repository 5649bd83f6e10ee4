"""Contact between bodies through the CUDA backend (``CudaBatch``: the step kernels' ``cuda_twin``)
against the CPU integrators, in two halves (as tests/integrators/_cudasim_pbfd.py):

- :func:`cpu_outputs` runs ``make(method, ...).step`` for euler, pbad and pbfd in the pytest process;
- ``python _cudasim_body.py CPU.npz`` (under NUMBA_ENABLE_CUDASIM=1) runs the CUDA path on the same
  inputs (pbad and pbfd with both GPU schedules) and prints ``DIFF name value`` / ``ITER`` lines.

The model: a box pressed, yawed and moving, onto another box resting on the floor (MJCF written
here): both directions of the box-box items, the item face choice, the relative Jacobian."""

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
RUNS = (("euler", 0.002, 3), ("pbad", 0.02, 2), ("pbfd", 0.02, 2))


def setup():
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


def cpu_outputs() -> dict:
    m, scene, q, v = setup()
    out = {}
    for method, dt, steps in RUNS:
        r = cpu_steps(
            method, m, scene, q, v, steps, dt, lambda d: bool(d.converged.all()) if d.converged is not None else True
        )
        out.update({f"{k}_{method}": val for k, val in r.items()})
    return out


if __name__ == "__main__":
    with np.load(sys.argv[1]) as f:
        cpu = dict(f)
    m, scene, q, v = setup()
    for method, dt, steps in RUNS:
        ref = {k: cpu[f"{k}_{method}"] for k in ("q", "v", "e", "it")}
        for schedule in ("kernel", "launch") if method != "euler" else ("kernel",):
            opts = {} if method == "euler" else {"schedule": schedule}
            if method == "pbfd" and schedule == "launch":  # no sub-step fallback in this schedule (issue 30)
                opts["substep"] = 0
            print_diffs(ref, gpu_steps(method, m, scene, q, v, steps, dt, **opts), f"_{method}_{schedule}")
