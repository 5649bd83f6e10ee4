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
actuators to O(dt); its forcerange (and the joint's ``actuatorfrcrange``) bound the implicit force
per DOF through the steps' effort clamping (:func:`pbsim.control.control.servo_effort`).  Bias
with ``b1 > 0`` or ``b2 > 0`` (anti-damping) is not imported (named in the model's notes).

Tendon transmission (``tendon >= 0``): the actuator's length is ``l = gear L`` (``L`` the tendon's
length, :mod:`pbsim.dynamics.tendon`) and its force enters the joints as ``gear f J^T`` (``J`` the
tendon's moment arms); evaluated in the step kernels at the step's state (explicit for the
explicit methods, a fixed tendon's state terms on the implicit diagonal as its passive forces; a
potential of the step for the position-based methods), forcerange applied (the control's ``ta_*``
rows).

Activation dynamics (MuJoCo's ``dyntype``): an actuator with dynamics has an activation ``act``
(``State.act``, one per such actuator in order) and its force uses ``act`` in place of ``u``::

    integrator   d act/dt = u                   filter, filterexact   d act/dt = (u - act) / tau

Every integrator advances it the same way, as MuJoCo's Euler does, after the step whose force
used ``act_k`` (:func:`act_step`): ``act+ = act + dt u`` (integrator), ``act + dt (u - act) / tau``
(filter), ``act + (u - act) (1 - exp(-dt / tau))`` (filterexact, exact for a constant ``u``),
then clamped to ``actrange`` when ``actlimited``.  With ``actearly`` the force uses ``act+``.
``intvelocity`` is ``integrator`` with a position servo on ``act``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pbsim.dynamics.muscle import JOINT_ROW, MINVAL
from pbsim.errors import InputError

MOTOR, POSITION, VELOCITY, GENERAL = 0, 1, 2, 3
KINDS = {"motor": MOTOR, "position": POSITION, "velocity": VELOCITY, "general": GENERAL}
# KControl's ta_* rows of a control without tendon-transmission actuators
NO_TENDON_ACT = (np.zeros(0, np.int64), np.zeros(0), np.zeros((1, 0)), np.zeros((0, 2)), np.zeros((0, 2)),
                 np.zeros((0, 11)))
# ... and its sa_* rows without site-transmission actuators
NO_SITE_ACT = (np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros((0, 3, 3)), np.zeros((0, 6)), np.zeros((1, 0)))
DYN_NONE, DYN_INTEGRATOR, DYN_FILTER, DYN_FILTEREXACT, DYN_MUSCLE = 0, 1, 2, 3, 4
DYNTYPES = {"none": DYN_NONE, "integrator": DYN_INTEGRATOR, "filter": DYN_FILTER, "filterexact": DYN_FILTEREXACT,
            "muscle": DYN_MUSCLE}


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
    tendon: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # -1: a joint transmission
    dyntype: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # DYN_*
    dynprm: np.ndarray = field(default_factory=lambda: np.zeros(0))  # filter time constant tau
    actrange: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))  # +-inf: not actlimited
    actearly: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    # site transmission (site >= 0, pbsim.control.site_actuators): the site's body, its pose in the
    # body frame and the 6-D gear (force, torque along the site's axes)
    site: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    site_body: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    site_pos: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    site_rot: np.ndarray = field(default_factory=lambda: np.zeros((0, 3, 3)))
    gear6: np.ndarray = field(default_factory=lambda: np.zeros((0, 6)))
    # muscles (MJCF <muscle>, tendon transmission; pbsim.dynamics.muscle): per actuator [on, range (2),
    # F0, lmin, lmax, vmax, fpmax, fvmax, lengthrange (2)] (on = 0: not a muscle), and the muscle
    # dynamics' [tau_act, tau_deact, tausmooth]
    muscle: np.ndarray = field(default_factory=lambda: np.zeros((0, 11)))
    musdyn: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))

    @property
    def nu(self) -> int:
        return len(self.names)

    @property
    def actadr(self) -> np.ndarray:
        """(nu,) each actuator's index in ``State.act`` (-1: no dynamics)."""
        has = self.dyntype != DYN_NONE
        return np.where(has, np.cumsum(has) - 1, -1).astype(np.int64)

    @property
    def na(self) -> int:
        """Number of activations (actuators with dynamics)."""
        return int((self.dyntype != DYN_NONE).sum())

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
        (b0, b1, b2); optional ``tendon`` (index of a tendon transmission; ``dof`` -1), ``dyntype``
        ("none", "integrator", "filter", "filterexact"), ``tau`` (filter time constant),
        ``actrange`` and ``actearly``."""
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
        a.tendon = np.array([int(it.get("tendon", -1)) for it in items], np.int64).reshape(n)
        for it in items:
            if it.get("dyntype", "none") not in DYNTYPES:
                raise InputError(f"actuator {it['name']!r}: dyntype {it['dyntype']!r} is not one of {sorted(DYNTYPES)}")
        a.dyntype = np.array([DYNTYPES[it.get("dyntype", "none")] for it in items], np.int64).reshape(n)
        a.dynprm = np.array([float(it.get("tau", 0.0)) for it in items]).reshape(n)
        a.actrange = np.array([it.get("actrange", (-np.inf, np.inf)) for it in items], float).reshape(n, 2)
        a.actearly = np.array([bool(it.get("actearly", False)) for it in items], bool).reshape(n)
        a.site = np.array([int(it.get("site", -1)) for it in items], np.int64).reshape(n)
        a.site_body = np.array([int(it.get("site_body", -1)) for it in items], np.int64).reshape(n)
        a.site_pos = np.array([it.get("site_pos", (0.0, 0.0, 0.0)) for it in items], float).reshape(n, 3)
        a.site_rot = np.array([it.get("site_rot", np.eye(3)) for it in items], float).reshape(n, 3, 3)
        a.gear6 = np.array([it.get("gear6", (it.get("gear", 1.0), 0, 0, 0, 0, 0)) for it in items], float).reshape(n, 6)
        a.muscle = np.array([it.get("muscle", np.zeros(11)) for it in items], float).reshape(n, 11)
        a.musdyn = np.array([it.get("musdyn", np.zeros(3)) for it in items], float).reshape(n, 3)
        no_length = (a.muscle[:, 0] != 0) & (a.tendon < 0) & ((a.dof < 0) | (a.site >= 0))
        if no_length.any():
            bad = a.names[int(np.argmax(no_length))]
            raise InputError(f"actuator {bad!r}: a muscle needs a tendon or a hinge/slide joint transmission")
        filt = (a.dyntype == DYN_FILTER) | (a.dyntype == DYN_FILTEREXACT)
        if (filt & ~(a.dynprm > 0)).any():
            bad = a.names[int(np.argmax(filt & ~(a.dynprm > 0)))]
            raise InputError(f"actuator {bad!r}: a filter needs a time constant > 0 (dynprm[0])")
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
        lo_hi = np.concatenate([a.ctrlrange, a.forcerange, a.actrange])
        if (lo_hi[:, 0] > lo_hi[:, 1]).any():
            bad = a.names[int(np.argmax(lo_hi[:, 0] > lo_hi[:, 1]) % max(n, 1))]
            raise InputError(f"actuator {bad!r}: a range with lower > upper")
        return a


def actuator_inputs(model, ctrl, batch: int, act=None):
    """``(u, x)``: ``ctrl`` ((nu,) or (B, nu)) checked and clamped to ctrlrange, and per actuator
    the input its force uses: ``u``, or its activation (``act`` (na,) or (B, na); zeros if None)
    for an actuator with dynamics (the caller passes ``act+`` for ``actearly`` ones:
    :func:`force_act`)."""
    acts = getattr(model, "actuators", None)
    nu = 0 if acts is None else acts.nu
    u = np.asarray(ctrl, dtype=np.float64)
    if u.ndim == 1:
        u = u[None, :]
    if u.ndim != 2 or u.shape[1] != nu or u.shape[0] not in (1, batch):
        raise InputError(
            f"ctrl must have shape ({nu},) or ({batch}, {nu}) for this model's {nu} actuators; got {np.shape(ctrl)}"
        )
    if not np.isfinite(u).all():
        raise InputError("ctrl holds NaN or inf")
    if nu:
        u = np.clip(u, acts.ctrlrange[:, 0], acts.ctrlrange[:, 1])  # MuJoCo clamps ctrl to ctrlrange
    x = u
    na = 0 if acts is None else acts.na
    if na:
        A = check_act(model, act, batch)
        Bp = max(u.shape[0], A.shape[0])
        x = np.array(np.broadcast_to(u, (Bp, nu)))
        for a, k in enumerate(acts.actadr):
            if k >= 0:
                x[:, a] = A[:, k]
    return u, x


def check_act(model, act, batch: int) -> np.ndarray:
    """Activations as a (B', na) array (zeros when None); InputError on a wrong shape or NaN."""
    na = model.actuators.na if getattr(model, "actuators", None) is not None else 0
    A = np.zeros((1, na)) if act is None else np.asarray(act, dtype=np.float64)
    if A.ndim == 1:
        A = A[None, :]
    if A.ndim != 2 or A.shape[1] != na or A.shape[0] not in (1, batch):
        raise InputError(f"act must have shape ({na},) or ({batch}, {na}) for this model's {na} activation(s); "
                         f"got {np.shape(act)}")
    if not np.isfinite(A).all():
        raise InputError("act holds NaN or inf")
    return A


def act_step(model, act, u, dt):
    """MuJoCo's Euler update of the activations over a step of ``dt`` (module docstring): ``act``
    (B, na), ``u`` the clamped ctrl (B', nu)."""
    acts = model.actuators
    A = np.array(act, dtype=np.float64, ndmin=2)
    out = np.array(np.broadcast_to(A, (max(A.shape[0], u.shape[0]), A.shape[1])))
    for a, k in enumerate(acts.actadr):
        if k < 0:
            continue
        ua, x, d = u[:, a], A[:, k], int(acts.dyntype[a])
        if d == DYN_INTEGRATOR:
            out[:, k] = x + dt * ua  # act+ = act + dt u
        elif d == DYN_MUSCLE:
            out[:, k] = x + dt * muscle_act_rate(ua, x, acts.musdyn[a])  # MuJoCo's muscle dynamics
        elif d == DYN_FILTER:
            out[:, k] = x + dt * (ua - x) / acts.dynprm[a]  # act+ = act + dt (u - act) / tau
        else:
            out[:, k] = x + (ua - x) * -np.expm1(-dt / acts.dynprm[a])  # act+ = act + (u - act)(1 - e^(-dt/tau))
        lo, hi = acts.actrange[a]
        if np.isfinite(lo) or np.isfinite(hi):
            out[:, k] = np.clip(out[:, k], lo, hi)
    return out


def muscle_act_rate(u, act, prm) -> np.ndarray:
    """MuJoCo's muscle activation rate ``(u - act) / tau``: ``tau = tau_act (0.5 + 1.5 act)`` while
    activating, ``tau_deact / (0.5 + 1.5 act)`` while deactivating (``u``, ``act`` clipped to [0, 1]
    in tau; ``prm`` = [tau_act, tau_deact, tausmooth]: a width > 0 blends the two with a quintic
    step of ``(u - act) / width + 0.5``)."""
    uc = np.clip(u, 0.0, 1.0)
    ac = np.clip(act, 0.0, 1.0)
    t_act = prm[0] * (0.5 + 1.5 * ac)
    t_deact = prm[1] / (0.5 + 1.5 * ac)
    du = uc - act
    if prm[2] < MINVAL:
        tau = np.where(du > 0, t_act, t_deact)
    else:
        x = np.clip(du / prm[2] + 0.5, 0.0, 1.0)
        s = x * x * x * (3.0 * x * (2.0 * x - 5.0) + 10.0)  # quintic smoothstep
        tau = t_deact + (t_act - t_deact) * s
    return du / np.maximum(MINVAL, tau)


def act_advance(model, act, ctrl, dt, batch: int) -> np.ndarray:
    """The activations after a step of ``dt`` from ``act`` under ``ctrl`` (clamped): (B, na)."""
    A = check_act(model, act, batch)
    u, _ = actuator_inputs(model, ctrl, batch, A)
    return np.ascontiguousarray(np.broadcast_to(act_step(model, A, u, dt), (batch, A.shape[1])))


def force_act(model, act, act_next) -> np.ndarray:
    """The activations a step's force uses: ``act`` (MuJoCo's default), ``act_next`` for the
    actuators with ``actearly``."""
    acts = model.actuators
    out = np.array(np.broadcast_to(act, act_next.shape))
    for a, k in enumerate(acts.actadr):
        if k >= 0 and acts.actearly[a]:
            out[:, k] = act_next[:, k]
    return out


def actuator_targets(model, ctrl, batch: int, act=None):
    """The per-DOF torque / stable-PD arrays that actuators ``model.actuators`` apply for ``ctrl``
    ((nu,) or (B, nu)) and activations ``act``: ``(tau (B', nv), kp, kd, q_ref (B', nq), v_ref
    (B', nv), uses_pd, ta, sa)``, ``ta`` the tendon-transmission rows of ``KControl``
    (``ta_ten, ta_gear, ta_c, ta_b, ta_frc``), ``sa`` the site-transmission rows (``sa_*``)."""
    act_ = getattr(model, "actuators", None)
    nu = 0 if act_ is None else act_.nu
    u, x = actuator_inputs(model, ctrl, batch, act)
    Bp = x.shape[0]
    nv = model.nv
    tau, kp, kd = np.zeros((Bp, nv)), np.zeros((Bp, nv)), np.zeros((Bp, nv))
    cq = np.zeros((Bp, nv))  # per DOF, the servos' torque without their state terms
    ta_rows, sa_rows = [], []
    for a in range(nu):
        g = act_.gear[a]
        f = act_.gain[a] * x[:, a] + act_.bias[a, 0]  # the force's part without state terms
        if act_.tendon[a] >= 0 or act_.muscle[a, 0] != 0:  # tendons, and muscles on joints (their law needs the length)
            ta_rows.append((a, f))
            continue
        if act_.site[a] >= 0:  # no length: f = gain u + b0, clamped
            sa_rows.append((a, np.clip(f, act_.forcerange[a, 0], act_.forcerange[a, 1])))
            continue
        j = int(act_.dof[a])
        kpa, kda = -g * g * act_.bias[a, 1], -g * g * act_.bias[a, 2]
        if kpa == 0.0 and kda == 0.0:
            tau[:, j] += g * np.clip(f, act_.forcerange[a, 0], act_.forcerange[a, 1])
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
    ta = _tendon_rows(model, act_, ta_rows, Bp)
    sa = NO_SITE_ACT
    if sa_rows:
        idx = [a for a, _ in sa_rows]
        sa = (np.ascontiguousarray(act_.site_body[idx], np.int64), np.ascontiguousarray(act_.site_pos[idx]),
              np.ascontiguousarray(act_.site_rot[idx]), np.ascontiguousarray(act_.gear6[idx]),
              np.ascontiguousarray(np.stack([np.broadcast_to(f, (Bp,)) for _, f in sa_rows], axis=1)))
    return tau, kp, kd, q_ref, v_ref, uses_pd, ta, sa


def _tendon_rows(model, acts, rows, Bp):
    """The ``ta_*`` arrays of ``KControl`` for the tendon-transmission actuators and the muscles on
    joints ``rows`` [(a, C)]; ``ta_ten`` is the tendon, or ``JOINT_ROW - i`` for a muscle on body
    ``i``'s joint (:func:`pbsim.dynamics.tendon.joint_muscle_forces`)."""
    n = len(rows)
    if not n:
        return NO_TENDON_ACT
    idx = [a for a, _ in rows]
    C = np.ascontiguousarray(np.stack([np.broadcast_to(c, (Bp,)) for _, c in rows], axis=1))
    ten = np.array(acts.tendon[idx], np.int64)
    if (ten < 0).any():
        body_of = {int(model.iv[i]): i for i in range(model.nb) if model.nvj[i] == 1}  # 1-DOF joints by DOF
        ten = np.array([t if t >= 0 else JOINT_ROW - body_of[int(acts.dof[a])] for t, a in zip(ten, idx)], np.int64)
    return (ten, np.ascontiguousarray(acts.gear[idx], np.float64), C,
            np.ascontiguousarray(acts.bias[idx][:, 1:3], np.float64),
            np.ascontiguousarray(acts.forcerange[idx], np.float64), np.ascontiguousarray(acts.muscle[idx], np.float64))
