"""Control input from user data: per-joint gains and time-varying targets (paper 001 Eq. 1-6).

:func:`per_dof` turns a scalar, an (nv,) vector or a ``{joint-name pattern: value}`` dict into an
(nv,) gain vector.  :class:`Reference` holds q_ref(t) / v_ref(t) (a callable, arrays sampled in
time, or a .npz/.csv file with joint-name columns), interpolates between samples on the
configuration manifold, and produces a :class:`Control` at time t; it is itself a callable
``(t, state) -> Control`` that :func:`pbsim.rollout` accepts.
"""
from __future__ import annotations

import csv
import fnmatch
from pathlib import Path

import numpy as np

from pbsim.control.control import MODES, PREDICTIONS, SOLVERS, Control
from pbsim.dynamics.joints import FREE
from pbsim.errors import InputError

ROOT_MODES = ("passive", "hog", "as_given")


def per_dof(model, x, name: str = "gain", default: float = 0.0) -> np.ndarray:
    """(nv,) array from a scalar, an (nv,) array, or a dict ``{joint name or fnmatch pattern:
    scalar or (nv_joint,) array}`` (joints not matched get ``default``; later keys win)."""
    if isinstance(x, dict):
        out = np.full(model.nv, float(default))
        for key, val in x.items():
            hits = [n for n in model.joint_names if fnmatch.fnmatchcase(n, str(key))]
            if not hits:
                raise InputError(f"{name}: no joint matches {key!r}; joints: {model.joint_names}")
            for n in hits:
                sl = model.idx_v(n)
                v = np.asarray(val, dtype=np.float64)
                if v.ndim not in (0, 1) or (v.ndim == 1 and v.shape[0] != sl.stop - sl.start):
                    raise InputError(f"{name}[{key!r}] must be a scalar or have {sl.stop - sl.start} values")
                out[sl] = v
    else:
        try:
            a = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError(f"{name} must be a number, an array of {model.nv} or a dict by joint name") from None
        if a.ndim == 0:
            out = np.full(model.nv, float(a))
        elif a.shape == (model.nv,):
            out = a.copy()
        else:
            raise InputError(f"{name} must be a scalar, shape ({model.nv},) or a dict; got shape {a.shape}")
    if not np.all(np.isfinite(out)) or np.any(out < 0):
        bad = int(np.argmax(~np.isfinite(out) | (out < 0)))
        raise InputError(f"{name}[{bad}] = {out[bad]} must be finite and non-negative")
    return out


def root_dofs(model) -> slice | None:
    """The DOFs of a free-floating root joint, or None."""
    if model.nb and int(model.jtype[0]) == FREE and int(model.parent[0]) < 0:
        return slice(0, 6)
    return None


def gains(model, kp, kd, root: str = "passive", root_kp: float = 20000.0, root_kd: float = 2000.0):
    """(kp, kd) per DOF.  With a free root, ``root`` picks what drives it: "passive" (zero gains:
    only gravity/contact move it), "hog" ("hand of God" SPD on the root, paper 001 Sec. 4.1, with
    root_kp/root_kd) or "as_given" (kp/kd as passed)."""
    if root not in ROOT_MODES:
        raise InputError(f"root must be one of {ROOT_MODES}, got {root!r}")
    KP, KD = per_dof(model, kp, "kp"), per_dof(model, kd, "kd")
    r = root_dofs(model)
    if r is not None and root != "as_given":
        KP[r] = 0.0 if root == "passive" else float(root_kp)
        KD[r] = 0.0 if root == "passive" else float(root_kd)
    return KP, KD


def _batch(model, q):
    from pbsim.dynamics.api import as_batch

    return as_batch(q, model.nq, "q_ref")[0]


class Reference:
    """Time-varying PD/SPD targets and gains; ``ref(t, state)`` or ``ref.control(t)`` gives a Control.

    ``q``: a callable ``t -> (nq,)``, an array (T, nq) sampled at times ``t`` (array (T,) or a
    sample period), or None (hold the model's default configuration).  ``v``: same forms, None
    (the time derivative of q_ref, by finite differences on the manifold) or "zero" (Eq. 2).
    Samples are interpolated on the configuration manifold (geodesic for quaternions); past the
    end the motion loops when ``loop`` else holds the last sample.  With ``mode="spd"`` and
    ``dt`` given, the targets are sampled at ``t + dt`` (q_bar^{n+1} of Eq. 3-6).
    """

    def __init__(self, model, q=None, v=None, t=None, kp=0.0, kd=0.0, mode: str = "spd",
                 solver: str = "maba", clamp: bool = False, tau=None, root: str = "passive",
                 root_kp: float = 20000.0, root_kd: float = 2000.0, dt: float | None = None, loop: bool = False,
                 predict: str = "linear"):
        from pbsim.dynamics.api import difference

        if mode not in MODES:
            raise InputError(f"unknown control mode {mode!r}; expected one of {sorted(MODES)}")
        if solver not in SOLVERS:
            raise InputError(f"unknown spd solver {solver!r}; expected one of {sorted(SOLVERS)}")
        if predict not in PREDICTIONS:
            raise InputError(f"unknown spd prediction {predict!r}; expected one of {sorted(PREDICTIONS)}")
        self.model, self.mode, self.solver, self.clamp, self.loop = model, mode, solver, bool(clamp), bool(loop)
        self.predict = predict
        self.dt = None if dt is None else float(dt)
        self.kp, self.kd = gains(model, kp, kd, root, root_kp, root_kd)
        self.tau = None if tau is None else np.asarray(tau, dtype=np.float64)
        self._qf = self._vf = None
        self.times = self.qs = self.dqs = self.vs = None
        if q is None:
            q = model.default_configuration()
        if callable(q):
            self._qf = q
        else:
            Q = _batch(model, q)
            if Q.shape[0] == 1:
                self._qf = (lambda q0: (lambda _t: q0))(Q[0].copy())
                v = "zero" if v is None else v
            else:
                if t is None:
                    raise InputError("sampled q_ref needs sample times t (array or period)")
                T = np.asarray(t, dtype=np.float64)
                T = np.arange(Q.shape[0]) * float(T) if T.ndim == 0 else T
                if T.shape != (Q.shape[0],) or np.any(np.diff(T) <= 0):
                    raise InputError(f"sample times must be increasing with {Q.shape[0]} entries; got shape {T.shape}")
                self.times, self.qs = T, Q
                self.dqs = difference(model, Q[:-1], Q[1:])  # (T-1, nv) geodesic steps
        if isinstance(v, str):
            if v != "zero":
                raise InputError(f"v_ref must be a callable, an array, None or 'zero'; got {v!r}")
            self._vf = lambda _t: np.zeros(model.nv)
        elif callable(v):
            self._vf = v
        elif v is not None:
            V = np.asarray(v, dtype=np.float64)
            if V.ndim == 1 and V.shape == (model.nv,):
                self._vf = lambda _t: V
            elif self.times is not None and V.shape == (self.times.shape[0], model.nv):
                self.vs = V
            else:
                raise InputError(f"v_ref must have shape ({model.nv},) or (T, {model.nv}); got {V.shape}")

    # ------------------------------------------------------------------ sampling
    def _locate(self, t):
        T = self.times
        if self.loop:
            t = T[0] + (t - T[0]) % (T[-1] - T[0])
        t = min(max(t, T[0]), T[-1])
        k = int(np.clip(np.searchsorted(T, t, side="right") - 1, 0, len(T) - 2))
        return k, (t - T[k]) / (T[k + 1] - T[k])

    def q_at(self, t: float) -> np.ndarray:
        """The target configuration at time t."""
        from pbsim.dynamics.api import integrate

        if self._qf is not None:
            return np.asarray(self._qf(float(t)), dtype=np.float64)
        k, s = self._locate(float(t))
        return integrate(self.model, self.qs[k], s * self.dqs[k])

    def v_at(self, t: float) -> np.ndarray:
        """The target velocity at time t (given, or the derivative of q_ref)."""
        from pbsim.dynamics.api import difference

        if self._vf is not None:
            return np.asarray(self._vf(float(t)), dtype=np.float64)
        if self.times is not None:
            k, s = self._locate(float(t))
            if self.vs is not None:
                return (1 - s) * self.vs[k] + s * self.vs[k + 1]
            return self.dqs[k] / (self.times[k + 1] - self.times[k])
        h = 1e-4
        return difference(self.model, self.q_at(t - h), self.q_at(t + h)) / (2 * h)

    def control(self, t: float) -> Control:
        """The Control to apply during the step that starts at time t."""
        ts = t + self.dt if (self.mode == "spd" and self.dt is not None) else t
        return Control(tau=self.tau, mode=self.mode, kp=self.kp, kd=self.kd, q_ref=self.q_at(ts),
                       v_ref=self.v_at(ts), spd_solver=self.solver, clamp=self.clamp,
                       spd_predict=self.predict)

    def __call__(self, t, state=None) -> Control:
        return self.control(t)

    # ------------------------------------------------------------------ files
    def sample(self, times) -> np.ndarray:
        return np.stack([self.q_at(t) for t in np.asarray(times, dtype=np.float64)])

    def save(self, path, times):
        """Write q_ref sampled at ``times`` as .npz (t, q, joint_names) or .csv (joint columns)."""
        save_targets(self.model, path, times, self.sample(times))

    @classmethod
    def from_file(cls, model, path, **kw) -> "Reference":
        t, q = load_targets(model, path)
        return cls(model, q=q, t=t, **kw)


def _columns(model):
    """CSV/NPZ column names: a 1-DOF joint is its name; others ``name:k`` for each coordinate."""
    cols = []
    for i, n in enumerate(model.joint_names):
        k = int(model.nqj[i])
        cols.append((n, [n] if k == 1 else [f"{n}:{a}" for a in range(k)], int(model.iq[i])))
    return cols


def save_targets(model, path, times, Q):
    path = Path(path)
    if path.suffix == ".npz":
        np.savez(path, t=np.asarray(times), q=Q, joint_names=np.array(model.joint_names))
        return
    names = ["t"] + [c for _, cs, _ in _columns(model) for c in cs]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(names)
        for t, q in zip(times, Q):
            w.writerow([repr(float(t))] + [repr(float(x)) for x in q])


def load_targets(model, path):
    """(t (T,), q (T, nq)) from a .npz (keys ``t`` and ``q`` [with ``joint_names``], or ``t`` and one
    key per joint) or a .csv (header ``t`` then joint columns; ``name:k`` for multi-coordinate
    joints).  Joints absent from the file hold the model's default configuration."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"target file {str(path)!r} does not exist")
    data: dict[str, np.ndarray] = {}
    if path.suffix == ".npz":
        z = np.load(path, allow_pickle=False)
        if "t" not in z:
            raise InputError(f"{path}: needs an array 't' of sample times")
        t = np.asarray(z["t"], dtype=np.float64)
        if "q" in z:
            Q = np.asarray(z["q"], dtype=np.float64)
            names = [str(s) for s in z["joint_names"]] if "joint_names" in z else None
            if names is None:
                if Q.shape != (t.shape[0], model.nq):
                    raise InputError(f"{path}: q must have shape ({t.shape[0]}, {model.nq}); got {Q.shape}")
                return t, Q
            if names != list(model.joint_names) or Q.shape != (t.shape[0], model.nq):
                _nq_layout_from_names(names, Q.shape[1], path)
            return t, Q
        else:
            for k in z.files:
                if k != "t":
                    data[k] = np.asarray(z[k], dtype=np.float64).reshape(t.shape[0], -1)
    elif path.suffix == ".csv":
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        if not rows or rows[0][0].strip() != "t":
            raise InputError(f"{path}: the first column must be 't'")
        head = [h.strip() for h in rows[0]]
        try:
            A = np.array([[float(x) for x in r] for r in rows[1:] if r], dtype=np.float64)
        except ValueError as e:
            raise InputError(f"{path}: non-numeric entry ({e})") from None
        t = A[:, 0]
        for n, cs, _ in _columns(model):
            if all(c in head for c in cs):
                data[n] = A[:, [head.index(c) for c in cs]]
        known = {c for _, cs, _ in _columns(model) for c in cs} | {"t"}
        unknown = [h for h in head if h not in known]
        if unknown:
            raise InputError(f"{path}: columns {unknown} name no joint of {model.name!r}; joints: {model.joint_names}")
    else:
        raise InputError(f"target file {str(path)!r}: expected .npz or .csv")
    Q = np.tile(model.default_configuration(), (t.shape[0], 1))
    for n, arr in data.items():
        if n not in model.joint_names:
            raise InputError(f"{path}: {n!r} names no joint of {model.name!r}; joints: {model.joint_names}")
        sl = model.idx_q(n)
        if arr.shape != (t.shape[0], sl.stop - sl.start):
            raise InputError(f"{path}: joint {n!r} needs {sl.stop - sl.start} coordinates per sample; got {arr.shape}")
        Q[:, sl] = arr
    return t, Q


def _nq_layout_from_names(names, width, path):
    raise InputError(f"{path}: 'joint_names' in a target file must match the model's joints in order "
                     f"(write it with Reference.save); or store one array per joint")


def control_from_args(model, control: str = "spd", solver: str = "maba", kp=0.0, kd=0.0, target=None,
                      dt: float | None = None, clamp: bool = False, root: str = "passive",
                      root_kp: float = 20000.0, root_kd: float = 2000.0, loop: bool = False,
                      predict: str = "linear"):
    """What ``pbsim rollout MODEL --control spd --spd-solver maba --kp 75000 --kd 4000 --target FILE``
    builds: a :class:`Control` (no target: hold the default configuration) or a :class:`Reference`
    (a callable ``(t, state) -> Control``) for ``pbsim.rollout(..., control=...)``.  ``kp``/``kd``:
    number, (nv,) array, dict by joint name, or a string "75000" / "hip*=300,knee=200,*=100"."""
    def parse(x, name):
        if isinstance(x, str):
            if "=" not in x:
                try:
                    return float(x)
                except ValueError:
                    raise InputError(f"--{name} {x!r}: expected a number or name=value pairs") from None
            out = {}
            for part in x.split(","):
                k, _, val = part.partition("=")
                try:
                    out[k.strip()] = float(val)
                except ValueError:
                    raise InputError(f"--{name}: bad entry {part!r} (expected name=value)") from None
            return out
        return x

    if control not in MODES:
        raise InputError(f"--control {control!r}: expected one of {sorted(MODES)}")
    kw = dict(kp=parse(kp, "kp"), kd=parse(kd, "kd"), mode=control, solver=solver, clamp=clamp, root=root,
              root_kp=root_kp, root_kd=root_kd, dt=dt, loop=loop, predict=predict)
    if target is None:
        ref = Reference(model, **kw)
        return ref.control(0.0)
    return Reference.from_file(model, target, **kw)
