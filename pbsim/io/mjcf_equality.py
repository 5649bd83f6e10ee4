"""MJCF ``<equality>`` -> :class:`pbsim.model.equality.Equality`, read from MuJoCo's compiled model
(``eq_type``, ``eq_obj1id``/``eq_obj2id``, ``eq_objtype`` (body or site), ``eq_data``,
``eq_active0``, ``eq_solref``, ``eq_solimp``), so the anchors the compiler derives (connect's
body2 point, weld's relpose from ``qpos0``) are MuJoCo's own.

- connect: ``eq_data[0:3]`` on body1, ``[3:6]`` on body2 (or the two sites);
- weld: ``eq_data[3:6]`` on body1, ``[0:3]`` (``anchor``) on body2, target rotation ``q_body1
  relpose`` (``eq_data[6:10]``), ``torquescale`` ``eq_data[10]`` (or the sites' frames);
- joint: ``polycoef`` ``eq_data[0:5]``, references ``qpos0``;
- tendon: fixed tendons (every wrap a joint: ``L = sum wrap_prm q``), references
  ``tendon_length0``; a spatial tendon is not imported (a note names it).

MuJoCo bodies map to pbsim bodies through ``Model.frames`` (a body merged into its parent by a
fixed joint keeps its frame).  Whatever cannot be imported is named in the returned notes.
"""

from __future__ import annotations

import numpy as np


def _rot_to_quat(R) -> np.ndarray:
    R = np.asarray(R, float)
    t = np.trace(R)
    if t > 0:
        s = 2.0 * np.sqrt(1.0 + t)
        q = [0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s]
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        q = [0.0] * 4
        q[0] = (R[k, j] - R[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (R[j, i] + R[i, j]) / s
        q[1 + k] = (R[k, i] + R[i, k]) / s
    q = np.array(q)
    return q / np.linalg.norm(q)


def _quat_to_rot(q) -> np.ndarray:
    w, x, y, z = np.asarray(q, float) / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def _qmul(a, b) -> np.ndarray:
    w0, x0, y0, z0 = a
    w1, x1, y1, z1 = b
    return np.array(
        [
            w0 * w1 - x0 * x1 - y0 * y1 - z0 * z1,
            w0 * x1 + x0 * w1 + y0 * z1 - z0 * y1,
            w0 * y1 - x0 * z1 + y0 * w1 + z0 * x1,
            w0 * z1 + x0 * y1 - y0 * x1 + z0 * w1,
        ]
    )


def equality_from_mjmodel(mj, model, joint_names, name_of) -> tuple[list, list[str]]:
    """``(equalities, notes)``; ``joint_names``: pbsim's name of each MuJoCo joint, ``name_of(kind,
    index, default)`` MuJoCo object names."""
    import mujoco

    from pbsim.model.equality import Equality

    O = mujoco.mjtObj
    frames = {f.name: f for f in model.frames}
    out, skipped = [], []

    def place(objtype, oid):
        """(pbsim body, R, p, name) of a MuJoCo body or site frame."""
        if objtype == int(O.mjOBJ_SITE):
            bid = int(mj.site_bodyid[oid])
            Rs, ps = _quat_to_rot(mj.site_quat[oid]), np.array(mj.site_pos[oid], float)
            oname = name_of(O.mjOBJ_SITE, oid, f"site{oid}")
        else:
            bid, Rs, ps, oname = oid, np.eye(3), np.zeros(3), None
        bname = "world" if bid == 0 else name_of(O.mjOBJ_BODY, bid, f"body{bid}")
        f = frames.get(bname)
        if f is None:
            return None
        return int(f.body), f.R @ Rs, f.R @ ps + f.p, oname or ("" if bid == 0 else bname)

    for i in range(mj.neq):
        t = int(mj.eq_type[i])
        name = name_of(O.mjOBJ_EQUALITY, i, f"equality{i}")
        kind = mujoco.mjtEq(t).name.removeprefix("mjEQ_").lower()
        data = np.array(mj.eq_data[i], float)
        o1, o2 = int(mj.eq_obj1id[i]), int(mj.eq_obj2id[i])
        common = dict(
            name=name,
            type=kind,
            active=bool(mj.eq_active0[i]),
            solref=np.array(mj.eq_solref[i], float),
            solimp=np.array(mj.eq_solimp[i], float),
        )
        if t in (int(mujoco.mjtEq.mjEQ_CONNECT), int(mujoco.mjtEq.mjEQ_WELD)):
            ot = int(mj.eq_objtype[i])
            a, b = place(ot, o1), place(ot, o2)
            if a is None or b is None:
                skipped.append(f"{name} ({kind}: a body is not in the model)")
                continue
            site = ot == int(O.mjOBJ_SITE)
            e = Equality(body1=a[0], body2=b[0], obj1=a[3], obj2=b[3], **common)
            if t == int(mujoco.mjtEq.mjEQ_CONNECT):
                p1 = np.zeros(3) if site else data[0:3]
                p2 = np.zeros(3) if site else data[3:6]
            else:
                p1 = np.zeros(3) if site else data[3:6]
                p2 = np.zeros(3) if site else data[0:3]
                rel = np.array([1.0, 0, 0, 0]) if site else data[6:10] / np.linalg.norm(data[6:10])
                e.quat1 = _qmul(_rot_to_quat(a[1]), rel)
                e.quat2 = _rot_to_quat(b[1])
                e.torquescale = float(data[10])
            e.point1, e.point2 = a[1] @ p1 + a[2], b[1] @ p2 + b[2]
            if e.body1 == e.body2:
                skipped.append(f"{name} ({kind}: both sides on pbsim body {model.body_names[e.body1]!r})")
                continue
            out.append(e)
        elif t == int(mujoco.mjtEq.mjEQ_JOINT):
            js = [joint_names[o] for o in (o1, o2) if o >= 0]
            if any(j not in model.joint_names for j in js):
                skipped.append(f"{name} (joint: {js} not all in the model)")
                continue
            ref = [float(mj.qpos0[mj.jnt_qposadr[o]]) if o >= 0 else 0.0 for o in (o1, o2)]
            out.append(
                Equality(
                    obj1=js[0],
                    obj2=js[1] if len(js) > 1 else "",
                    joint1=js[0],
                    joint2=js[1] if len(js) > 1 else "",
                    ref=np.array(ref),
                    polycoef=data[0:5].copy(),
                    **common,
                )
            )
        elif t == int(mujoco.mjtEq.mjEQ_TENDON):
            coefs, tnames, ok = [], [], True
            for o in (o1, o2):
                if o < 0:
                    coefs.append({})
                    continue
                tnames.append(name_of(O.mjOBJ_TENDON, o, f"tendon{o}"))
                adr, num = int(mj.tendon_adr[o]), int(mj.tendon_num[o])
                c = {}
                for k in range(adr, adr + num):
                    if int(mj.wrap_type[k]) != int(mujoco.mjtWrap.mjWRAP_JOINT):
                        ok = False
                        break
                    jn = joint_names[int(mj.wrap_objid[k])]
                    if jn not in model.joint_names:
                        ok = False
                        break
                    c[jn] = c.get(jn, 0.0) + float(mj.wrap_prm[k])
                coefs.append(c)
            if not ok:
                skipped.append(f"{name} (tendon: {tnames} not all fixed tendons on the model's joints)")
                continue
            ref = [float(mj.tendon_length0[o]) if o >= 0 else 0.0 for o in (o1, o2)]
            out.append(
                Equality(
                    obj1=tnames[0],
                    obj2=tnames[1] if len(tnames) > 1 else "",
                    tendon1=coefs[0],
                    tendon2=coefs[1],
                    ref=np.array(ref),
                    polycoef=data[0:5].copy(),
                    **common,
                )
            )
        else:
            skipped.append(f"{name} ({kind})")
    notes = []
    if skipped:
        from pbsim.model.notes import listed

        notes.append(f"{len(skipped)} equality constraint(s) not imported: {listed(skipped)}")
    inactive = [e.name for e in out if not e.active]
    if inactive:
        from pbsim.model.notes import listed

        notes.append(
            f"equality constraint(s) inactive in the file (active='false', no kernel rows): {listed(inactive)}"
        )
    return out, notes
