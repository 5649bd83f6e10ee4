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

