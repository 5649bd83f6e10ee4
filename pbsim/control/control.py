"""Control input of a step: joint torques plus optional (stable) PD targets.

Kernels read a :class:`KControl` namedtuple.  Every array has a leading batch axis B
(a batch of one broadcasts to every trajectory through ``bmod``).
"""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, fields
from functools import wraps

import numpy as np

from pbsim.errors import InputError, check_options
from pbsim.control.actuators import NO_SITE_ACT, NO_TENDON_ACT

# mode: 0 = torques only, 1 = plain PD (paper 001 Eq. 1-2), 2 = stable PD (Eq. 4-7)
# solver (SPD only): 0 = MABA embedded in ABA (App. A), 1 = sparse LTL (SF), 2 = dense Cholesky (DF)
# clamp: 1 = clip the actuation torque to +-effort (the model's effort limits) with an active set
# effort: (nv,) limits (inf = none); dof_parent: (nv,) DOF-level parent (lambda) for SF, -1 = root
# predict (SPD only): 0 = first-order q + dt v in the tangent space (Eq. 4), 1 = exact q (+) dt v
# ta_*: actuators with a tendon transmission (pbsim.control.actuators, pbsim.dynamics.tendon): tendon
# index (na,), gear (na,), the force's constant part gain u + b0 (B', na), (b1, b2) (na, 2), forcerange (na, 2)
# sa_*: actuators with a site transmission (pbsim.control.site_actuators): body (ns,), site position
# (ns, 3) and rotation (ns, 3, 3) in the body frame, gear (ns, 6), force (B', ns)
KControl = namedtuple("KControl", "mode tau kp kd q_ref v_ref solver clamp effort dof_parent predict "
                      "ta_ten ta_gear ta_c ta_b ta_frc ta_mus sa_body sa_pos sa_rot sa_gear sa_f")

TORQUE, PD, SPD = 0, 1, 2
MODES = {"torque": TORQUE, "none": TORQUE, "pd": PD, "spd": SPD}
MABA, SF, DF = 0, 1, 2
SOLVERS = {"maba": MABA, "sf": SF, "df": DF}
LINEAR, EXACT = 0, 1
PREDICTIONS = {"linear": LINEAR, "exact": EXACT}


def dof_parents(model) -> np.ndarray:
    """lambda(k) over DOFs (Featherstone's expanded parent array, RBDA Sec. 6.5): the previous DOF
    of the same joint, else the last DOF of the parent body's joint, else -1."""
    lam = np.full(model.nv, -1, dtype=np.int64)
    for i in range(model.nb):
        j0, n = int(model.iv[i]), int(model.nvj[i])
        par = int(model.parent[i])
        for a in range(n):
            if a > 0:
                lam[j0 + a] = j0 + a - 1
            elif par >= 0:
                lam[j0] = int(model.iv[par] + model.nvj[par] - 1)
    return lam


@dataclass
class Control:
    """Torques ``tau`` (nv,) and, for ``mode`` "pd"/"spd", gains and targets.

    ``tau``: joint forces, the input every integrator honours; an external force or torque on a
    body enters through it: ``tau = pbsim.control.body_wrench_torque(model, q, body, force, point)``
    (``J(q)^T [torque; force]``, :mod:`pbsim.control.external`).
    ``kp``, ``kd``: scalars or (nv,) arrays; ``q_ref`` (nq,), ``v_ref`` (nv,).  Any of them may carry
    a leading batch axis.  The PD torque is ``-kp (q (-) q_ref) - kd (v - v_ref)`` (per DOF, the
    difference taken on the configuration manifold, expressed in the tangent space at q); SPD
    (paper 001 Eq. 6) evaluates it at the predicted next state ``q + dt v`` and ``v + dt qdd``,
    so ``q_ref`` should be the target at ``t + dt`` (:class:`pbsim.control.Reference` does that).

    ``spd_solver``: "maba" (default; the SPD term rides inside ABA, one O(n) pass), "sf" (sparse
    LTL factorization of M + Kd dt) or "df" (dense Cholesky).  All three give the same qdd.
    ``spd_predict``: how SPD predicts the next position (Eq. 4): "linear" (default, the paper's
    first-order Taylor ``q + dt v``, taken in the tangent space at q: ``(q (-) q_ref) + dt v``) or
    "exact" (``(q (+) dt v) (-) q_ref`` on the manifold; one more quaternion exp per ball/free joint).
    They differ only for ball and free joints, by O(dt |v| |q (-) q_ref|).
    ``clamp``: clip the total actuation torque (tau + PD) to the model's effort limits.  With SPD
    the torque depends on the new acceleration, so clamping runs standalone MABA passes: joints
    whose SPD torque exceeds the limit get the limit as a fixed (explicit) torque and lose their
    implicit ``Kd dt`` term; the others stay stable-PD (an active set, at most 4 passes).  Driving
    the model's actuators (``ctrl``, or no Control), the step clamps without being asked where the
    file bounds them as MuJoCo does (a servo's forcerange, a joint's actuatorfrcrange:
    :func:`servo_effort`); ``clamp=True`` clamps every DOF to ``Model.effort_limit`` instead.
    ``ctrl``: the model's actuator inputs (``model.actuators``, from MJCF ``<actuator>``), (nu,) or
    (B, nu): motors add torque, position/velocity actuators run as stable PD, tendon actuators act
    through their tendon (:mod:`pbsim.control.actuators`); ``tau`` still adds to them; not
    combined with mode pd/spd.  A Control without ``ctrl`` leaves the actuators out (joint-level
    control alone); no Control at all (``control=None``) drives them at ctrl = 0, as MuJoCo does
    (:func:`default_control`).  ``act``: the activations of actuators with dynamics (``State.act``;
    ``Integrator.step`` sets it from the state every step; needed where nothing advances them).
    """

    tau: np.ndarray | float | None = None
    mode: str = "torque"
    kp: np.ndarray | float = 0.0
    kd: np.ndarray | float = 0.0
    q_ref: np.ndarray | None = None
    v_ref: np.ndarray | None = None
    spd_solver: str = "maba"
    clamp: bool = False
    spd_predict: str = "linear"
    ctrl: np.ndarray | None = None
    act: np.ndarray | None = None  # (na,) or (B, na): activations of actuators with dynamics (State.act)

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
        if self.spd_solver not in SOLVERS:
            raise InputError(f"unknown spd_solver {self.spd_solver!r}; expected one of {sorted(SOLVERS)}")
        if self.spd_predict not in PREDICTIONS:
            raise InputError(f"unknown spd_predict {self.spd_predict!r}; expected one of {sorted(PREDICTIONS)}")

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
            return np.array(a, np.float64, order="C")  # a copy: a read-only array would recompile

        if self.ctrl is not None:
            return self._actuator_arrays(model, batch, arr)
        kp = arr(self.kp, model.nv, "kp", 0.0)
        kd = arr(self.kd, model.nv, "kd", 0.0)
        if np.any(kp < 0) or np.any(kd < 0):
            raise InputError("control gains kp and kd must be non-negative")
        cache = model.__dict__.setdefault("_control_cache", {})
        if "lam" not in cache:
            cache["lam"] = dof_parents(model)
            cache["effort"] = np.ascontiguousarray(np.abs(model.effort_limit), dtype=np.float64)
        return KControl(MODES[self.mode], arr(self.tau, model.nv, "tau", 0.0), kp, kd,
                        arr(self.q_ref, model.nq, "q_ref", model.neutral()),
                        arr(self.v_ref, model.nv, "v_ref", 0.0),
                        SOLVERS[self.spd_solver], 1 if self.clamp else 0, cache["effort"], cache["lam"],
                        PREDICTIONS[self.spd_predict], *NO_TENDON_ACT, *NO_SITE_ACT)

    def _actuator_arrays(self, model, batch, arr):
        from pbsim.control.actuators import actuator_targets

        if self.mode not in ("torque", "none"):
            raise InputError("Control(ctrl=...) drives the model's actuators; it cannot be combined with "
                             f"mode={self.mode!r} (give tau, or use kp/kd/q_ref without ctrl)")
        if getattr(model, "na", 0) and self.act is None:
            raise InputError(f"model {model.name!r} has {model.na} actuator activation(s) (MJCF dyntype), which only "
                             "Integrator.step and rollout advance (State.act); CpuBatch, CudaBatch, the vector envs "
                             "and Stepper do not: give Control(act=...) to hold them fixed")
        tau, kp, kd, q_ref, v_ref, uses_pd, ta, sa = actuator_targets(model, self.ctrl, batch, act=self.act)
        extra = arr(self.tau, model.nv, "tau", 0.0)
        tau = np.ascontiguousarray(tau + extra)
        cache = model.__dict__.setdefault("_control_cache", {})
        if "lam" not in cache:
            cache["lam"] = dof_parents(model)
            cache["effort"] = np.ascontiguousarray(np.abs(model.effort_limit), dtype=np.float64)
        if "servo_effort" not in cache:
            cache["servo_effort"] = servo_effort(model)
        # MuJoCo clamps a servo's force to its forcerange and a joint's actuator force to its
        # actuatorfrcrange: with finite ones the step clamps (stable PD where it is not saturated)
        eff = cache["effort"] if self.clamp else cache["servo_effort"]
        clamp = self.clamp or bool(np.isfinite(cache["servo_effort"]).any())
        return KControl(SPD if uses_pd else TORQUE, tau, kp, kd, q_ref, v_ref, SOLVERS[self.spd_solver],
                        1 if clamp else 0, eff, cache["lam"], PREDICTIONS[self.spd_predict], *ta, *sa)


def servo_effort(model) -> np.ndarray:
    """(nv,) the bound MuJoCo puts on the actuation of each DOF driven by a joint actuator: its
    joint's ``actuatorfrcrange`` (``Model.effort_limit``) and ``|gear| * max|forcerange|`` of the
    servos on it (their force is implicit here, so it is clamped per DOF: exact for one servo per
    joint and a symmetric range); inf where nothing bounds it (motors are clamped to their own
    forcerange before the step)."""
    acts = model.actuators
    eff = np.full(model.nv, np.inf)
    if acts is None or not acts.nu:
        return eff
    for a in range(acts.nu):
        j = int(acts.dof[a])
        if j < 0 or acts.tendon[a] >= 0 or acts.site[a] >= 0:
            continue
        eff[j] = min(eff[j], abs(float(model.effort_limit[j])))
        if acts.bias[a, 1] != 0.0 or acts.bias[a, 2] != 0.0:  # a servo: its forcerange on the implicit force
            eff[j] = min(eff[j], abs(acts.gear[a]) * float(np.max(np.abs(acts.forcerange[a]))))
    return np.ascontiguousarray(eff)


def _checked_init(init):
    """Control(...) with an unknown keyword: InputError listing the valid ones (not TypeError)."""

    names: list = []

    @wraps(init)
    def __init__(self, *args, **kw):
        if kw:
            if not names:
                names.extend(f.name for f in fields(Control))
            if any(k not in names for k in kw):
                check_options("Control", kw, names)
        init(self, *args, **kw)

    return __init__


Control.__init__ = _checked_init(Control.__init__)


def idle_ctrl(model, ctrl=None):
    """The actuator inputs of a run given no control, as MuJoCo's ``mjData`` starts: ``ctrl`` (a
    keyframe's; an entry it does not set, NaN, is 0) or zeros, clamped to ctrlrange later.  None
    where the file's actuators apply no force there and move no activation (no actuators, or motors
    only at a ctrlrange that holds 0): such a run needs no actuator path."""
    acts = getattr(model, "actuators", None)
    if acts is None or acts.nu == 0:
        return None
    u = np.zeros(acts.nu) if ctrl is None else np.nan_to_num(np.asarray(ctrl, np.float64), nan=0.0)
    u0 = np.clip(u, acts.ctrlrange[:, 0], acts.ctrlrange[:, 1])
    acts_idle = (acts.gain * u0 == 0.0) & (acts.bias == 0.0).all(axis=1) & (acts.dyntype == 0)
    return None if acts_idle.all() else u


def default_control(model) -> Control:
    """The control of a step or run given none (``control=None``): the file's actuators at ctrl = 0
    as in MuJoCo, where they act there (position and velocity servos hold their joints, a bias
    applies, activations relax: :func:`idle_ctrl`); else no input at all.  One instance per model
    (its kernel arrays are cached in it)."""
    c = model.__dict__.get("_default_control")
    if c is None:
        u = idle_ctrl(model)
        c = model.__dict__["_default_control"] = Control() if u is None else Control(ctrl=u)
    return c
