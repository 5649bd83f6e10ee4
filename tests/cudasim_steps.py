"""The halves shared by the ``_cudasim_*.py`` step-kernel twin checks: a method's steps by the CPU
integrator (in the pytest process) and by the CUDA backend (``CudaBatch``, the step kernel's
``cuda_twin``: in the subprocess under NUMBA_ENABLE_CUDASIM=1), and the ``DIFF``/``ITER`` lines the
tests parse (:func:`conftest.run_cudasim_twin`)."""

import numpy as np


def cpu_steps(method, m, scene, q, v, steps, dt, check, **options) -> dict:
    """``steps`` steps of ``make(method, m, scene, **options)`` from (q, v); ``check(d)`` must
    hold for every step's Diagnostics.  Iterations: of the last step."""
    from pbsim.integrators import State, make

    I = make(method, m, scene, **options)
    s = State.make(m, q, v)
    for _ in range(steps):
        s, d = I.step(s, None, dt)
        assert check(d), d
    it = d.iterations if d.iterations is not None else np.zeros(len(s.q))  # explicit methods: no solver
    return dict(q=s.q, v=s.v, e=d.energy, it=np.asarray(it, float))


def gpu_steps(method, m, scene, q, v, steps, dt, **options) -> dict:
    """The same steps by ``CudaBatch(m, method, ...)``."""
    from pbsim.backends import cuda as pc

    g = pc.CudaBatch(m, method, scene=scene, batch=len(q), **options)
    g.set_state(q, v)
    g.advance(steps, dt)
    qg, vg, eg = g.record()
    info = g.solver_info()
    return dict(q=qg, v=vg, e=eg, it=info[:, 0] if info is not None else np.zeros(len(q)))


def print_diffs(cpu: dict, gpu: dict, tag: str = ""):
    """``DIFF name<tag> value`` (relative max difference) for q, v, e and ``ITER<tag> same|differ``."""
    for name in ("q", "v", "e"):
        a, b = np.asarray(gpu[name], float), cpu[name]
        print("DIFF", name + tag, float(np.abs(a - b).max() / max(1.0, np.abs(b).max())))
    same = np.array_equal(np.asarray(gpu["it"]), cpu["it"])
    print("ITER" + tag, "same" if same else f"differ {gpu['it']} {cpu['it']}")
