"""Headless rollouts on an NVIDIA GPU: ``pbsim.rollout(..., device="cuda")``.

The batch lives on the device for the whole rollout; each launch runs ``record_every`` steps
(one thread per trajectory, the loop inside the kernel) and only the recorded frames (q, v,
energy) are copied back.  Results equal the CPU path's (same kernel source, fp64).
"""

from __future__ import annotations

import sys

import numpy as np

from pbsim.backends.cuda import CudaBatch, free_memory, memory_estimate, plan_chunks, resolve_layout
from pbsim.contact import default_scene
from pbsim.control.control import Control
from pbsim.dynamics.api import energy as _energy
from pbsim.errors import InputError, SimulationError, check_dt, check_int
from pbsim.integrators.base import State
from pbsim.integrators.divergence import check_run
from pbsim.trajectory import Trajectory  # not pbsim.rollout: that module dispatches device="cuda" here


def rollout_cuda(
    model,
    integrator: str = "rk4",
    dt: float = 1e-3,
    steps: int = 1000,
    q0=None,
    v0=None,
    batch: int | None = None,
    control=None,
    scene=None,
    record_every: int = 1,
    progress: bool = False,
    on_nan: str = "raise",
    layout: str = "auto",
    threads: int | None = None,
    schedule: str = "kernel",
    **integrator_options,
) -> Trajectory:
    """:func:`pbsim.rollout` on the GPU (same arguments and result).

    Differences: ``integrator`` must be a name with a CUDA path
    (:func:`pbsim.backends.cuda.supported_integrators`); ``control`` must be a constant
    :class:`pbsim.Control` (a callable would need the state on the host every step); NaN is
    detected on recorded frames only, so with ``on_nan="stop"`` a trajectory is frozen at its
    last finite recorded frame.  ``layout``: "auto" (SoA from
    ``pbsim.backends.cuda.AUTO_SOA_MIN_BATCH`` trajectories on), "aos" or "soa" device storage
    (see :mod:`pbsim.backends.cuda`).  ``schedule``: "kernel" (solver loop inside the kernel) or
    "launch" (one solver iteration per launch; pbad).  ``integrator_options`` go to the
    stepper (pbad: ``max_iterations``, ``gtol``, ``xtol``, ``hessian``, as on the CPU).

    A batch that does not fit in the GPU's free memory runs in chunks, one after the other
    (:func:`pbsim.backends.cuda.plan_chunks`; a line on stderr says so, and
    ``Trajectory.info["chunks"]`` holds their number); not even one trajectory fitting is a
    :class:`pbsim.backends.cuda.DeviceMemoryError`.
    Raises :class:`pbsim.backends.cuda.DeviceError` without a GPU.
    """
    if on_nan not in ("raise", "stop"):
        raise InputError(f"on_nan must be 'raise' or 'stop', got {on_nan!r}")
    if not isinstance(integrator, str):
        raise InputError("device='cuda' takes the integrator by name, got an Integrator instance")
    if control is not None and not isinstance(control, Control):
        raise InputError(
            "device='cuda' takes a constant pbsim.Control; a callable control would need the "
            "state on the host every step (use device='cpu')"
        )
    steps = check_int("steps", steps, 0)
    dt = check_dt(dt)
    record_every = check_int("record_every", record_every, 1)
    single = (q0 is None or np.ndim(q0) == 1) and (v0 is None or np.ndim(v0) == 1) and batch is None
    state = State.make(model, q0, v0, batch, names=("q0", "v0"))
    B = state.batch
    layout = resolve_layout(layout, B, integrator)
    if scene is None:
        scene = default_scene(model)  # the same rule as the CPU rollout
    per, shared = memory_estimate(model, integrator, scene, control, B, **integrator_options)
    chunks = plan_chunks(B, per, shared, free_memory())
    if len(chunks) > 1:
        print(
            f"pbsim: {integrator} on the GPU: {per:,} bytes per trajectory x {B:,} does not fit in the free GPU "
            f"memory; running {len(chunks)} chunks of up to {chunks[0][1]:,} trajectories",
            file=sys.stderr,
            flush=True,
        )
    nrec = steps // record_every + 1
    T = np.arange(nrec) * record_every * dt
    Q = np.zeros((nrec, B, model.nq))
    V = np.zeros((nrec, B, model.nv))
    E = np.zeros((nrec, B))
    diverged = np.zeros(B, bool)
    fallback = None  # steps the step kernel redid as sub-steps (StepSpec.fallback), per trajectory
    for a, b in chunks:
        fb = _run_chunk(
            model,
            integrator,
            scene,
            control,
            state.q[a:b],
            state.v[a:b],
            a,
            dt,
            nrec,
            record_every,
            progress,
            on_nan,
            layout,
            threads,
            schedule,
            integrator_options,
            Q[:, a:b],
            V[:, a:b],
            E[:, a:b],
            diverged[a:b],
        )
        if fb is not None:
            if fallback is None:
                fallback = np.zeros(B, np.int64)
            fallback[a:b] = fb
    if single:
        Q, V, E = Q[:, 0], V[:, 0], E[:, 0]
    return Trajectory(
        T,
        Q,
        V,
        E,
        integrator,
        dt,
        diverged if on_nan == "stop" else None,
        info={
            "device": "cuda",
            "layout": layout,
            "chunks": len(chunks),
            **({} if fallback is None else {"fallback_steps": int(fallback[0]) if single else fallback}),
        },
    )


def _run_chunk(
    model,
    integrator,
    scene,
    control,
    q0,
    v0,
    offset,
    dt,
    nrec,
    record_every,
    progress,
    on_nan,
    layout,
    threads,
    schedule,
    options,
    Q,
    V,
    E,
    diverged,
):
    """Trajectories ``offset ...`` of a rollout (one chunk) into the views Q, V, E, diverged; returns
    the steps each redid as sub-steps (``CudaBatch.fallback_steps``, None for a method without)."""
    B = len(q0)
    sim = CudaBatch(model, integrator, scene, B, layout=layout, threads=threads, schedule=schedule, **options)
    sim.set_state(q0, v0)
    sim.set_control(control)
    Q[0], V[0], E[0] = q0, v0, _energy(model, q0, v0).sum(axis=1)
    frames = range(1, nrec)
    if progress:
        from tqdm import tqdm

        frames = tqdm(frames, desc=f"{integrator} dt={dt:g} cuda", unit="frame", mininterval=0.5)
    for r in frames:
        sim.advance(record_every, dt)
        q, v, e = sim.record()
        bad, why = check_run(model, q0, v0, q, v)  # the shared rule, on recorded frames
        if bad.any():
            if on_nan == "raise":
                b = int(np.argmax(bad))
                k = r * record_every
                raise SimulationError(
                    f"integrator {integrator!r} diverged on device='cuda' by step {k}, "
                    f"t = {k * dt:.6g} s, dt = {dt:g}, trajectory {offset + b} ({why[b]}); try a smaller dt or an "
                    "implicit integrator"
                )
            diverged |= bad
            q[bad], v[bad] = Q[r - 1][bad], V[r - 1][bad]
            e[bad] = np.nan
        Q[r], V[r], E[r] = q, v, e
    return sim.fallback_steps()
