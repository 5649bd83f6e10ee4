"""The integrator contract and the one registry.

An integrator is a class registered by name (:func:`register`) in its own folder under
``pbsim/integrators/`` (found by file name: nothing else is edited to add one) with

- ``OPTIONS``: its declarative option spec (:class:`~pbsim.integrators.options.Option`), checked
  once by :func:`make`, turned into CLI flags by ``pbsim.cli`` and listed by ``pbsim integrators``;
- ``STEP``: its per-trajectory step kernel and scratch (:class:`StepSpec`), which the generic
  drivers run: :mod:`pbsim.integrators.driver` on the CPU (one step with energy for
  :meth:`Integrator.step`, n steps for ``CpuBatch``) and ``pbsim.backends.cuda`` on the GPU.
  A method whose step is not (yet) one kernel sets ``STEP = None`` and overrides ``_step``;
- ``step(state, control, dt) -> (State, Diagnostics)`` over a batch of trajectories.

State a method keeps between steps beyond (q, v) goes in ``State.carry[name]`` (its own slot).
"""
from __future__ import annotations

import difflib
from collections import namedtuple
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from pbsim.control.control import Control, default_control
from pbsim.contact.scene import Scene
from pbsim.dynamics.api import as_batch, as_q
from pbsim.errors import InputError, check_batch, check_dt
from pbsim.jit import unused, unused_float
from pbsim.integrators.divergence import DEFAULT as DEFAULT_DIVERGENCE
from pbsim.integrators.divergence import DivergenceRule
from pbsim.integrators.divergence import check as check_divergence
from pbsim.integrators.options import Option

_REGISTRY: dict[str, tuple[type, dict, str]] = {}


@dataclass
class State:
    """Batched state: ``q`` (B, nq), ``v`` (B, nv), time ``t``; ``q_prev`` = q_k of the step that
    produced it (two-step methods; None at the start); ``carry``: per-integrator slots, ``carry[name]``
    belongs to integrator ``name`` (e.g. the collocation node pbad3/4 continue from), dropped by
    :meth:`reset_history` when the state is edited."""

    q: np.ndarray
    v: np.ndarray
    t: float = 0.0
    q_prev: np.ndarray | None = None
    carry: dict = field(default_factory=dict)
    # (B,) energy the divergence rule measures this run against (pbsim.integrators.divergence):
    # set by the first step, kept by the next ones, dropped by reset_history
    energy_ref: np.ndarray | None = None
    # (B, na) activations of the actuators with dynamics (MJCF dyntype; pbsim.control.actuators),
    # advanced by Integrator.step for every method alike; None: zeros (or a model without any)
    act: np.ndarray | None = None

    @classmethod
    def make(cls, model, q=None, v=None, batch: int | None = None, t: float = 0.0,
             names: tuple = ("q", "v"), act=None) -> "State":
        """``names``: what the errors call q and v (``rollout`` passes ("q0", "v0")); ``act``:
        (na,) or (B, na) activations (zeros when None)."""
        batch = check_batch(batch)
        q = model.default_configuration() if q is None else q
        Q, _ = as_q(model, q, names[0])
        if batch is not None:
            Q, _ = as_batch(Q, model.nq, names[0], batch)
        V, _ = as_batch(np.zeros(model.nv) if v is None else v, model.nv, names[1], Q.shape[0])
        A = None
        if getattr(model, "na", 0) or act is not None:
            from pbsim.control.actuators import check_act

            A = np.array(np.broadcast_to(check_act(model, act, Q.shape[0]), (Q.shape[0], model.na)))
        return cls(np.array(Q), np.array(V), float(t), act=A)

    @property
    def batch(self) -> int:
        return self.q.shape[0]

    def copy(self) -> "State":
        carry = {k: tuple(a.copy() if isinstance(a, np.ndarray) else a for a in c) for k, c in self.carry.items()}
        return State(self.q.copy(), self.v.copy(), self.t, None if self.q_prev is None else self.q_prev.copy(), carry,
                     None if self.energy_ref is None else self.energy_ref.copy(),
                     None if self.act is None else self.act.copy())

    def reset_history(self):
        """Forget q_prev, every integrator's carry and the divergence rule's reference energy
        (after q or v were set by hand)."""
        self.q_prev = None
        self.carry = {}
        self.energy_ref = None


@dataclass
class Diagnostics:
    """Per-step, per-trajectory diagnostics."""

    energy: np.ndarray  # (B,) total energy after the step
    nan: np.ndarray  # (B,) bool: the new state holds NaN/inf
    iterations: np.ndarray | None = None  # (B,) solver iterations (implicit methods)
    residual: np.ndarray | None = None  # (B,) final residual / gradient norm
    converged: np.ndarray | None = None  # (B,) bool
    extra: dict = field(default_factory=dict)
    penetration: np.ndarray | None = None  # (B,) deepest contact point after the step [m] (scenes with contact)
    deep: np.ndarray | None = None  # (B,) bool: penetration above the scene's bound (a body sinking in)
    # the shared divergence rule (pbsim.integrators.divergence), applied by Integrator.step:
    diverged: np.ndarray | None = None  # (B,) bool: non-finite, or speed / energy beyond the bound
    divergence: list | None = None  # (B,) which joint/body left the bound and by how much (None: fine)


@dataclass(frozen=True)
class StepSpec:
    """How the generic drivers run a method: its per-trajectory step kernel and scratch.

    ``step``: kernel ``step(m, s, c, w, sw, x, b, q, v, dt, qn, vn)``, one whole step of
    trajectory ``b`` (solver loop included) from rows ``q[b], v[b]`` into ``qn[b], vn[b]``;
    ``s`` are the scene's contact arrays (:class:`pbsim.contact.KScene`), ``c`` the control's,
    ``w`` the dynamics workspace, ``sw`` the explicit step scratch (:class:`~pbsim.control.stepwork.StepWork`).
    ``extra(integrator, B)``: the method's own scratch ``x`` (a namedtuple of arrays, or of
    namedtuples of arrays; ``None``: none); the fields named in ``batched`` have a leading
    batch axis.  ``info``: name of a (B, 4) field of ``x`` the step fills with [iterations,
    residual, converged, objective] (the Diagnostics of implicit methods).
    ``features``: optional parts of the kernel tree (see :class:`pbsim.jit.Variants`)
    and ``used(integrator, kc, ks)`` which of them a run needs.
    ``per_launch``: optional ``(begin, iterate, end, n_iter)`` kernels of the same signature for
    the GPU's one-solver-iteration-per-launch schedule (``done``: a (B,) field of ``x`` set to 1
    when a trajectory's solver has stopped).
    ``fallback``: the name of the int field of ``x`` holding the levels of the sub-step fallback
    the step kernel runs itself (:func:`pbsim.optim.substep.substep_step`: a step whose solver
    stalls is redone as halves, recursively, inside the kernel, so every driver gives the same
    step); ``info`` then has a 5th column, the number of sub-steps the step became (1: none),
    and ``x.fbn`` (B,) counts the steps that fell back.  The per-launch schedule has no fallback:
    ``CudaBatch(schedule="launch")`` refuses a run whose levels are not 0."""

    step: object
    extra: Callable | None = None
    batched: tuple = ()
    info: str | None = None
    features: dict | None = None
    used: Callable | None = None
    per_launch: tuple | None = None
    done: str | None = None
    fallback: str | None = None

    @property
    def all_features(self) -> dict:
        """:data:`MODEL_FEATURES` and the method's own ``features``: the Variants map of its drivers."""
        return {**MODEL_FEATURES, **(self.features or {})}

    def variant(self, integrator, kc, ks) -> tuple[dict, dict]:
        """``(features, used)`` for :func:`pbsim.integrators.driver.driver`: which optional parts a run
        with control arrays ``kc`` and scene arrays ``ks`` compiles (the model's, then the method's)."""
        used = model_features_used(integrator.model)
        if self.used is not None:
            used.update(self.used(integrator, kc, ks))
        return self.all_features, used

    def make_extra(self, integrator, B: int):
        x = self.extra(integrator, B) if self.extra is not None else None
        return x if x is not None else NoExtra(np.zeros(1))


# Optional parts of every method's kernel tree that only some models use (pbsim.jit.Variants): a
# method whose tree does not reach them is not copied
MODEL_FEATURES = {
    "fluid": {"fluid_forces": unused},  # the medium's drag (pbsim.dynamics.fluid)
    "muscle": {"muscle_force": unused_float},  # MuJoCo's muscles on tendons (pbsim.dynamics.muscle)
}


def has_muscles(model) -> bool:
    acts = getattr(model, "actuators", None)
    return bool(acts is not None and acts.nu and (acts.muscle[:, 0] != 0).any())


def model_features_used(model) -> dict:
    """Which of :data:`MODEL_FEATURES` ``model`` needs."""
    return {"fluid": bool(getattr(model, "fluid", None) is not None and model.fluid.nf),
            "muscle": has_muscles(model)}


def body_contact_used(integrator, kc, ks) -> dict:
    """``StepSpec.used`` of a method whose only optional feature is contact between bodies
    (compiled only into runs whose scene has body-body items)."""
    return {"body_contact": bool(ks.nitem > 0)}


def contact_equality_used(integrator, kc, ks) -> dict:
    """``StepSpec.used`` of a method whose optional features are contact between bodies and
    equality constraints (each compiled only into runs that have it)."""
    return {**body_contact_used(integrator, kc, ks), "equality": integrator.model.k.eq_type.shape[0] > 0}


# the ``x`` of a method without scratch of its own
NoExtra = namedtuple("NoExtra", "unused")


class Integrator:
    """Base class.  Subclasses set ``name``, declare their options in ``OPTIONS`` (a tuple of
    :class:`Option`; empty: none) and either a :class:`StepSpec` in ``STEP`` (then :meth:`step`
    runs the generic driver) or override :meth:`_step`."""

    name = "?"
    implicit = False
    OPTIONS: tuple = ()
    STEP: StepSpec | None = None
    # honours coupled mimic joints (Model.mimic: the explicit steps, through accel_solve and
    # pbsim.dynamics.mimic); a method that does not refuses a coupled model here
    supports_mimic = False
    # applies the forces of spatial tendons (pbsim.dynamics.tendon: the explicit steps); a method
    # that does not (the position-based ones: fixed tendons only) refuses such a model here
    spatial_tendons = True
    # holds fixed tendons and their actuators' servos as potentials of the step (the position-based
    # methods); every other method applies a tendon servo explicitly (Integrator.warn_explicit_servos)
    tendon_potentials = False
    # holds equality constraints (Model.equality: the explicit steps, pbsim.dynamics.equality); a
    # method that does not refuses a model with active ones here, naming them
    supports_equality = False
    # clamps the actuation to the effort bounds a Control carries (Control(clamp=True), and MuJoCo's
    # servo forcerange / joint actuatorfrcrange: pbsim.control.control.servo_effort); a method
    # that does not warns once for a model with such bounds
    clamps_effort = False
    # applies the model's fluid forces (Model.fluid, pbsim.dynamics.fluid: explicit, through
    # pbsim.control.solve.joint_forces); a method that does not refuses such a model here
    supports_fluid = False
    # the divergence rule Integrator.step applies after every step (docs/reliability.md)
    divergence: DivergenceRule = DEFAULT_DIVERGENCE

    def __init__(self, model, scene: Scene | None = None, **options):
        if getattr(model, "mimic", None) and not self.supports_mimic:
            raise InputError(f"{self.name} does not support coupled mimic joints (joint "
                             f"{model.mimic[0][0]!r} mimics {model.mimic[0][1]!r}); use euler, explicit_euler or "
                             "rk2-4, or load with mimic='independent'")
        active = [e for e in getattr(model, "equality", ()) if e.active]
        if active and not self.supports_equality:
            ok = sorted(n for n, (c, _, _) in _REGISTRY.items() if getattr(c, "supports_equality", False))
            raise InputError(f"{self.name} cannot keep equality constraints ({len(active)} in model "
                             f"{model.name!r}: {', '.join(e.describe() for e in active[:4])}); use one of "
                             f"{', '.join(ok)}, or set them inactive (Equality.active = False)")
        fl = getattr(model, "fluid", None)
        if fl is not None and fl.nf and not self.supports_fluid:
            ok = sorted(n for n, (c, _, _) in _REGISTRY.items() if getattr(c, "supports_fluid", False))
            raise InputError(f"{self.name} does not apply fluid forces (model {model.name!r}: {fl.describe()}); use "
                             f"one of {', '.join(ok)}, or drop them (model.fluid = None)")
        self._warn_unclamped(model)
        if self.tendon_potentials and has_muscles(model):
            mus = [n for n, on in zip(model.actuators.names, model.actuators.muscle[:, 0]) if on]
            raise InputError(f"{self.name} holds tendon actuators as potentials, which a muscle's force (it depends on "
                             f"the tendon's velocity) is not ({len(mus)} in model {model.name!r}: {mus[:4]}); use euler, "
                             "rk4 or another explicit method")
        if not self.spatial_tendons:
            from pbsim.dynamics.tendon import spatial_force_tendons

            bad = spatial_force_tendons(model)
            if bad:
                raise InputError(f"{self.name} does not apply the forces of spatial tendons or site-transmission "
                                 f"actuators ({bad[0]!r}: a spatial tendon with stiffness, damping, a range or an "
                                 "actuator); use euler, rk4 or another explicit method (fixed tendons work with "
                                 "every method)")
        self.model = model
        self.scene = scene if scene is not None else Scene()
        self.options = options
        self._scratch_key = None

    def _warn_unclamped(self, model):
        """Warn (once per model) when the model bounds its actuators' force, as MuJoCo clamps it,
        and this method does not clamp."""
        if self.clamps_effort or getattr(model, "actuators", None) is None or not model.nu:
            return
        from pbsim.control.control import servo_effort

        eff = servo_effort(model)
        bounded = [model.joint_names[i] for i in range(model.nb) if model.nvj[i] == 1
                   and np.isfinite(eff[model.iv[i]])]
        if bounded and not model.__dict__.get("_unclamped_warned", {}).get(self.name):
            import warnings

            from pbsim.errors import PbsimWarning

            model.__dict__.setdefault("_unclamped_warned", {})[self.name] = True
            warnings.warn(f"{self.name} does not clamp actuator forces, which MuJoCo clamps to the servos' forcerange "
                          f"and the joints' actuatorfrcrange ({len(bounded)} joint(s) of {model.name!r}: "
                          f"{bounded[:4]}); euler, explicit_euler, rk2-4, ne_dry and ne_mdp clamp them",
                          PbsimWarning, stacklevel=4)

    def warn_explicit_servos(self, q, dt: float, control=None, stacklevel: int = 3):
        """Warn once per dt when this method applies a tendon actuator's servo terms explicitly
        (``not tendon_potentials``) at a dt beyond their explicit stability bound at ``q``
        (:func:`pbsim.dynamics.tendon.explicit_servo_limits`): such a run oscillates, possibly
        without diverging."""
        if self.tendon_potentials or not getattr(self.model, "ntendon", 0) or getattr(control, "ctrl", None) is None:
            return
        done = self.__dict__.setdefault("_servo_checked", set())
        if dt in done:
            return
        done.add(dt)
        from pbsim.dynamics.tendon import explicit_servo_limits

        q1 = np.asarray(q, float).reshape(-1, self.model.nq)[0]
        bad = [(a, t, h) for a, t, h in explicit_servo_limits(self.model, q1) if dt >= h]
        if bad:
            import warnings

            from pbsim.errors import PbsimWarning

            a, t, h = min(bad, key=lambda x: x[2])
            warnings.warn(f"{self.name} applies tendon actuator {a!r} (on tendon {t!r}) explicitly: its servo "
                          f"is stable only for dt < {h:.4g} s at the start pose, and dt = {dt:g}; use a smaller "
                          "dt, or a position-based method (pbad, pbd_nmdp, pbfd), which holds it in the step",
                          PbsimWarning, stacklevel=stacklevel)

    def step(self, state: State, control: Control | None, dt: float):
        dt = check_dt(dt)
        if control is None:
            control = default_control(self.model)  # MuJoCo's: the file's actuators at ctrl = 0
        self.warn_explicit_servos(state.q, dt, control)
        act_next = None
        if getattr(self.model, "na", 0) and control.ctrl is not None:  # activation dynamics
            control, act_next = self._with_activations(state, control, dt)
        new, diag = self._step(state, control, dt)
        if act_next is not None or state.act is not None:
            new.act = act_next if act_next is not None else state.act.copy()
        check_divergence(self.model, state, new, diag, self.divergence, control)
        ks = self.__dict__.get("_ks_diag")
        if ks is None:
            ks = self.__dict__["_ks_diag"] = self.scene.kernel_arrays(self.model)
        if ks.npts > 0 or ks.nitem > 0:  # how deep the deepest contact point sits (every method, same detection)
            from pbsim.contact.depth import max_depth_batch
            from pbsim.dynamics.workspace import work_for

            pen = np.zeros(new.batch)
            q = np.ascontiguousarray(new.q)
            max_depth_batch(self.model.k, ks, work_for(self.model, new.batch), q, pen)
            diag.penetration = pen
            diag.deep = pen > self.scene.max_penetration
        return new, diag

    def _with_activations(self, state, control, dt):
        """``(control for this step's force, act+)``: the activations advanced over the step as
        MuJoCo's Euler does (pbsim.control.actuators.act_step), and the control whose actuators
        use ``act_k`` (``act+`` with actearly) in place of ctrl -- the same for every method."""
        from pbsim.control.actuators import act_advance, check_act, force_act

        B = state.batch
        act = np.array(np.broadcast_to(check_act(self.model, state.act, B), (B, self.model.na)))
        act_next = act_advance(self.model, act, control.ctrl, dt, B)
        return replace(control, act=force_act(self.model, act, act_next)), act_next

    def scratch(self, B: int, dense: bool = False):
        """``(w, sw, ks, x)`` for ``B`` trajectories: dynamics workspace, step scratch, scene
        arrays and the method's own ``x`` (kept while B stays the same)."""
        from pbsim.control.stepwork import make_step_work
        from pbsim.dynamics.workspace import work_for

        if self._scratch_key != B or (dense and self._sw.Md.shape[1] < self.model.nv):
            self._scratch_key = B
            self._sw = make_step_work(self.model, B, dense=True if dense else None)
            self._ks = self.scene.kernel_arrays(self.model)
            self._x = self.STEP.make_extra(self, B) if self.STEP is not None else None
        return work_for(self.model, B), self._sw, self._ks, self._x

    def _step(self, state, control, dt):
        """One step of every trajectory through the generic driver and ``STEP``."""
        from pbsim.control.control import SPD
        from pbsim.integrators.driver import driver, step_batch

        spec = self.STEP
        if spec is None:  # pragma: no cover - a subclass without STEP overrides _step
            raise NotImplementedError(f"integrator {self.name!r} has neither STEP nor _step")
        B = state.batch
        kc = control.kernel_arrays(self.model, B)
        w, sw, ks, x = self.scratch(B, dense=kc.mode == SPD and kc.solver != 0)
        qn = np.empty_like(state.q)
        vn = np.empty_like(state.v)
        e = np.empty((B, 2))
        driver(step_batch, spec.step, *spec.variant(self, kc, ks))(self.model.k, ks, kc, w, sw, x, state.q, state.v, dt,
                                                             qn, vn, e)
        nan = ~(np.isfinite(qn).all(axis=1) & np.isfinite(vn).all(axis=1))
        d = Diagnostics(energy=e.sum(axis=1), nan=nan)
        if spec.info is not None:
            info = getattr(x, spec.info)
            d.iterations, d.residual = info[:, 0].astype(int), info[:, 1].copy()
            d.converged = (info[:, 2] > 0.5) & ~nan
            d.extra["objective"] = info[:, 3].copy()
            if spec.fallback is not None:  # the kernel's sub-step fallback: sub-steps of each step (1: none)
                sub = info[:, 4].astype(int)
                d.extra["substeps"] = sub
                d.extra["stalled"] = (sub > 1) | ~d.converged  # the full step did not converge
        return State(qn, vn, state.t + dt, q_prev=state.q.copy()), d


def register(name: str, doc: str = "", **defaults):
    """Class decorator: make an integrator available as ``name`` (with preset options)."""

    def deco(cls):
        _REGISTRY[name] = (cls, defaults, doc or (cls.__doc__ or "").strip().splitlines()[0])
        return cls

    return deco


def step_spec(name: str) -> StepSpec | None:
    """Integrator ``name``'s :class:`StepSpec` (None: it has no single step kernel, so no batch
    driver on the CPU or the GPU runs it)."""
    return _entry(name)[0].STEP


def make_batched(name: str, model, scene, options: dict, where: str):
    """``(make(name, model, scene, **options), its StepSpec)`` for a batch driver (``where``
    names it in the error); InputError listing the methods with a step kernel when it has none."""
    integ = make(name, model, scene, **options)
    spec = step_spec(name)
    if spec is None:
        have = [n for n in available() if step_spec(n) is not None]
        raise InputError(f"integrator {name!r} has no step kernel for {where}; it supports "
                         f"{', '.join(have)} (use the integrator's step for the others)")
    return integ, spec


def available() -> list[str]:
    """Names of all registered integrators."""
    _load_all()
    return list(_REGISTRY)


def describe(name: str) -> str:
    _load_all()
    return _REGISTRY[name][2]


def _entry(name: str):
    _load_all()
    if name not in _REGISTRY:
        raise InputError(f"unknown integrator {name!r}; available: {', '.join(_REGISTRY)}")
    return _REGISTRY[name]


def describe_options(name: str, aliases: bool = False) -> dict[str, Option]:
    """The options integrator ``name`` takes, ``{name: Option}`` in declaration order, with the
    defaults ``register`` presets for this name (e.g. ``method`` of variational_newton); old
    names (``Option.alias_of``) only with ``aliases=True``."""
    cls, presets, _ = _entry(name)
    spec = {o.name: o for o in cls.OPTIONS if aliases or o.alias_of is None}
    for k, v in presets.items():
        if k in spec:
            spec[k] = replace(spec[k], default=v)
    return spec


def validate_options(name: str, options: dict) -> dict:
    """InputError unless every key of ``options`` is an option of integrator ``name`` (the
    message lists the valid ones and suggests the closest) with a value of the declared kind;
    returns ``options`` unchanged."""
    spec = describe_options(name, aliases=True)
    for k, v in options.items():
        if k not in spec:
            close = difflib.get_close_matches(k, list(spec), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            canon = [n for n, o in spec.items() if o.alias_of is None]
            valid = ", ".join(canon) if canon else "none (it takes no options)"
            raise InputError(f"integrator {name!r} has no option {k!r}{hint}; valid options: {valid}")
        spec[k].check(name, v)
        a = spec[k].alias_of
        if a is not None and a in options:
            raise InputError(f"integrator {name!r}: give {a!r} or its old name {k!r}, not both")
    return options


def make(name: str, model, scene: Scene | None = None, **options) -> Integrator:
    """Instantiate integrator ``name`` for ``model``; ``options`` are checked against the
    integrator's declared :class:`Option` spec (:func:`describe_options`) first."""
    cls, defaults, _ = _entry(name)
    validate_options(name, options)
    opts = {**defaults, **options}
    return cls(model, scene, **opts)


# the sub-packages of pbsim.integrators that hold pieces shared by several methods, not a method
SHARED = ("pgm", "velocity_level")


def _load_all():
    """Import every integrator package so that it registers itself (plugin discovery by folder:
    a method is a sub-package of ``pbsim.integrators``, not one of :data:`SHARED`; the modules
    beside them, ``base``, ``options`` ..., are the registry's own; this module never imports the
    ``pbsim.integrators`` package that imports it)."""
    import importlib
    import os
    import pkgutil

    for mod in pkgutil.iter_modules([os.path.dirname(__file__)]):
        if mod.ispkg and mod.name not in SHARED and not mod.name.startswith("_"):
            importlib.import_module(f"{__package__}.{mod.name}")
