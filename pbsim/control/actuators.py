"""A model's actuators (MJCF ``<actuator>``): what ``Control(ctrl=u)`` drives.

Each actuator acts on one 1-DOF joint through a gear ``g`` (MuJoCo's joint transmission: its
length is ``g q``, its force enters as ``g f``).  Kinds, as MuJoCo defines them:

- ``motor`` (``general`` with fixed gain, no bias): ``f = gain * u``;
- ``position``: ``f = kp (u - g q)``, i.e. a PD on the joint with ``kp g^2`` toward ``u / g``;
- ``velocity``: ``f = kv (u - g qdot)``, a damper with ``kv g^2`` toward ``u / g``.

``u`` is clamped to ``ctrlrange`` (when limited) and a motor's force to ``forcerange``.
Position and velocity actuators run through the stable-PD path (paper 001), so a large kp stays
stable at large dt; they match MuJoCo's explicit actuators to O(dt) (forcerange is not applied
to them: their force is implicit in the new acceleration).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pbsim.errors import InputError

MOTOR, POSITION, VELOCITY = 0, 1, 2
KINDS = {"motor": MOTOR, "position": POSITION, "velocity": VELOCITY}


@dataclass
class Actuators:
    """``nu`` actuators: names, the DOF each drives, kind, gear, gains and ranges ((nu, 2); +-inf
    where unlimited)."""

    names: list[str] = field(default_factory=list)
    dof: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    kind: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    gear: np.ndarray = field(default_factory=lambda: np.zeros(0))
    gain: np.ndarray = field(default_factory=lambda: np.zeros(0))  # motor: force per unit ctrl
    kp: np.ndarray = field(default_factory=lambda: np.zeros(0))
    kv: np.ndarray = field(default_factory=lambda: np.zeros(0))
    ctrlrange: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    forcerange: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))

    @property
    def nu(self) -> int:
        return len(self.names)

    @classmethod
    def build(cls, items) -> "Actuators":
        """From dicts ``{name, dof, kind, gear, gain, kp, kv, ctrlrange, forcerange}``."""
        n = len(items)
        a = cls(
            [it["name"] for it in items],
            np.array([it["dof"] for it in items], np.int64).reshape(n),
            np.array([KINDS[it["kind"]] for it in items], np.int64).reshape(n),
            *(
                np.array([float(it.get(k, d)) for it in items]).reshape(n)
                for k, d in (("gear", 1.0), ("gain", 1.0), ("kp", 0.0), ("kv", 0.0))
            ),
            np.array([it.get("ctrlrange", (-np.inf, np.inf)) for it in items], float).reshape(n, 2),
            np.array([it.get("forcerange", (-np.inf, np.inf)) for it in items], float).reshape(n, 2),
        )
        for k in ("gear", "gain", "kp", "kv", "ctrlrange", "forcerange"):
            v = getattr(a, k)
            if np.isnan(v).any():
                bad = a.names[int(np.argwhere(np.isnan(v.reshape(n, -1)))[0, 0])]
                raise InputError(f"actuator {bad!r}: {k} is NaN")
        lo_hi = np.concatenate([a.ctrlrange, a.forcerange])
        if (lo_hi[:, 0] > lo_hi[:, 1]).any():
            bad = a.names[int(np.argmax(lo_hi[:, 0] > lo_hi[:, 1]) % max(n, 1))]
            raise InputError(f"actuator {bad!r}: a range with lower > upper")
        return a


def actuator_targets(model, ctrl, batch: int):
    """The per-DOF torque / stable-PD arrays that actuators ``model.actuators`` apply for ``ctrl``
    ((nu,) or (B, nu)): ``(tau (B', nv), kp, kd, q_ref (B', nq), v_ref (B', nv), uses_pd)``."""
    act = getattr(model, "actuators", None)
    nu = 0 if act is None else act.nu
    u = np.asarray(ctrl, dtype=np.float64)
    if u.ndim == 1:
        u = u[None, :]
    if u.ndim != 2 or u.shape[1] != nu or u.shape[0] not in (1, batch):
        raise InputError(
            f"ctrl must have shape ({nu},) or ({batch}, {nu}) for this model's {nu} actuators; got {np.shape(ctrl)}"
        )
    if not np.isfinite(u).all():
        raise InputError("ctrl holds NaN or inf")
    Bp = u.shape[0]
    nv = model.nv
    tau, kp, kd = np.zeros((Bp, nv)), np.zeros((Bp, nv)), np.zeros((Bp, nv))
    kpq, kdv = np.zeros((Bp, nv)), np.zeros((Bp, nv))  # sums of kp * target, kd * target per DOF
    if nu:
        u = np.clip(u, act.ctrlrange[:, 0], act.ctrlrange[:, 1])  # MuJoCo clamps ctrl to ctrlrange
        for a in range(nu):
            j, g = int(act.dof[a]), act.gear[a]
            if act.kind[a] == MOTOR:
                f = np.clip(act.gain[a] * u[:, a], act.forcerange[a, 0], act.forcerange[a, 1])
                tau[:, j] += g * f
            elif act.kind[a] == POSITION:
                k = act.kp[a] * g * g
                kp[:, j] += k
                kpq[:, j] += k * u[:, a] / g
            else:
                k = act.kv[a] * g * g
                kd[:, j] += k
                kdv[:, j] += k * u[:, a] / g
    q_ref = np.tile(model.neutral(), (Bp, 1))
    v_ref = np.zeros((Bp, nv))
    uses_pd = bool((kp > 0).any() or (kd > 0).any())
    if uses_pd:
        for i in range(model.nb):
            j, k = int(model.iv[i]), int(model.iq[i])
            if model.nvj[i] == 1:
                with np.errstate(invalid="ignore", divide="ignore"):
                    q_ref[:, k] = np.where(kp[:, j] > 0, kpq[:, j] / np.where(kp[:, j] > 0, kp[:, j], 1), 0.0)
                    v_ref[:, j] = np.where(kd[:, j] > 0, kdv[:, j] / np.where(kd[:, j] > 0, kd[:, j], 1), 0.0)
    return tau, kp, kd, q_ref, v_ref, uses_pd


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
        from pbsim.control.control import Control

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
