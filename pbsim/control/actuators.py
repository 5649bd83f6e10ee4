"""A model's actuators (MJCF ``<actuator>``): what ``Control(ctrl=u)`` drives.

Each actuator acts on one 1-DOF joint through a gear ``g`` (MuJoCo's joint transmission: its
length is ``L = g q``, its force enters the joint as ``g f``).  The force is MuJoCo's affine form
with a fixed gain (``general`` with gaintype fixed, biastype none or affine)::

    f = gain u + b0 + b1 L + b2 dL/dt                                    (MuJoCo's mju actuator force)

of which ``motor`` (``f = gain u``), ``position`` (``gain = kp``, ``b1 = -kp``, ``b2 = -kv``),
``velocity`` (``gain = kv``, ``b2 = -kv``) and Menagerie's servos (``general`` with ``gainprm
kp``, ``biasprm 0 -kp -kd``) are cases.  ``u`` is clamped to ``ctrlrange`` (when limited); a
force with no state term (``b1 = b2 = 0``) is clamped to ``forcerange``.  With ``b1, b2 <= 0`` the
joint torque ``g f = C - kp q - kd qdot`` (``C = g (gain u + b0)``, ``kp = -g^2 b1``,
``kd = -g^2 b2``) is a PD: it runs through the stable-PD path (paper 001: the state terms at the
new state, implicit), so a stiff servo stays stable at large dt; it matches MuJoCo's explicit
actuators to O(dt); its forcerange is not applied (the force is implicit in the new
acceleration).  Bias with ``b1 > 0`` or ``b2 > 0`` (anti-damping) is not imported (named in the
model's notes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pbsim.errors import InputError

MOTOR, POSITION, VELOCITY, GENERAL = 0, 1, 2, 3
KINDS = {"motor": MOTOR, "position": POSITION, "velocity": VELOCITY, "general": GENERAL}


@dataclass
class Actuators:
    """``nu`` actuators: names, the DOF each drives, kind, gear, ``gain`` and ``bias`` (nu, 3) of
    the affine force (module docstring), ranges ((nu, 2); +-inf where unlimited)."""

    names: list[str] = field(default_factory=list)
    dof: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    kind: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    gear: np.ndarray = field(default_factory=lambda: np.zeros(0))
    gain: np.ndarray = field(default_factory=lambda: np.zeros(0))  # force per unit ctrl
    bias: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))  # b0, b1 (per length), b2 (per velocity)
    ctrlrange: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    forcerange: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))

    @property
    def nu(self) -> int:
        return len(self.names)

    @property
    def kp(self) -> np.ndarray:
        """Per actuator, the stiffness on its length (``-b1``)."""
        return -self.bias[:, 1]

    @property
    def kv(self) -> np.ndarray:
        """Per actuator, the damping on its velocity (``-b2``)."""
        return -self.bias[:, 2]

    @classmethod
    def build(cls, items) -> "Actuators":
        """From dicts ``{name, dof, kind, gear, ctrlrange, forcerange}`` and, by kind: motor
        ``gain``; position ``kp`` (and ``kv``); velocity ``kv``; general ``gain`` and ``bias``
        (b0, b1, b2)."""
        n = len(items)
        gain, bias = np.zeros(n), np.zeros((n, 3))
        for i, it in enumerate(items):
            kind = it["kind"]
            if kind == "motor":
                gain[i] = float(it.get("gain", 1.0))
                bias[i] = [float(x) for x in it.get("bias", (0.0, 0.0, 0.0))]
            elif kind == "position":
                kp, kv = float(it.get("kp", 0.0)), float(it.get("kv", 0.0))
                gain[i], bias[i] = kp, (0.0, -kp, -kv)
            elif kind == "velocity":
                kv = float(it.get("kv", 0.0))
                gain[i], bias[i] = kv, (0.0, 0.0, -kv)
            else:
                gain[i] = float(it.get("gain", 1.0))
                bias[i] = [float(x) for x in it.get("bias", (0.0, 0.0, 0.0))]
        a = cls(
            [it["name"] for it in items],
            np.array([it["dof"] for it in items], np.int64).reshape(n),
            np.array([KINDS[it["kind"]] for it in items], np.int64).reshape(n),
            np.array([float(it.get("gear", 1.0)) for it in items]).reshape(n),
            gain,
            bias,
            np.array([it.get("ctrlrange", (-np.inf, np.inf)) for it in items], float).reshape(n, 2),
            np.array([it.get("forcerange", (-np.inf, np.inf)) for it in items], float).reshape(n, 2),
        )
        for k in ("gear", "gain", "bias", "ctrlrange", "forcerange"):
            v = getattr(a, k)
            if np.isnan(v).any():
                bad = a.names[int(np.argwhere(np.isnan(v.reshape(n, -1)))[0, 0])]
                raise InputError(f"actuator {bad!r}: {k} is NaN")
        if (a.bias[:, 1:] > 0).any():
            bad = a.names[int(np.argmax((a.bias[:, 1:] > 0).any(axis=1)))]
            raise InputError(
                f"actuator {bad!r}: a positive bias on length or velocity (anti-stiffness or "
                "anti-damping) cannot run as a stable PD"
            )
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
    cq = np.zeros((Bp, nv))  # per DOF, the servos' torque without their state terms
    if nu:
        u = np.clip(u, act.ctrlrange[:, 0], act.ctrlrange[:, 1])  # MuJoCo clamps ctrl to ctrlrange
        for a in range(nu):
            j, g = int(act.dof[a]), act.gear[a]
            f = act.gain[a] * u[:, a] + act.bias[a, 0]  # the force's part without state terms
            kpa, kda = -g * g * act.bias[a, 1], -g * g * act.bias[a, 2]
            if kpa == 0.0 and kda == 0.0:
                tau[:, j] += g * np.clip(f, act.forcerange[a, 0], act.forcerange[a, 1])
            else:  # C - kp q - kd qdot: kp (q_ref - q) + kd (v_ref - qdot) with kp q_ref + kd v_ref = C
                kp[:, j] += kpa
                kd[:, j] += kda
                cq[:, j] += g * f
    q_ref = np.tile(model.neutral(), (Bp, 1))
    v_ref = np.zeros((Bp, nv))
    uses_pd = bool((kp > 0).any() or (kd > 0).any())
    if uses_pd:
        for i in range(model.nb):
            j, k = int(model.iv[i]), int(model.iq[i])
            if model.nvj[i] == 1:
                with np.errstate(invalid="ignore", divide="ignore"):
                    pos = kp[:, j] > 0
                    vel = ~pos & (kd[:, j] > 0)
                    q_ref[:, k] = np.where(pos, cq[:, j] / np.where(pos, kp[:, j], 1), 0.0)
                    v_ref[:, j] = np.where(vel, cq[:, j] / np.where(vel, kd[:, j], 1), 0.0)
    return tau, kp, kd, q_ref, v_ref, uses_pd
