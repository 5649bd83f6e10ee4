"""Actuator inputs over time for ``Control(ctrl=...)``: ``pbsim rollout --ctrl FILE|VALUES``."""

from __future__ import annotations

import numpy as np

from pbsim.control.control import Control
from pbsim.errors import InputError


class CtrlSchedule:
    """Actuator inputs over time, held between samples: ``schedule(t, state) -> Control(ctrl=u(t))``
    (a callable control for ``pbsim.rollout``).  ``t`` (T,) increasing sample times, ``u`` (T, nu)."""

    def __init__(self, model, t, u):
        self.model = model
        self.t = np.asarray(t, float).reshape(-1)
        self.u = np.asarray(u, float).reshape(len(self.t), -1)
        if self.u.shape[1] != model.nu:
            raise InputError(
                f"ctrl schedule has {self.u.shape[1]} columns; the model has {model.nu} actuators "
                f"({', '.join(model.actuator_names) or 'none'})"
            )
        if len(self.t) == 0 or np.any(np.diff(self.t) <= 0) or not np.isfinite(self.u).all():
            raise InputError("ctrl schedule needs increasing sample times and finite values")
        self._controls = [None] * len(self.t)

    def __call__(self, t, state=None):
        k = int(np.clip(np.searchsorted(self.t, t + 1e-12, side="right") - 1, 0, len(self.t) - 1))
        if self._controls[k] is None:  # one Control per sample: its kernel arrays are cached
            self._controls[k] = Control(ctrl=self.u[k])
        return self._controls[k]

    @classmethod
    def from_arg(cls, model, text: str) -> "CtrlSchedule":
        """``--ctrl``: a file (.npz with ``t`` and ``ctrl`` (T, nu) arrays; .csv with a ``t`` column
        and one column per actuator name) or constant values ``"0.1,0.2,..."`` (nu of them)."""
        import os

        if os.path.isfile(text):
            if text.endswith(".npz"):
                z = np.load(text)
                if "ctrl" not in z:
                    raise InputError(f"{text}: expected arrays 't' and 'ctrl' (T, nu)")
                u = np.atleast_2d(z["ctrl"])
                t = z["t"] if "t" in z else np.arange(len(u), dtype=float)
                return cls(model, t, u)
            import csv

            with open(text, newline="") as f:
                rows = list(csv.reader(f))
            if not rows:
                raise InputError(f"{text}: empty ctrl file")
            head = [h.strip() for h in rows[0]]
            missing = [n for n in model.actuator_names if n not in head]
            if "t" not in head or missing:
                raise InputError(
                    f"{text}: needs a 't' column and one per actuator; missing "
                    f"{', '.join((['t'] if 't' not in head else []) + missing)}"
                )
            try:
                data = np.array([[float(x) for x in r] for r in rows[1:] if r], float)
            except ValueError as e:
                raise InputError(f"{text}: {e}") from None
            cols = [head.index(n) for n in model.actuator_names]
            return cls(model, data[:, head.index("t")], data[:, cols])
        try:
            u = np.array([float(x) for x in text.split(",")], float)
        except ValueError:
            raise InputError(f"--ctrl {text!r}: not a file and not comma-separated numbers") from None
        return cls(model, [0.0], u[None, :])
