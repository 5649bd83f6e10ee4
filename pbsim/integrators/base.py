"""Integrator interface and registry.

Every integrator is a class with ``step(state, control, dt) -> (State, Diagnostics)`` over a
batch of trajectories, registered by name.  The CLI, the viewer, the tests and the benchmarks
all iterate :func:`available` / :func:`make`, so a new integrator shows up everywhere at once.
"""
from __future__ import annotations

import difflib
import numbers
from dataclasses import dataclass, field

import numpy as np

from pbsim.control.control import Control
from pbsim.contact.scene import Scene
from pbsim.dynamics.api import as_batch
from pbsim.errors import InputError, check_batch, check_dt

_REGISTRY: dict[str, tuple[type, dict, str]] = {}


@dataclass
class State:
    """Batched state: ``q`` (B, nq), ``v`` (B, nv), time ``t``; ``q_prev`` for two-step methods."""

    q: np.ndarray
    v: np.ndarray
    t: float = 0.0
    q_prev: np.ndarray | None = None

    @classmethod
    def make(cls, model, q=None, v=None, batch: int | None = None, t: float = 0.0) -> "State":
        batch = check_batch(batch)
        q = model.default_configuration() if q is None else q
        Q, _ = as_batch(q, model.nq, "q")
        if batch is not None:
            Q, _ = as_batch(Q, model.nq, "q", batch)
        V, _ = as_batch(np.zeros(model.nv) if v is None else v, model.nv, "v", Q.shape[0])
        return cls(np.array(Q), np.array(V), float(t))

    @property
    def batch(self) -> int:
        return self.q.shape[0]

    def copy(self) -> "State":
        return State(self.q.copy(), self.v.copy(), self.t, None if self.q_prev is None else self.q_prev.copy())


@dataclass
class Diagnostics:
    """Per-step, per-trajectory diagnostics."""

    energy: np.ndarray  # (B,) total energy after the step
    nan: np.ndarray  # (B,) bool: the new state holds NaN/inf
    iterations: np.ndarray | None = None  # (B,) solver iterations (implicit methods)
    residual: np.ndarray | None = None  # (B,) final residual / gradient norm
    converged: np.ndarray | None = None  # (B,) bool
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Option:
    """One option an integrator takes: its ``name``, ``default``, a one-line ``doc``, the
    ``kind`` of value ("int", "float", "str", "bool", "dict" or "any") and, for "str"/"int"
    options with a closed set of values, the allowed ``choices``.  ``None`` is accepted when
    the default is None (None then means "automatic", as the doc says) or ``nullable`` is set.
    Range checks (``tol > 0`` ...) stay in the integrator's constructor."""

    name: str
    default: object
    doc: str
    kind: str = "any"
    choices: tuple | None = None
    nullable: bool = False

    def check(self, integrator: str, value):
        """InputError naming the option unless ``value`` has the declared kind / is a choice."""
        if value is None and (self.default is None or self.nullable):
            return
        ok = {
            "int": lambda x: isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_)),
            "float": lambda x: isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_)),
            "str": lambda x: isinstance(x, str),
            "bool": lambda x: isinstance(x, (bool, np.bool_)),
            "dict": lambda x: isinstance(x, dict),
            "any": lambda x: True,
        }[self.kind](value)
        if not ok:
            raise InputError(f"integrator {integrator!r}: option {self.name!r} must be {self.describe_kind()}, "
                             f"got {value!r} ({type(value).__name__})")
        if self.choices is not None and value not in self.choices:
            raise InputError(f"integrator {integrator!r}: option {self.name!r} must be one of "
                             f"{', '.join(map(repr, self.choices))}; got {value!r}")

    def describe_kind(self) -> str:
        none = " or None" if self.default is None or self.nullable else ""
        if self.choices is not None:
            return "one of " + ", ".join(map(repr, self.choices)) + none
        k = {"int": "an integer", "float": "a real number", "str": "a string", "bool": "a bool",
             "dict": "a dict", "any": "any value"}[self.kind]
        return k + none


class Integrator:
    """Base class.  Subclasses set ``name``, declare the options they take in ``OPTIONS`` (a
    tuple of :class:`Option`; empty: none) and implement :meth:`_step`."""

    name = "?"
    implicit = False
    OPTIONS: tuple = ()

    def __init__(self, model, scene: Scene | None = None, **options):
        self.model = model
        self.scene = scene if scene is not None else Scene()
        self.options = options

    def step(self, state: State, control: Control | None, dt: float):
        dt = check_dt(dt)
        if control is None:
            control = self.__dict__.setdefault("_no_control", Control())
        return self._step(state, control, dt)

    def _step(self, state, control, dt):  # pragma: no cover - abstract
        raise NotImplementedError


def register(name: str, doc: str = "", **defaults):
    """Class decorator: make an integrator available as ``name`` (with preset options)."""

    def deco(cls):
        _REGISTRY[name] = (cls, defaults, doc or (cls.__doc__ or "").strip().splitlines()[0])
        return cls

    return deco


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


def describe_options(name: str) -> dict[str, Option]:
    """The options integrator ``name`` takes, ``{name: Option}`` in declaration order, with the
    defaults ``register`` presets for this name (e.g. ``method`` of variational_newton)."""
    from dataclasses import replace

    cls, presets, _ = _entry(name)
    spec = {o.name: o for o in cls.OPTIONS}
    for k, v in presets.items():
        if k in spec:
            spec[k] = replace(spec[k], default=v)
    return spec


def validate_options(name: str, options: dict) -> dict:
    """InputError unless every key of ``options`` is an option of integrator ``name`` (the
    message lists the valid ones and suggests the closest) with a value of the declared kind;
    returns ``options`` unchanged."""
    spec = describe_options(name)
    for k, v in options.items():
        if k not in spec:
            close = difflib.get_close_matches(k, list(spec), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            valid = ", ".join(spec) if spec else "none (it takes no options)"
            raise InputError(f"integrator {name!r} has no option {k!r}{hint}; valid options: {valid}")
        spec[k].check(name, v)
    return options


def make(name: str, model, scene: Scene | None = None, **options) -> Integrator:
    """Instantiate integrator ``name`` for ``model``; ``options`` are checked against the
    integrator's declared :class:`Option` spec (:func:`describe_options`) first."""
    cls, defaults, _ = _entry(name)
    validate_options(name, options)
    opts = {**defaults, **options}
    return cls(model, scene, **opts)


def _load_all():
    """Import every integrator module so that it registers itself (plugin discovery by file
    name: this module never imports the ``pbsim.integrators`` package that imports it)."""
    import importlib
    import os
    import pkgutil

    for mod in pkgutil.iter_modules([os.path.dirname(__file__)]):
        if mod.name not in ("base",) and not mod.name.startswith("_"):
            importlib.import_module(f"{__package__}.{mod.name}")
