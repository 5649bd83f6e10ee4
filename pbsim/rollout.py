"""Headless rollouts: integrate a batch of trajectories and record them."""

from __future__ import annotations

import sys
import warnings

import numpy as np

from pbsim.jit import CompileWatch
from pbsim.contact import default_scene
from pbsim.control.control import Control, default_control
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
    act0=None,
    **integrator_options,
) -> Trajectory:
    """Integrate ``steps`` steps of size ``dt``.

    ``q0``/``v0``: (nq,)/(nv,) or batched (B, ·); ``batch`` replicates a single initial state.
    ``control``: a :class:`Control`, or a callable ``(t, state) -> Control`` evaluated every step;
    None: the file's actuators at ctrl = 0, as MuJoCo's (:func:`pbsim.control.control.default_control`).
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
    ``act0``: the initial activations of actuators with dynamics ((na,) or (B, na); zeros when
    None; a keyframe's ``act``), advanced every step by ``Integrator.step`` (the Python loop).
    ``device``: "cpu" (numba, this process) or "cuda" (the same kernels on an NVIDIA GPU through
    numba-cuda, ``pip install 'pbsim[gpu]'``; see :func:`pbsim.rollout_gpu.rollout_cuda`).

    On the CPU the step loop runs in compiled code (:func:`pbsim.integrators.driver.rollout_batch`,
    no per-step Python) whenever the method has a step kernel and ``control`` is not a callable;
    steps the rules must see in Python (a divergence, a solver that did not converge, a body
    sinking) go through ``Integrator.step`` as in the Python loop, with the same result bit for
    bit.  ``Trajectory.info["loop"]`` says which loop ran ("kernel" or "python");
    ``info["iterations"]`` / ``info["unconverged_steps"]``: solver iterations and unconverged
    steps per trajectory, summed over the run (methods that report them);
    ``info["fallback_steps"]``: steps whose solver stalled and that the step kernel redid as
    sub-steps (methods with that fallback, ``StepSpec.fallback``: pbfd, pbd_friction).
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
        if getattr(model, "na", 0):
            raise InputError(
                f"model {model.name!r} has {model.na} actuator activation(s) (dyntype); the GPU rollout "
                "does not advance them: use device='cpu'"
            )
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
    state = State.make(model, q0, v0, batch, names=("q0", "v0"), act=act0)
    if control is None:  # MuJoCo's: the file's actuators at ctrl = 0 (before the servo check sees it)
        control = default_control(model)
    integ.warn_explicit_servos(state.q, dt, control)
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
    iters = np.zeros(B)  # solver iterations, summed over the steps (methods that report them)
    unconv = np.zeros(B, np.int64)  # steps whose solver did not converge
    fbs = np.zeros(B)  # steps the kernel redid as sub-steps (StepSpec.fallback)
    spec = getattr(integ, "STEP", None)
    fallback = spec is not None and spec.fallback is not None
    reports = [False]  # the method reports iterations
    warned = [False]
    bar = None
    ctrl_fn = control if callable(control) else None
    ctrl = control if isinstance(control, Control) else None

    def python_step(k, state, depth=3):
        """Step k of every trajectory through ``integ.step`` and the rules; returns the new state."""
        nonlocal bar
        if ctrl_fn is not None:
            c = ctrl_fn(state.t, state)
        else:
            c = ctrl
        with watch:
            new, diag = integ.step(state, c, dt)
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
            diverged[...] = diverged | bad
            new.q[bad], new.v[bad] = state.q[bad], state.v[bad]
            diag.energy[bad] = np.nan
        if diag.penetration is not None:
            pen[...] = np.maximum(pen, np.where(diverged, pen, diag.penetration))
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
                if not warned[0]:
                    warnings.warn(msg + " (on_nan='stop': the run goes on)", PbsimWarning, stacklevel=depth)
                    warned[0] = True
        if diag.iterations is not None:
            reports[0] = True
            iters[...] += diag.iterations
            if diag.converged is not None:
                unconv[...] += ~np.asarray(diag.converged, bool)
        if "substeps" in diag.extra:
            fbs[...] += np.asarray(diag.extra["substeps"]) > 1
        if k % record_every == 0:
            r = k // record_every
            T[r], Q[r], V[r], E[r] = new.t, new.q, new.v, diag.energy
        return new

    def tick(n):
        nonlocal bar
        if progress:
            if bar is None:  # made after the first step, so its rate leaves out the compilation
                from tqdm import tqdm

                bar = tqdm(total=steps, desc=f"{name} dt={dt:g}", unit="step", mininterval=0.5)
            bar.update(n)

    loop = _KernelLoop.make(integ, model, ctrl, B, steps) if ctrl_fn is None and COMPILED_LOOP else None
    if loop is None:
        for k in range(1, steps + 1):
            state = python_step(k, state)
            tick(1)
    else:
        loop.run(
            state,
            dt,
            record_every,
            steps,
            T,
            Q,
            V,
            E,
            diverged,
            pen,
            iters,
            fbs,
            warned,
            on_nan,
            watch,
            python_step,
            tick,
            progress,
        )
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
            "loop": "python" if loop is None else "kernel",
            **(
                {
                    "iterations": int(iters[0]) if single else iters.astype(np.int64),
                    "unconverged_steps": int(unconv[0]) if single else unconv,
                }
                if reports[0] or (loop is not None and loop.reports)
                else {}
            ),
            **({"fallback_steps": int(fbs[0]) if single else fbs.astype(np.int64)} if fallback else {}),
        },
    )


COMPILED_LOOP = True  # False: every rollout steps through Python (the reference the kernel loop is tested against)


class _KernelLoop:
    """``rollout``'s step loop inside compiled code (:func:`pbsim.integrators.driver.rollout_batch`)
    for a method with a step kernel (``Integrator.STEP``) and a control that is not a callable.

    The kernel runs many steps per call, records every k-th frame and applies the divergence rule
    per row; a row stops before a step the Python loop must see (it diverges, its solver did not
    converge -- where methods fall back to sub-steps --, or a body sinks deeper than
    ``Scene.max_penetration``).  That step then runs through ``integ.step`` and the very code of
    the Python loop, from the same state (the other rows are rewound to it: rows are independent
    and the kernels deterministic), so the result is the Python loop's, bit for bit
    (tests/test_rollout_kernel.py)."""

    @classmethod
    def make(cls, integ, model, ctrl, B, steps):
        """The loop, or None where the Python loop must run (no step kernel, a subclass with its
        own ``step``, a method whose kernel scratch refuses its options, e.g. pbad's LBFGS)."""
        from pbsim.control.control import SPD
        from pbsim.integrators.driver import driver, rollout_batch

        spec = getattr(integ, "STEP", None)
        if spec is None or steps == 0 or type(integ).step is not Integrator.step or getattr(model, "na", 0):
            return None
        control = ctrl
        try:
            kc = control.kernel_arrays(model, B)
            w, sw, ks, x = integ.scratch(B, dense=kc.mode == SPD and kc.solver != 0)
        except InputError:
            return None
        self = cls()
        self.drv = driver(rollout_batch, spec.step, *spec.variant(integ, kc, ks))
        self.integ, self.model, self.control, self.kc = integ, model, control, kc
        self.w, self.sw, self.ks, self.x = w, sw, ks, x
        self.info = getattr(x, spec.info) if spec.info is not None else np.ones((B, 4))
        self.reports = spec.info is not None
        return self

    def run(
        self,
        state,
        dt,
        every,
        steps,
        T,
        Q,
        V,
        E,
        diverged,
        pen,
        iters,
        fbs,
        warned,
        on_nan,
        watch,
        python_step,
        tick,
        progress,
    ):
        from pbsim.integrators.divergence import actuator_energy, energy_scale, reference_energy

        model, integ, B = self.model, self.integ, state.batch
        rule = integ.divergence
        e_ref = reference_energy(model, state)  # what the first integ.step sets (State.energy_ref)
        if rule.energy_factor is None:
            thr = np.full(B, np.inf)
        else:  # divergence.check: gain > factor (E_model + what the control can add)
            thr = rule.energy_factor * (np.full(B, energy_scale(model)) + actuator_energy(model, self.control, B))
        thr = np.ascontiguousarray(thr, np.float64)
        q = np.array(state.q, np.float64, order="C")
        v = np.array(state.v, np.float64, order="C")
        qn, vn, e = np.empty_like(q), np.empty_like(v), np.empty((B, 2))
        stop = np.zeros(B, np.int64)
        tt = np.cumsum(np.concatenate(([state.t], np.full(steps, dt))))  # t after k steps, as t += dt
        maxpen = float(integ.scene.max_penetration)

        def call(k0, n):
            with watch:
                self.drv(
                    model.k,
                    self.ks,
                    self.kc,
                    self.w,
                    self.sw,
                    self.x,
                    q,
                    v,
                    qn,
                    vn,
                    e,
                    self.info,
                    float(dt),
                    int(k0),
                    int(n),
                    int(every),
                    Q,
                    V,
                    E,
                    e_ref,
                    thr,
                    float(rule.speed_limit),
                    ~diverged,
                    on_nan == "raise" or not warned[0],
                    maxpen,
                    pen,
                    iters,
                    fbs,
                    stop,
                    False,
                )

        k, chunk = 0, steps
        cap = max(1, steps // 50) if progress else steps
        if B > 1:  # a row's stop rewinds every row to the chunk's start and replays: at most an eighth
            cap = min(cap, max(16, steps // 8))  # (a1 nmdp 20 ms, one row past the depth bound at step 93: 2x)
        while k < steps:
            n = min(chunk, cap, steps - k)
            saved = (q.copy(), v.copy(), pen.copy(), iters.copy(), fbs.copy()) if B > 1 else None
            call(k, n)
            hit = stop[stop > 0]
            if hit.size == 0:
                k += n
                tick(n)
                chunk = 2 * chunk
                continue
            kmin = int(hit.min())  # the first step the Python loop must take
            if saved is not None and not (stop == kmin).all():  # rewind every row to step kmin - 1
                q[...], v[...], pen[...], iters[...], fbs[...] = saved
                if kmin - 1 > k:
                    call(k, kmin - 1 - k)
                    if stop.any():  # pragma: no cover - deterministic kernels never get here
                        raise RuntimeError("rollout: the kernel loop did not replay its steps")
            st = State(q.copy(), v.copy(), float(tt[kmin - 1]), energy_ref=e_ref)
            new = python_step(kmin, st, 4)  # warnings point at rollout's caller
            q[...], v[...] = new.q, new.v
            tick(kmin - k)
            k, chunk = kmin, 16
        r = np.arange(1, T.shape[0])
        T[1:] = tt[r * every]


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
