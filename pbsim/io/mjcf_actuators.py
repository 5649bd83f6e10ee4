"""MJCF ``<actuator>`` -> :class:`pbsim.control.actuators.Actuators`, read from MuJoCo's compiled
model (so defaults, classes and the ``motor``/``position``/``velocity``/``intvelocity`` shortcuts
resolve exactly as MuJoCo does).  Supported: joint (and jointinparent) transmissions on hinge/slide
joints and tendon transmissions (imported tendons; muscles on either), activation dynamics none/integrator/filter/
filterexact (``actrange``, ``actearly``), a fixed gain and no or affine bias with no positive
length/velocity term -- ``motor``, ``position`` (with ``kv``), ``velocity``, ``intvelocity`` and
the ``general`` servos of Menagerie's arms.
Anything else is left out and named in the returned notes."""

from __future__ import annotations

import numpy as np

from pbsim.control.actuators import Actuators


def actuators_from_mjmodel(mj, model, name_of) -> tuple[Actuators, list[str]]:
    """``(actuators, notes)``: ``name_of(kind, index, default)`` gives MuJoCo object names."""
    import mujoco

    O = mujoco.mjtObj
    items, skipped = [], []
    tendons = getattr(model, "tendons", None)
    ten_of = {} if tendons is None else {int(t): k for k, t in enumerate(getattr(tendons, "mj_index", []))}
    D = mujoco.mjtDyn
    dyn_names = {
        int(D.mjDYN_NONE): "none",
        int(D.mjDYN_INTEGRATOR): "integrator",
        int(D.mjDYN_FILTER): "filter",
        int(D.mjDYN_FILTEREXACT): "filterexact",
        int(D.mjDYN_MUSCLE): "muscle",
    }
    placed = None  # site placements in pbsim's body frames (made on the first site actuator)
    for a in range(mj.nu):
        name = name_of(O.mjOBJ_ACTUATOR, a, f"actuator{a}")
        jid = int(mj.actuator_trnid[a, 0])
        trn = int(mj.actuator_trntype[a])
        tendon = -1
        site = {}
        if trn == int(mujoco.mjtTrn.mjTRN_SITE) and int(mj.actuator_trnid[a, 1]) < 0:  # no refsite
            if int(mj.actuator_biastype[a]) != int(mujoco.mjtBias.mjBIAS_NONE) and np.any(mj.actuator_biasprm[a, 1:3]):
                skipped.append(f"{name} (site transmission with a length/velocity bias)")
                continue
            if placed is None:
                from pbsim.io.mjcf_tendons import placements

                placed = placements(mj, model, name_of)
            d0, local = placed
            body, pos, rot = local(mj.site_bodyid[jid], d0.site_xpos[jid], d0.site_xmat[jid])
            if body < 0:
                skipped.append(f"{name} (site on the world)")
                continue
            site = dict(site=jid, site_body=body, site_pos=pos, site_rot=rot, gear6=tuple(mj.actuator_gear[a]))
            dof = -1
        elif trn == int(mujoco.mjtTrn.mjTRN_TENDON):
            if jid not in ten_of:
                skipped.append(f"{name} (tendon {name_of(O.mjOBJ_TENDON, jid, f'tendon{jid}')!r} not imported)")
                continue
            tendon, dof = ten_of[jid], -1
        elif trn not in (int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_JOINTINPARENT)) or jid < 0:
            if trn == int(mujoco.mjtTrn.mjTRN_SITE):
                skipped.append(f"{name} (site transmission with a refsite)")
                continue
            skipped.append(f"{name} (transmission {mujoco.mjtTrn(trn).name.removeprefix('mjTRN_').lower()})")
            continue
        elif int(mj.jnt_type[jid]) not in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
            skipped.append(f"{name} (on a ball/free joint)")
            continue
        else:
            jname = name_of(O.mjOBJ_JOINT, jid, f"joint{jid}")
            try:
                dof = int(model.iv[model.joint_index(jname)])
            except KeyError:
                skipped.append(f"{name} (joint {jname!r} not in the model)")
                continue
        gear = float(mj.actuator_gear[a, 0])
        gt, bt = int(mj.actuator_gaintype[a]), int(mj.actuator_biastype[a])
        gp, bp = mj.actuator_gainprm[a], mj.actuator_biasprm[a]
        dt_ = int(mj.actuator_dyntype[a])
        if dt_ not in dyn_names:
            skipped.append(f"{name} (activation dynamics {mujoco.mjtDyn(dt_).name.removeprefix('mjDYN_').lower()})")
            continue
        if dt_ != int(D.mjDYN_NONE) and int(mj.actuator_actnum[a]) != 1:
            skipped.append(f"{name} ({int(mj.actuator_actnum[a])} activations)")
            continue
        G_MUS, B_MUS = int(mujoco.mjtGain.mjGAIN_MUSCLE), int(mujoco.mjtBias.mjBIAS_MUSCLE)
        if gt == G_MUS or bt == B_MUS or dt_ == int(D.mjDYN_MUSCLE):
            why = _muscle_refusal(mj, a, bool(site), gt, bt, dt_, G_MUS, B_MUS, int(D.mjDYN_MUSCLE))
            if why:
                skipped.append(f"{name} ({why})")
                continue
        elif gt != int(mujoco.mjtGain.mjGAIN_FIXED):
            skipped.append(f"{name} (gain type {gt})")
            continue
        ctrl = tuple(mj.actuator_ctrlrange[a]) if mj.actuator_ctrllimited[a] else (-np.inf, np.inf)
        force = tuple(mj.actuator_forcerange[a]) if mj.actuator_forcelimited[a] else (-np.inf, np.inf)
        it = dict(
            name=name,
            dof=dof,
            gear=gear,
            ctrlrange=ctrl,
            forcerange=force,
            tendon=tendon,
            dyntype=dyn_names[dt_],
            tau=float(mj.actuator_dynprm[a, 0]),
            actrange=tuple(mj.actuator_actrange[a]) if mj.actuator_actlimited[a] else (-np.inf, np.inf),
            actearly=bool(mj.actuator_actearly[a]),
            **site,
        )
        if gt == G_MUS:  # pbsim.dynamics.muscle: the force law in the kernel, act (or ctrl) as its input
            it.update(
                kind="general",
                gain=1.0,
                muscle=_muscle_params(mj, a),  # on a joint: length gear q (pbsim's q is MuJoCo's qpos)
                musdyn=tuple(float(x) for x in mj.actuator_dynprm[a, :3]),
            )
        elif bt == int(mujoco.mjtBias.mjBIAS_NONE):
            it.update(kind="motor", gain=float(gp[0]))
        elif bt == int(mujoco.mjtBias.mjBIAS_AFFINE) and bp[1] <= 0 and bp[2] <= 0:
            b = (float(bp[0]), float(bp[1]), float(bp[2]))
            if b[1] == 0 and b[2] == 0:  # a force offset only (the fast motor path takes none)
                it.update(kind="motor" if b[0] == 0 else "general", gain=float(gp[0]), bias=b)
            elif b[0] == 0 and b[1] == -gp[0]:
                it.update(kind="position", kp=float(gp[0]), kv=-b[2])
            elif b[0] == 0 and b[1] == 0 and b[2] == -gp[0]:
                it.update(kind="velocity", kv=float(gp[0]))
            else:
                it.update(kind="general", gain=float(gp[0]), bias=b)
        else:
            skipped.append(f"{name} (bias {list(bp[:3])} with a positive length/velocity term)")
            continue
        items.append(it)
    notes = []
    if skipped:
        shown = ", ".join(skipped[:12]) + (f" and {len(skipped) - 12} more" if len(skipped) > 12 else "")
        notes.append(f"{len(skipped)} actuator(s) not imported: {shown}")
    return Actuators.build(items), notes


def _muscle_refusal(mj, a, on_site, gt, bt, dt_, g_mus, b_mus, d_mus) -> str:
    """Why a muscle actuator is not imported ('' when it is): pbsim carries MuJoCo's whole muscle
    (gain, bias and dynamics all of type muscle, or no dynamics) on a tendon or a hinge/slide joint."""
    if not (gt == g_mus and bt == b_mus and dt_ in (d_mus, 0)):
        return f"muscle parts mixed with other types (gain {gt}, bias {bt}, dynamics {dt_})"
    if on_site:
        return "a muscle on a site transmission"
    if not np.array_equal(mj.actuator_gainprm[a, :9], mj.actuator_biasprm[a, :9]):
        return "muscle gain and bias with different parameters"
    return ""


def _muscle_params(mj, a) -> tuple:
    """``Actuators.muscle`` of actuator ``a``: [1, range, F0, lmin, lmax, vmax, fpmax, fvmax,
    lengthrange]; ``F0 = scale / acc0`` where the file's force is negative (MuJoCo's rule)."""
    p = mj.actuator_gainprm[a]
    force = float(p[2]) if p[2] >= 0 else float(p[3]) / max(1e-15, float(mj.actuator_acc0[a]))
    lr = mj.actuator_lengthrange[a]
    return (
        1.0,
        float(p[0]),
        float(p[1]),
        force,
        float(p[4]),
        float(p[5]),
        float(p[6]),
        float(p[7]),
        float(p[8]),
        float(lr[0]),
        float(lr[1]),
    )


def keyframe_activations(mj, model, name_of) -> list[str]:
    """Put each keyframe's ``act`` (MuJoCo's activations, in MuJoCo's order) in pbsim's order
    (``State.act``: the imported actuators with dynamics); notes for the keys whose activations
    belong to actuators not imported."""
    import mujoco

    keys = getattr(model, "keyframes", None) or {}
    if not keys or not mj.na:
        return []
    mj_names = [name_of(mujoco.mjtObj.mjOBJ_ACTUATOR, a, f"actuator{a}") for a in range(mj.nu)]
    src = []  # per pbsim activation: MuJoCo's act index
    acts = model.actuators
    for a, k in enumerate(acts.actadr):
        if k >= 0:
            src.append(int(mj.actuator_actadr[mj_names.index(acts.names[a])]))
    for key in keys.values():
        mj_act = np.asarray(key.act, float)
        key.act = mj_act[src] if mj_act.size == mj.na else np.zeros(len(src))
    if len(src) < mj.na:
        return [f"{len(keys)} keyframe(s): the activations of actuators not imported are dropped"]
    return []
