"""MJCF ``<tendon>`` -> :class:`pbsim.model.tendons.Tendons`, read from MuJoCo's compiled model.

Fixed tendons (joint coefficients) and spatial tendons (sites, pulleys, spheres and cylinders
with or without a side site) with stiffness, ``springlength`` (with its dead band), damping,
``frictionloss`` and ``range``.  A site or geom on a MuJoCo body that pbsim merged into its
parent (no joint) is placed in that parent's frame (from both models' kinematics at qpos0).
Left out, and named in the notes: a tendon on a joint pbsim does not have, a side site inside
its geom (MuJoCo's inside wrap), a cylinder with a side site (MuJoCo 4 wraps fewer of those than
the 2-D rule that reproduces its spheres and side-less cylinders exactly), polynomial
stiffness/damping, plasticity.  Tendon armature is read (the explicit methods hold it,
:mod:`pbsim.dynamics.limits`; the others leave it out, noted).
The range is held by MuJoCo's limit constraint in the explicit methods (its parameters read by
``io/mjcf.py``, :class:`pbsim.model.limits.SoftLimits`) and by pbsim's limit spring-damper in the
others (:mod:`pbsim.model.tendons`), critically damped with MuJoCo's default 0.02 s time constant
on the tendon's effective mass ``1 / (J M^-1 J^T)`` at qpos0.
"""

from __future__ import annotations

import numpy as np

from pbsim.model.limits import LIMIT_TIMECONST
from pbsim.model.tendons import CYLINDER, FIXED, JOINT, NO_SIDE, PULLEY, SITE, SPATIAL, SPHERE, build_tendons


def _mat(x) -> np.ndarray:
    return np.asarray(x, float).reshape(3, 3)


def placements(mj, model, name_of):
    """``(d, local)``: MuJoCo's kinematics at qpos0 and ``local(mj_body, xpos, xmat) -> (pbsim body,
    pos, rot)``, a world pose at qpos0 in the frame of the pbsim body that MuJoCo body moves with
    (-1: the world; a body merged into its parent: the parent's frame)."""
    import mujoco

    O = mujoco.mjtObj
    d = mujoco.MjData(mj)
    d.qpos[:] = mj.qpos0
    mujoco.mj_kinematics(mj, d)
    from pbsim.dynamics.api import forward_kinematics

    X = forward_kinematics(model, model.default_configuration())
    names = list(model.body_names)

    def frame_of(mj_body):
        """(pbsim body, R, p) of the pbsim body a MuJoCo body moves with (-1: world)."""
        i = int(mj_body)
        while i > 0:
            n = name_of(O.mjOBJ_BODY, i, f"body{i}")
            if n in names:
                k = names.index(n)
                return k, X[k, :3, :3], X[k, :3, 3]
            i = int(mj.body_parentid[i])
        return -1, np.eye(3), np.zeros(3)

    def local(body_id, xpos, xmat):
        k, R, p = frame_of(body_id)
        return k, R.T @ (np.asarray(xpos, float) - p), R.T @ _mat(xmat)

    return d, local


def limits_enabled(mj) -> bool:
    """Whether MuJoCo would hold the file's joint and tendon ranges (no ``<flag limit="disable"/>``
    or ``constraint="disable"``); here, below ``io/mjcf.py``, which asks it too."""
    import mujoco

    D = mujoco.mjtDisableBit
    return not (mj.opt.disableflags & (D.mjDSBL_LIMIT | D.mjDSBL_CONSTRAINT))


def tendons_from_mjmodel(mj, model, joint_names, name_of):
    """``(Tendons or None, notes)``; ``joint_names``: pbsim's name of each MuJoCo joint,
    ``name_of(kind, index, default)`` MuJoCo object names."""
    import mujoco

    if not mj.ntendon:
        return None, []
    O, W = mujoco.mjtObj, mujoco.mjtWrap
    d, local = placements(mj, model, name_of)
    items, notes, skipped, armed = [], [], [], []
    limits_on = limits_enabled(mj)
    for t in range(mj.ntendon):
        tname = name_of(O.mjOBJ_TENDON, t, f"tendon{t}")
        a0, n = int(mj.tendon_adr[t]), int(mj.tendon_num[t])
        path, why = [], None
        spatial = any(int(mj.wrap_type[a0 + k]) != int(W.mjWRAP_JOINT) for k in range(n))
        for k in range(a0, a0 + n):
            ty, obj, prm = int(mj.wrap_type[k]), int(mj.wrap_objid[k]), float(mj.wrap_prm[k])
            if ty == int(W.mjWRAP_JOINT):
                jn = joint_names[obj]
                if jn not in model.joint_names:
                    why = f"joint {jn!r} not in the model"
                    break
                ji = model.joint_index(jn)
                path.append(dict(type=JOINT, dof=int(model.iv[ji]), qadr=int(model.iq[ji]), prm=prm))
            elif ty == int(W.mjWRAP_PULLEY):
                path.append(dict(type=PULLEY, prm=prm))
            elif ty == int(W.mjWRAP_SITE):
                body, pos, _ = local(mj.site_bodyid[obj], d.site_xpos[obj], d.site_xmat[obj])
                path.append(dict(type=SITE, body=body, pos=pos))
            elif ty in (int(W.mjWRAP_SPHERE), int(W.mjWRAP_CYLINDER)):
                body, pos, rot = local(mj.geom_bodyid[obj], d.geom_xpos[obj], d.geom_xmat[obj])
                r = float(mj.geom_size[obj, 0])
                el = dict(
                    type=SPHERE if ty == int(W.mjWRAP_SPHERE) else CYLINDER,
                    body=body,
                    pos=pos,
                    rot=rot,
                    prm=r,
                    sbody=NO_SIDE,
                )
                side = int(round(prm))
                if side >= 0:
                    sb, sp, _ = local(mj.site_bodyid[side], d.site_xpos[side], d.site_xmat[side])
                    rel = _mat(d.geom_xmat[obj]).T @ (d.site_xpos[side] - d.geom_xpos[obj])
                    if np.linalg.norm(rel) < r:
                        why = "its side site is inside the wrapping geom (MuJoCo's inside wrap)"
                        break
                    if ty == int(W.mjWRAP_CYLINDER):  # measured: MuJoCo 4 decides these otherwise
                        why = "a cylinder with a side site (MuJoCo 4's rule for it is not reproduced)"
                        break
                    el.update(sbody=sb, side=sp)
                path.append(el)
            else:
                why = f"wrap type {ty}"
                break
        extra = []
        if float(mj.tendon_armature[t]) != 0.0:
            armed.append(tname)
        for f in ("tendon_stiffnesspoly", "tendon_dampingpoly"):
            if hasattr(mj, f) and np.any(np.asarray(getattr(mj, f)[t]) != 0):
                extra.append(f.removeprefix("tendon_"))
        if hasattr(mj, "tendon_springyield") and np.any(np.asarray(mj.tendon_springyield[t]) > 0):
            extra.append("springyield")
        if extra:
            notes.append(f"tendon {tname!r}: {', '.join(extra)} not simulated")
        if why is not None:
            skipped.append(f"{tname} ({why})")
            continue
        lim = bool(mj.tendon_limited[t]) and limits_on
        items.append(
            dict(
                name=tname,
                kind=SPATIAL if spatial else FIXED,
                path=path,
                stiffness=float(mj.tendon_stiffness[t]),
                damping=float(mj.tendon_damping[t]),
                springlength=tuple(float(x) for x in mj.tendon_lengthspring[t]),
                range=tuple(float(x) for x in mj.tendon_range[t]) if lim else (-np.inf, np.inf),
                frictionloss=float(mj.tendon_frictionloss[t]),
                armature=float(mj.tendon_armature[t]),
                mj_index=t,
            )
        )
    if skipped:
        notes.append(f"{len(skipped)} tendon(s) not imported: {', '.join(skipped)}")
    if armed:
        notes.append(
            "tendon armature is held by the explicit methods only (euler, explicit_euler, rk2-4; the other "
            f"methods leave it out): {', '.join(armed)}"
        )
    if not items:
        return None, notes
    tendons = build_tendons(items)
    tendons.mj_index = np.array([it["mj_index"] for it in items], np.int64)  # MuJoCo's tendon id of each
    _limit_gains(model, tendons)
    return tendons, notes


def _limit_gains(model, tendons) -> None:
    """The limit spring-damper of every limited tendon: critically damped, time constant
    LIMIT_TIMECONST, on the effective mass ``1 / (J M^-1 J^T)`` at qpos0."""
    limited = np.isfinite(tendons.range).any(axis=1)
    if not limited.any():
        return
    from pbsim.dynamics.api import crba
    from pbsim.dynamics.tendon import tendon_state

    model.tendons = tendons  # the moment arms need the model's tendon arrays
    model._k = None
    q = model.default_configuration()
    M = crba(model, q)
    J = tendon_state(model, q)[2]
    w = 2.0 * np.pi / LIMIT_TIMECONST
    for t in np.flatnonzero(limited):
        inv = float(J[t] @ np.linalg.solve(M, J[t]))
        meff = 1.0 / max(inv, 1e-12)
        tendons.limit_kp[t] = meff * w * w  # kp = m w^2, kd = 2 m w
        tendons.limit_kd[t] = 2.0 * meff * w
