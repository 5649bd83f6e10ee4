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

from pbsim.dynamics.joints import PRISMATIC, REVOLUTE
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


@dataclass
class SoftLimits:
    """MuJoCo's joint-limit constraint on hinge/slide DOFs (MJCF ``range`` with ``limited``): per
    limited DOF its ``solref`` (time constant and damping ratio, or MuJoCo's direct ``-k -b``),
    ``solimp`` (clamped as MuJoCo does before use), ``margin`` and ``invweight`` (MuJoCo's
    ``dof_invweight0``, the diagonal of M^-1 at qpos0 that scales the regularizer R).  ``refsafe``:
    MuJoCo's ``timeconst >= 2 dt`` (off with ``<flag refsafe="disable"/>``)."""

    dof: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    solref: np.ndarray = field(default_factory=lambda: _z(0, 2))
    solimp: np.ndarray = field(default_factory=lambda: _z(0, 5))
    margin: np.ndarray = field(default_factory=lambda: _z(0))
    invweight: np.ndarray = field(default_factory=lambda: _z(0))
    refsafe: bool = True

    @property
    def n(self) -> int:
        return int(len(self.dof))

    def shifted(self, nv0: int) -> "SoftLimits":
        """The same limits with DOF indices moved by ``nv0`` (a part of a combined model)."""
        return SoftLimits(self.dof + nv0, self.solref, self.solimp, self.margin, self.invweight, self.refsafe)

    def describe(self, model) -> str:
        names = {int(model.iv[i]): model.joint_names[i] for i in range(model.nb)}
        joints = ", ".join(names.get(int(j), str(int(j))) for j in self.dof)
        return (f"{self.n} joint range(s) as MuJoCo's limit constraint in the explicit methods (euler, "
                f"explicit_euler, rk2-4; the others: pbsim's limit spring-damper): {joints}")

    def to_dict(self, model) -> dict:
        names = {int(model.iv[i]): model.joint_names[i] for i in range(model.nb)}
        return {"joints": [names.get(int(j), str(int(j))) for j in self.dof], "solref": self.solref.tolist(),
                "solimp": self.solimp.tolist(), "margin": self.margin.tolist(), "refsafe": bool(self.refsafe)}

    def kernel_fields(self, model) -> dict:
        """The KModel fields ``lim_*``: ``lim_dof`` (L,) DOF, ``lim_qadr`` (L,) its q index,
        ``lim_prm`` (L, 10) = solref (2), solimp (5), margin, invweight, refsafe, and ``lim_soft``
        (nv,) 1 where a DOF is held by this law in the explicit methods."""
        n = self.n
        dof = np.asarray(self.dof, np.int64).reshape(n)
        qadr = np.zeros(n, np.int64)
        body_of = {int(model.iv[i]): i for i in range(model.nb) if model.nvj[i] == 1}
        for r, j in enumerate(dof):
            if int(j) not in body_of or model.jtype[body_of[int(j)]] not in (REVOLUTE, PRISMATIC):
                raise InputError(f"model {model.name!r}: a soft limit on DOF {int(j)}, which is not a hinge or slide")
            if not (np.isfinite(model.lower[j]) and np.isfinite(model.upper[j])):
                raise InputError(f"model {model.name!r}: a soft limit on DOF {int(j)} without a finite range")
            qadr[r] = model.iq[body_of[int(j)]]
        prm = np.zeros((n, 10))
        prm[:, 0:2] = np.asarray(self.solref, float).reshape(n, 2)
        prm[:, 2:7] = np.asarray(self.solimp, float).reshape(n, 5)
        prm[:, 7] = np.asarray(self.margin, float).reshape(n)
        prm[:, 8] = np.asarray(self.invweight, float).reshape(n)
        prm[:, 9] = 1.0 if self.refsafe else 0.0
        if not np.all(np.isfinite(prm)):
            raise InputError(f"model {model.name!r}: a joint limit's solref/solimp/margin is not finite")
        soft = np.zeros(model.nv)
        soft[dof] = 1.0
        return dict(lim_dof=dof, lim_qadr=qadr, lim_prm=np.ascontiguousarray(prm), lim_soft=soft)


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
