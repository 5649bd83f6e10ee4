"""The recorded result of a rollout, shared by the CPU (:mod:`pbsim.rollout`) and GPU
(:mod:`pbsim.rollout_gpu`) paths; both import it from here (and ``pbsim.rollout.Trajectory``
stays importable)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Trajectory:
    """Recorded frames.  Single trajectory: q (T, nq), v (T, nv), energy (T,);
    a batch adds an axis after time: q (T, B, nq)."""

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    energy: np.ndarray
    integrator: str = ""
    dt: float = 0.0
    diverged: np.ndarray | None = None  # (B,) bool, for on_nan="stop"
    info: dict = field(default_factory=dict)  # "compile_s": seconds spent compiling kernels (first run)

    def save(self, path):
        np.savez(path, t=self.t, q=self.q, v=self.v, energy=self.energy, integrator=self.integrator, dt=self.dt)
