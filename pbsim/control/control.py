"""Control input of a step: joint torques plus optional (stable) PD targets.

Kernels read a :class:`KControl` namedtuple.  Every array has a leading batch axis B
(a batch of one broadcasts to every trajectory through ``bmod``).
"""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

import numpy as np

from pbsim.errors import InputError

# mode: 0 = torques only, 1 = plain PD (paper 001 Eq. 1-2), 2 = stable PD (Eq. 4-7)
KControl = namedtuple("KControl", "mode tau kp kd q_ref v_ref")
TORQUE, PD, SPD = 0, 1, 2
MODES = {"torque": TORQUE, "none": TORQUE, "pd": PD, "spd": SPD}


@dataclass
class Control:
    """Torques ``tau`` (nv,) and, for ``mode`` "pd"/"spd", gains and targets.

    ``kp``, ``kd``: scalars or (nv,) arrays; ``q_ref`` (nq,), ``v_ref`` (nv,).  Any of them may carry
    a leading batch axis.  The PD torque is ``-kp (q (-) q_ref) - kd (v - v_ref)`` (per DOF, the
    difference taken on the configuration manifold); SPD evaluates it at the next state.
    """

    tau: np.ndarray | float | None = None
    mode: str = "torque"
    kp: np.ndarray | float = 0.0
    kd: np.ndarray | float = 0.0
    q_ref: np.ndarray | None = None
    v_ref: np.ndarray | None = None

    def kernel_arrays(self, model, batch: int) -> KControl:
        """Validated arrays for the kernels (cached: treat a Control as immutable once used,
        or make a new one when targets change)."""
        key = (id(model), batch)
        cached = self.__dict__.get("_kcache")
        if cached is not None and cached[0] == key:
            return cached[1]
        k = self._kernel_arrays(model, batch)
        self.__dict__["_kcache"] = (key, k)
        return k

    def _kernel_arrays(self, model, batch: int) -> KControl:
        if self.mode not in MODES:
            raise InputError(f"unknown control mode {self.mode!r}; expected one of {sorted(MODES)}")

        def arr(x, n, name, default):
            a = np.asarray(default if x is None else x, dtype=np.float64)
            if a.ndim == 0:
                a = np.full(n, float(a))
            if a.ndim == 1:
                a = a[None, :]
            if a.ndim != 2 or a.shape[1] != n or a.shape[0] not in (1, batch):
                raise InputError(f"control {name} must have shape ({n},) or ({batch}, {n}); got {np.shape(x)}")
            if not np.all(np.isfinite(a)):
                raise InputError(f"control {name} holds NaN or inf")
            return np.ascontiguousarray(a)

        kp = arr(self.kp, model.nv, "kp", 0.0)
        kd = arr(self.kd, model.nv, "kd", 0.0)
        if np.any(kp < 0) or np.any(kd < 0):
            raise InputError("control gains kp and kd must be non-negative")
        return KControl(MODES[self.mode], arr(self.tau, model.nv, "tau", 0.0), kp, kd,
                        arr(self.q_ref, model.nq, "q_ref", model.neutral()),
                        arr(self.v_ref, model.nv, "v_ref", 0.0))
