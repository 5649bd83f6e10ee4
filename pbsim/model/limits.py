"""Joint position limits as a one-sided stiff spring-damper: the default gains.

A revolute/prismatic joint past (or about to pass) a finite limit gets the torque
``-kp (q - limit) - kd v`` (one-sided), integrated implicitly (the stable-PD form of paper 001:
``dt kd + dt^2 kp`` joins the diagonal), so any stiffness is stable at any dt.  The default
gains make the limit a critically damped oscillator with time constant ``LIMIT_TIMECONST``
(0.02 s, MuJoCo's default ``solref``) on the joint's inertia: ``kp = I w^2``, ``kd = 2 I w``,
``w = 2 pi / T``, with ``I`` the inertia of the joint's subtree about its axis at the neutral
pose (subtree mass for a prismatic joint) plus the joint's armature.  A 6 rad/s swing into a limit then overshoots by
about ``v / w`` ~ 0.02 rad at most; larger dt damps it further (implicit).
"""

from __future__ import annotations

import numpy as np

from pbsim.dynamics.joints import PRISMATIC, REVOLUTE

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
