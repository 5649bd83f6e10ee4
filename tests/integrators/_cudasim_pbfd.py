"""PBFD's step kernel run by the CUDA backend (``CudaBatch``: the step kernel's ``cuda_twin``)
against the CPU integrator, in two halves (as tests/contact/_cudasim_pbad_contact.py):

- :func:`cpu_outputs` runs ``make("pbfd", ...).step`` (compiled CPU kernels) in the pytest process;
- ``python _cudasim_pbfd.py CPU.npz [METHOD C_PAR]`` (under NUMBA_ENABLE_CUDASIM=1) runs the CUDA path on the
  same inputs, with both GPU schedules (whole steps in the kernel; one LM iteration per launch,
  which has no sub-step fallback: substep=0 there, refused otherwise), and prints ``DIFF name
  value`` lines (relative max differences) and ``ITER same|differ`` (JTJ-LM iterations of the
  last step); the launch schedule's names end in ``_launch``.  For pbfd also the in-kernel
  sub-step fallback (issue 30: an iteration cap of 2, every step stalls and is redone as halves):
  names ending in ``_fallback``, ``SUBSTEPS same|differ`` (sub-steps of the last step),
  ``ROLLOUT_FALLBACK same|differ`` (``rollout(device="cuda")``'s count against CudaBatch's), and
  ``REFUSED launch`` when the per-launch schedule refuses the default ``substep``.

``METHOD``: ``pbfd`` (default) or ``pbd_friction`` (the PBD baseline's LM kernels, whose
per-launch phases are PBAD's), with its ``C_PAR``.
"""

import sys
from pathlib import Path

import numpy as np

sys.path[:0] = [
    str(Path(__file__).parents[1] / "contact"),
    str(Path(__file__).parents[1]),
    str(Path(__file__).parents[2]),
]

from _models import free_body  # noqa: E402
from cudasim_steps import cpu_steps, gpu_steps, print_diffs  # noqa: E402
from pbsim.contact import HeightField, make_scene  # noqa: E402

DT, STEPS, CPAR = 0.05, 2, 1e6
FALLBACK = dict(max_iterations=2, substep=2)  # pbfd: every step stalls and falls back


def setup():
    """(model, scene, q, v): a box sliding on a planar facet of a heightfield valley (trajectory 0)
    and tilted on the other facet (trajectory 1), 8 corner points, the deepest 3 mm in."""

    m = free_body("box", [0.1, 0.1, 0.1])
    xs = np.linspace(-1, 1, 21)
    X, Y = np.meshgrid(xs, xs, indexing="ij")
    scene = make_scene(
        m, ground=None, environment=[HeightField(0.2 * np.abs(X) + 0.05 * Y, (-1, 1, -1, 1))], mu=0.5, box_edge_points=0
    )
    q = np.tile(m.neutral(), (2, 1))
    q[0, :3] = [0.5, 0.05, 0.25]
    q[1, :3] = [-0.4, -0.02, 0.15]
    q[1, 3:7] = [0.99, 0.05, -0.1, 0.02]
    q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1)[:, None]
    q[:, 2] -= _gap(m, scene, q) + 0.003  # the lowest corner 3 mm deep
    v = np.array([[0.5, 0.1, -0.1, 0.1, 0.05, -0.2], [-0.3, 0.1, -0.2, 0.0, 0.2, 0.1]])
    return m, scene, q, v


def _gap(m, scene, q):
    """Height of each box's lowest corner above the surface (the SDF at the corners, radius 0)."""
    from pbsim.contact import contact_query

    X = contact_query(m, scene, q)["X"]
    from pbsim.contact.query import env_sdf_points

    ks = scene.kernel_arrays(m)
    out = np.zeros((X.shape[0] * X.shape[1], 4))
    env_sdf_points(ks, np.ascontiguousarray(X.reshape(-1, 3)), out)
    return out[:, 0].reshape(X.shape[:2]).min(axis=1)


def cpu_outputs(method="pbfd", cpar=CPAR) -> dict:
    from pbsim.contact import contact_query

    m, scene, q, v = setup()
    assert (contact_query(m, scene, q)["d"] > 0).any(axis=1).all()  # both start in contact
    out = cpu_steps(method, m, scene, q, v, STEPS, DT,
                    lambda d: d.converged.all() and (d.iterations >= 2).all() and not d.extra["stalled"].any(),
                    c_friction=cpar)  # fmt: skip
    if method == "pbfd":
        subs = []
        fb = cpu_steps(method, m, scene, q, v, STEPS, DT, lambda d: subs.append(d.extra["substeps"]) or True,
                       c_friction=cpar, **FALLBACK)  # fmt: skip
        assert (subs[-1] > 1).all()
        out.update({k + "_fallback": a for k, a in fb.items()}, sub_fallback=np.asarray(subs[-1], float))
    return out


def gpu_outputs(schedule="kernel", method="pbfd", cpar=CPAR, **options) -> dict:
    m, scene, q, v = setup()
    if schedule == "launch":  # no sub-step fallback in this schedule (refused unless substep=0)
        options.setdefault("substep", 0)
    return gpu_steps(method, m, scene, q, v, STEPS, DT, c_friction=cpar, schedule=schedule, **options)


def refused_launch(method, cpar):
    """Whether CudaBatch's per-launch schedule refuses the default substep (it has no fallback)."""
    from pbsim.backends.cuda import CudaBatch
    from pbsim.errors import InputError

    m, scene, q, v = setup()
    try:
        CudaBatch(m, method, scene=scene, batch=2, schedule="launch", c_friction=cpar)
    except InputError as e:
        return "sub-step fallback" in str(e)
    return False


if __name__ == "__main__":
    with np.load(sys.argv[1]) as f:
        cpu = dict(f)
    method, cpar = (sys.argv[2], float(sys.argv[3])) if len(sys.argv) > 3 else ("pbfd", CPAR)
    for schedule, tag in (("kernel", ""), ("launch", "_launch")):
        print_diffs(cpu, gpu_outputs(schedule, method, cpar), tag)
    if "q_fallback" in cpu:
        ref = {k[: -len("_fallback")]: a for k, a in cpu.items() if k.endswith("_fallback")}
        from pbsim.backends import cuda as pc

        m, scene, q, v = setup()
        g = pc.CudaBatch(m, method, scene=scene, batch=len(q), c_friction=cpar, **FALLBACK)
        g.set_state(q, v)
        g.advance(STEPS, DT)
        qg, vg, eg = g.record()
        info = g.solver_info()
        print_diffs(ref, dict(q=qg, v=vg, e=eg, it=info[:, 0]), "_fallback")
        print("SUBSTEPS", "same" if np.array_equal(info[:, 4], ref["sub"]) else f"differ {info[:, 4]} {ref['sub']}")
        print("FALLBACK_STEPS", g.fallback_steps().tolist())
        import pbsim

        tr = pbsim.rollout(m, method, dt=DT, steps=STEPS, q0=q, v0=v, scene=scene, device="cuda", c_friction=cpar,
                           **FALLBACK)  # fmt: skip
        same = np.array_equal(tr.info["fallback_steps"], g.fallback_steps()) and (g.fallback_steps() > 0).all()
        print("ROLLOUT_FALLBACK", "same" if same else f"differ {tr.info['fallback_steps']} {g.fallback_steps()}")
    if refused_launch(method, cpar):
        print("REFUSED launch")
