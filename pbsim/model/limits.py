"""Joint position limits as a one-sided stiff spring-damper: the default gains.

A revolute/prismatic joint past (or about to pass) a finite limit gets the torque
``-kp (q - limit) - kd v`` (one-sided), integrated implicitly (the stable-PD form of paper 001:
``dt kd + dt^2 kp`` joins the diagonal), so any stiffness is stable at any dt.  The default
gains make the limit a critically damped oscillator with time constant ``LIMIT_TIMECONST``
(0.02 s, MuJoCo's default ``solref``) on the joint's inertia: ``kp = I w^2``, ``kd = 2 I w``,
``w = 2 pi / T``, with ``I`` the inertia of the joint's subtree about its axis at the neutral
pose (subtree mass for a prismatic joint) plus the joint's armature.  A 6 rad/s swing into a limit then overshoots by
about ``v / w`` ~ 0.02 rad at most; larger dt damps it further (implicit).

MJCF files get MuJoCo's own limit law as well (:class:`SoftLimits`, read from the compiled file):
the explicit integrators hold those DOFs by it (:mod:`pbsim.dynamics.limits`), the other methods
keep the spring-damper above (docs/robots.md, "MuJoCo's limit law").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pbsim.dynamics.joints import BALL, PRISMATIC, REVOLUTE
from pbsim.errors import InputError

LIMIT_TIMECONST = 0.02  # s


def subtree_axis_inertia(model) -> np.ndarray:
    """(nv,) inertia of each 1-DOF joint's subtree about its axis at the neutral pose [kg m^2]
    (subtree mass [kg] for prismatic joints); 0 for ball/free DOFs."""
    nb = model.nb
    m = np.array(model.mass, float)
    c = np.array(model.com, float).reshape(nb, 3).copy()
    Ic = np.array(model.inertia_com, float).reshape(nb, 3, 3).copy()
    for i in range(nb - 1, -1, -1):  # children have larger indices: fold each subtree into its parent
        pa = int(model.parent[i])
        if pa < 0:
            continue
        R, p = model.tree_R[i], model.tree_p[i]
        ci = R @ c[i] + p
        Ii = R @ Ic[i] @ R.T
        mt = m[pa] + m[i]
        if mt <= 0:
            continue
        cn = (m[pa] * c[pa] + m[i] * ci) / mt
        dp, di = c[pa] - cn, ci - cn
        Ic[pa] = (
            Ic[pa]
            + m[pa] * (dp @ dp * np.eye(3) - np.outer(dp, dp))
            + Ii
            + m[i] * (di @ di * np.eye(3) - np.outer(di, di))
        )
        c[pa], m[pa] = cn, mt
    out = np.zeros(model.nv)
    for i in range(nb):
        j = int(model.iv[i])
        if model.jtype[i] == REVOLUTE:
            a = np.asarray(model.axis[i], float)
            Io = Ic[i] + m[i] * (c[i] @ c[i] * np.eye(3) - np.outer(c[i], c[i]))
            out[j] = float(a @ Io @ a)
        elif model.jtype[i] == PRISMATIC:
            out[j] = float(m[i])
    return out


def default_limit_gains(model, timeconst: float = LIMIT_TIMECONST) -> tuple[np.ndarray, np.ndarray]:
    """``(kp, kd)`` (nv,) of the limit spring-damper; zero where a DOF has no finite limit."""
    w = 2.0 * np.pi / timeconst
    inertia = np.maximum(subtree_axis_inertia(model) + np.asarray(model.armature, float), 1e-9)  # rotor too
    limited = np.isfinite(model.lower) | np.isfinite(model.upper)
    kp = np.where(limited, inertia * w * w, 0.0)
    kd = np.where(limited, 2.0 * inertia * w, 0.0)
    return kp, kd


# MuJoCo's bounds on solimp (mjMINIMP, mjMAXIMP) and its floor on R (mjMINVAL)
MINIMP, MAXIMP, MINVAL = 0.0001, 0.9999, 1e-15


def _z(*shape):
    return np.zeros(shape)


HINGE_SLIDE, BALL_CONE, TENDON = 0, 1, 2  # SoftLimits.kind: what a limit bounds


@dataclass
class SoftLimits:
    """MuJoCo's limit constraint (``mj_instantiateLimit``) on what an MJCF file limits: hinge/slide
    ranges (``kind`` HINGE_SLIDE, ``index`` the DOF), ball-joint cones (BALL_CONE, ``index`` the
    ball's first DOF; ``upper`` the cone's angle) and tendon ranges (TENDON, ``index`` the pbsim
    tendon).  Per limit its ``solref`` (time constant and damping ratio, or MuJoCo's direct
    ``-k -b``), ``solimp`` (clamped as MuJoCo does before use), ``margin``, ``invweight`` (MuJoCo's
    ``dof_invweight0`` / ``tendon_invweight0``: scales the regularizer R) and range.
    ``refsafe``: MuJoCo's ``timeconst >= 2 dt`` (off with ``<flag refsafe="disable"/>``)."""

    kind: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    index: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    solref: np.ndarray = field(default_factory=lambda: _z(0, 2))
    solimp: np.ndarray = field(default_factory=lambda: _z(0, 5))
    margin: np.ndarray = field(default_factory=lambda: _z(0))
    invweight: np.ndarray = field(default_factory=lambda: _z(0))
    lower: np.ndarray = field(default_factory=lambda: _z(0))
    upper: np.ndarray = field(default_factory=lambda: _z(0))
    refsafe: bool = True

    @property
    def n(self) -> int:
        return int(len(self.kind))

    @property
    def dof(self) -> np.ndarray:
        """The hinge/slide DOFs held by the law."""
        return np.asarray(self.index)[np.asarray(self.kind) == HINGE_SLIDE]

    def rows_max(self) -> int:
        """Rows a state can have: two per range (both sides at once only inside a margin wider
        than the range), one per cone."""
        return int(sum(1 if k == BALL_CONE else 2 for k in self.kind))

    def shifted(self, nv0: int, nt0: int) -> "SoftLimits":
        """The same limits with DOF indices moved by ``nv0`` and tendon indices by ``nt0`` (a part
        of a combined model)."""
        idx = np.where(np.asarray(self.kind) == TENDON, self.index + nt0, self.index + nv0)
        return SoftLimits(self.kind, idx, self.solref, self.solimp, self.margin, self.invweight, self.lower,
                          self.upper, self.refsafe)

    @staticmethod
    def concatenate(parts) -> "SoftLimits":
        cat = {f: np.concatenate([getattr(p, f) for p in parts])
               for f in ("kind", "index", "solref", "solimp", "margin", "invweight", "lower", "upper")}
        return SoftLimits(**cat, refsafe=all(p.refsafe for p in parts))

    def _names(self, model) -> list[str]:
        dofs = {int(model.iv[i]): model.joint_names[i] for i in range(model.nb)}
        tn = model.tendons.names if model.tendons is not None else []
        return [f"tendon {tn[int(i)]}" if k == TENDON else dofs.get(int(i), str(int(i))) + (" (cone)" if k == BALL_CONE else "")
                for k, i in zip(self.kind, self.index)]

    def describe(self, model) -> str:
        return (f"{self.n} limit(s) as MuJoCo's limit constraint in the explicit methods (euler, explicit_euler, "
                f"rk2-4; the others: pbsim's limit spring-damper on ranges, no cone limits): "
                + ", ".join(self._names(model)))

    def to_dict(self, model) -> dict:
        return {"limits": self._names(model), "solref": self.solref.tolist(), "solimp": self.solimp.tolist(),
                "margin": self.margin.tolist(), "refsafe": bool(self.refsafe)}

    def kernel_fields(self, model, armature: bool = True) -> dict:
        """The KModel fields ``lim_*``: ``lim_kind``, ``lim_idx`` (DOF or tendon), ``lim_qadr`` (a
        joint's q index), ``lim_prm`` (L, 12) = solref (2), solimp (5), margin, invweight, refsafe,
        lower, upper; ``lim_soft`` (nv,) 1 on the hinge/slide DOFs and ``lim_tsoft`` (tendons, at
        least 1) 1 on the tendons this law holds in the explicit methods (no limit spring there);
        ``lim_arm`` (tendons, at least 1) the tendons' armature, which the explicit methods hold as
        rows of the same solve (``armature``: False with mimic joints, whose coupling the rows'
        responses do not see)."""
        n = self.n
        kind = np.asarray(self.kind, np.int64).reshape(n)
        idx = np.asarray(self.index, np.int64).reshape(n)
        qadr = np.zeros(n, np.int64)
        body_of = {int(model.iv[i]): i for i in range(model.nb)}
        nt = model.ntendon
        for r in range(n):
            j = int(idx[r])
            if kind[r] == TENDON:
                if not 0 <= j < nt:
                    raise InputError(f"model {model.name!r}: a soft limit on tendon {j}, which does not exist")
                continue
            want = (REVOLUTE, PRISMATIC) if kind[r] == HINGE_SLIDE else (BALL,)
            if j not in body_of or model.jtype[body_of[j]] not in want:
                raise InputError(f"model {model.name!r}: a soft limit of kind {int(kind[r])} on DOF {j}, "
                                 "which is not the first DOF of such a joint")
            qadr[r] = model.iq[body_of[j]]
        prm = np.zeros((n, 12))
        prm[:, 0:2] = np.asarray(self.solref, float).reshape(n, 2)
        prm[:, 2:7] = np.asarray(self.solimp, float).reshape(n, 5)
        prm[:, 7] = np.asarray(self.margin, float).reshape(n)
        prm[:, 8] = np.asarray(self.invweight, float).reshape(n)
        prm[:, 9] = 1.0 if self.refsafe else 0.0
        prm[:, 10] = np.asarray(self.lower, float).reshape(n)
        prm[:, 11] = np.asarray(self.upper, float).reshape(n)
        if not np.all(np.isfinite(prm)):
            raise InputError(f"model {model.name!r}: a limit's solref/solimp/margin/range is not finite")
        soft = np.zeros(model.nv)
        soft[idx[kind == HINGE_SLIDE]] = 1.0
        tsoft = np.zeros(max(nt, 1))
        tsoft[idx[kind == TENDON]] = 1.0
        arm = np.zeros(max(nt, 1))
        if armature and nt:
            arm[:nt] = model.tendons.armature
        return dict(lim_kind=kind, lim_idx=idx, lim_qadr=qadr, lim_prm=np.ascontiguousarray(prm), lim_soft=soft,
                    lim_tsoft=tsoft, lim_arm=arm)


def clean_solref(solref) -> np.ndarray:
    """MuJoCo's check of a solref: standard (both > 0) or direct (both <= 0), never mixed (a mixed
    one is replaced by the default 0.02, 1, as MuJoCo does with a warning)."""
    r = np.array(solref, float).reshape(2)
    if (r[0] > 0) != (r[1] > 0):
        return np.array([0.02, 1.0])
    return r


def clean_solimp(solimp) -> np.ndarray:
    """MuJoCo's clamps of a solimp (``getsolparam``): d0, dmax, midpoint to [MINIMP, MAXIMP], width
    >= 0, power >= 1."""
    s = np.array(solimp, float).reshape(5)
    for k in (0, 1, 3):
        s[k] = min(MAXIMP, max(MINIMP, s[k]))
    s[2] = max(0.0, s[2])
    s[4] = max(1.0, s[4])
    return s
