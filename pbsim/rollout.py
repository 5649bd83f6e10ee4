"""Headless rollouts: integrate a batch of trajectories and record them."""

from __future__ import annotations

import sys
import warnings

import numpy as np

from pbsim.backends.kernel import CompileWatch
from pbsim.contact import default_scene
from pbsim.control.control import Control
from pbsim.dynamics.api import energy as _energy
from pbsim.errors import InputError, PbsimWarning, SimulationError, check_choice, check_dt, check_int
from pbsim.integrators.base import Integrator, State, make, validate_options
from pbsim.trajectory import Trajectory  # defined below rollout_gpu too; pbsim.rollout.Trajectory stays


def rollout(
    model,
    integrator: str | Integrator = "rk4",
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
    device: str = "cpu",
    **integrator_options,
) -> Trajectory:
    """Integrate ``steps`` steps of size ``dt``.

    ``q0``/``v0``: (nq,)/(nv,) or batched (B, ·); ``batch`` replicates a single initial state.
    ``control``: a :class:`Control`, or a callable ``(t, state) -> Control`` evaluated every step.
    ``scene``: the contact scene; None: :func:`pbsim.contact.default_scene` -- the model's own world
    geometry (an MJCF floor, hfields ...) and no contact when it has none (``pbsim.Scene()`` for
    none at all, ``pbsim.make_scene(model, ground="plane")`` to add a plane).
    ``on_nan``: "raise" (SimulationError naming the step and time) or "stop" (freeze diverged
    trajectories at their last good state and mark them in ``Trajectory.diverged``;
    ``Trajectory.info["divergence"]`` says at which step, when and why each first diverged).
    "Diverged" is the rule every integrator shares (:mod:`pbsim.integrators.divergence`,
    docs/reliability.md): NaN/inf, a joint speed beyond 1e4, or the energy rising by more than
    10 times the model's energy scale.  A body deeper in the environment than
    ``Scene.max_penetration`` (0.05 m) is a SimulationError too with "raise", a warning with
    "stop"; ``Trajectory.info["max_penetration"]`` keeps the deepest point of each trajectory.
    ``device``: "cpu" (numba, this process) or "cuda" (the same kernels on an NVIDIA GPU through
    numba-cuda, ``pip install 'pbsim[gpu]'``; see :func:`pbsim.rollout_gpu.rollout_cuda`).
    """
    check_choice("on_nan", on_nan, ON_NAN)
    steps = check_int("steps", steps, 0)
    dt = check_dt(dt)
    record_every = check_int("record_every", record_every, 1)
    cuda_args = {}
    if device == "cuda":  # the GPU driver's own arguments are not integrator options
        cuda_args = {k: integrator_options.pop(k) for k in CUDA_ARGS if k in integrator_options}
    _check_integrator_options(integrator, integrator_options)
    if device == "cuda":
        from pbsim.rollout_gpu import rollout_cuda

        return rollout_cuda(
            model,
            integrator,
            dt=dt,
            steps=steps,
            q0=q0,
            v0=v0,
            batch=batch,
            control=control,
            scene=scene,
            record_every=record_every,
            progress=progress,
            on_nan=on_nan,
            **cuda_args,
            **integrator_options,
        )
    if device != "cpu":
        raise InputError(f"device must be 'cpu' or 'cuda', got {device!r}")
    single = (q0 is None or np.ndim(q0) == 1) and (v0 is None or np.ndim(v0) == 1) and batch is None
    if scene is None and not isinstance(integrator, Integrator):
        scene = default_scene(model)  # the model's own world geometry (MJCF floor ...), else none
    integ = integrator if isinstance(integrator, Integrator) else make(integrator, model, scene, **integrator_options)
    state = State.make(model, q0, v0, batch, names=("q0", "v0"))
    B = state.batch
    name = integrator if isinstance(integrator, str) else integ.name
    watch = CompileWatch(name, notice=_notice(progress))
    with watch:  # first-run compilation: a notice, and its time kept apart (Trajectory.info)
        e0 = _energy(model, state.q, state.v).sum(axis=1)
    nrec = steps // record_every + 1
    T = np.zeros(nrec)
    Q = np.zeros((nrec, B, model.nq))
    V = np.zeros((nrec, B, model.nv))
    E = np.zeros((nrec, B))
    Q[0], V[0], E[0] = state.q, state.v, e0
    diverged = np.zeros(B, bool)
    first: list = [None] * B  # per trajectory: where and why it first diverged (on_nan="stop")
    pen = np.zeros(B)  # deepest contact point so far, per trajectory
    warned = False
    bar = None
    ctrl_fn = control if callable(control) else None
    ctrl = control if isinstance(control, Control) else None
    for k in range(1, steps + 1):
        if ctrl_fn is not None:
            ctrl = ctrl_fn(state.t, state)
        with watch:
            new, diag = integ.step(state, ctrl, dt)
        gone = diag.diverged if diag.diverged is not None else diag.nan
        if gone.any() and not (gone & ~diverged).sum() == 0:
            b = int(np.argmax(gone & ~diverged))
            why = diag.divergence[b] if diag.divergence is not None else "NaN or inf in the state"
            if on_nan == "raise":
                if bar is not None:
                    bar.close()
                raise SimulationError(
                    f"integrator {name!r} diverged ({why}) at step {k}, t = {new.t:.6g} s, dt = {dt:g}, "
                    f"trajectory {b} (docs/reliability.md); try a smaller dt or an implicit integrator"
                )
            for b in np.flatnonzero(gone & ~diverged):
                first[b] = dict(step=k, t=float(new.t), why=diag.divergence[b] if diag.divergence else None)
        if gone.any():
            bad = gone
            diverged |= bad
            new.q[bad], new.v[bad] = state.q[bad], state.v[bad]
            diag.energy[bad] = np.nan
        if diag.penetration is not None:
            pen = np.maximum(pen, np.where(diverged, pen, diag.penetration))
            if diag.deep.any() and not (diag.deep & ~diverged).sum() == 0:
                b = int(np.argmax(diag.deep & ~diverged))
                msg = (
                    f"integrator {name!r}: a body sank {diag.penetration[b]:.3g} m into the environment "
                    f"(bound {integ.scene.max_penetration:g} m, Scene.max_penetration) at step {k}, "
                    f"t = {new.t:.6g} s, dt = {dt:g}, trajectory {b}; try a smaller dt, a stiffer contact "
                    "or another integrator"
                )
                if on_nan == "raise":
                    if bar is not None:
                        bar.close()
                    raise SimulationError(msg)
                if not warned:
                    warnings.warn(msg + " (on_nan='stop': the run goes on)", PbsimWarning, stacklevel=2)
                    warned = True
        state = new
        if k % record_every == 0:
            r = k // record_every
            T[r], Q[r], V[r], E[r] = state.t, state.q, state.v, diag.energy
        if progress:
            if bar is None:  # made after the first step, so its rate leaves out the compilation
                from tqdm import tqdm

                bar = tqdm(total=steps, desc=f"{name} dt={dt:g}", unit="step", mininterval=0.5)
            bar.update(1)
    if bar is not None:
        bar.close()
    if single:
        Q, V, E = Q[:, 0], V[:, 0], E[:, 0]
    return Trajectory(
        T,
        Q,
        V,
        E,
        name,
        float(dt),
        diverged if on_nan == "stop" else None,
        info={
            "compile_s": watch.seconds,
            "max_penetration": pen[0] if single else pen,
            "divergence": first[0] if single else first,
        },
    )


ON_NAN = ("raise", "stop")
CUDA_ARGS = ("layout", "threads", "schedule")  # rollout_cuda's own keyword arguments (device='cuda')
ROLLOUT_ARGS = (
    "integrator",
    "dt",
    "steps",
    "q0",
    "v0",
    "batch",
    "control",
    "scene",
    "record_every",
    "progress",
    "on_nan",
    "device",
)


def _check_integrator_options(integrator, options: dict) -> None:
    """The keyword options of ``rollout`` beyond its own: an integrator's options, checked by its
    spec; an unknown one is an InputError listing rollout's arguments and the method's options."""
    if not options:
        return
    if isinstance(integrator, Integrator):
        raise InputError(
            f"rollout got options {sorted(options)} with an Integrator instance; give them to "
            f"make() instead (rollout's own arguments: {', '.join(ROLLOUT_ARGS)})"
        )
    if not isinstance(integrator, str):
        raise InputError(f"integrator must be a name or an Integrator, got {integrator!r}")
    try:
        validate_options(integrator, options)
    except InputError as e:
        raise InputError(f"rollout: {e}; rollout's own arguments: {', '.join(ROLLOUT_ARGS)}") from None


def _notice(progress: bool):
    """Where the compile notice goes: stderr, above a progress bar if one may be drawn."""
    if not progress:
        return None  # CompileWatch's default: one line on stderr

    def say(msg):
        from tqdm import tqdm

        tqdm.write(msg, file=sys.stderr)

    return say
