"""Integrator interface and registry.

Every integrator is a class with ``step(state, control, dt) -> (State, Diagnostics)`` over a
batch of trajectories, registered by name.  The CLI, the viewer, the tests and the benchmarks
all iterate :func:`available` / :func:`make`, so a new integrator shows up everywhere at once.
"""
from __future__ import annotations

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


class Integrator:
    """Base class.  Subclasses set ``name`` and implement :meth:`_step`."""

    name = "?"
    implicit = False

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


def make(name: str, model, scene: Scene | None = None, **options) -> Integrator:
    """Instantiate integrator ``name`` for ``model``."""
    _load_all()
    if name not in _REGISTRY:
        raise InputError(f"unknown integrator {name!r}; available: {', '.join(_REGISTRY)}")
    cls, defaults, _ = _REGISTRY[name]
    opts = {**defaults, **options}
    return cls(model, scene, **opts)


def _load_all():
    """Import every integrator module so that it registers itself."""
    import importlib
    import pkgutil

    import pbsim.integrators as pkg

    for mod in pkgutil.iter_modules(pkg.__path__):
        if mod.name not in ("base",) and not mod.name.startswith("_"):
            importlib.import_module(f"pbsim.integrators.{mod.name}")
