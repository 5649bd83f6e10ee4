"""Model -> MJCF (lxml), compiled by MuJoCo as written.

One ``<body>`` per body (pos/quat = joint frame in the parent body at q = 0, which is the body
frame), an explicit ``<inertial>`` (``fullinertia`` at the centre of mass) and
``inertiafromgeom="false"`` so shapes never add mass; joints sit at the body origin.  Revolute ->
``hinge``, prismatic -> ``slide``, ball -> ``ball``, free -> ``<freejoint/>`` (top-level bodies
only, as MuJoCo requires).  A free body's pos/quat are its placement composed with the free
joint's reference configuration, which is what MuJoCo's free-joint ``qpos`` is (world pose);
``Model.q_default`` for the other joints goes to a keyframe ``default``.  Frames merged
through fixed joints become ``<site>`` elements; visual shapes get ``contype=conaffinity=0``
and ``group=1``, collision shapes ``group=0`` with their contype/conaffinity, margin and
friction; the contact pairs an MJCF source decided are reproduced exactly
(:mod:`pbsim.io.export_mjcf_contact`: ``<pair>``, ``<exclude>``, ``<flag contact>``).  Gravity
goes to ``<option>``; damping, armature, stiffness/springref, frictionloss, joint ranges and
effort limits (``actuatorfrcrange``) to the joints.  A massless body that has rotational inertia gets mass 1e-9 kg (MuJoCo refuses mass 0).
"""

from __future__ import annotations

import os

import numpy as np
from lxml import etree

from pbsim.dynamics.joints import BALL, FREE, PRISMATIC, REVOLUTE
from pbsim.io.export_mjcf_contact import write_contact
from pbsim.io.export_mjcf_equality import write_equality
from pbsim.io.export_mjcf_tendon import write_tendons
from pbsim.io.export_urdf import Names, fmt, frames_by_body, mesh_ref, quat_to_rot, rot_to_quat

VISUAL_GROUP, COLLISION_GROUP = 1, 0


def is_ascii_stl(path) -> bool:
    """True for an ASCII STL file (MuJoCo reads binary STL only)."""
    if not str(path).lower().endswith(".stl") or not os.path.isfile(path):
        return False
    with open(path, "rb") as f:
        head = f.read(84)
    if not head.lstrip().lower().startswith(b"solid"):
        return False
    if len(head) == 84:  # a binary file may start with 'solid' too: check its declared size
        n = int.from_bytes(head[80:84], "little")
        if os.path.getsize(path) == 84 + 50 * n:
            return False
    return True


def _pose(el, R, p):
    if np.any(p):
        el.set("pos", fmt(*p))
    if not np.array_equal(np.asarray(R, float), np.eye(3)):
        el.set("quat", fmt(*rot_to_quat(R)))


def mjcf_tree(model, path="robot.xml", mesh_paths=None, report=None):
    """The MJCF document (lxml element) for ``model``; see :func:`write_mjcf`."""
    report = [] if report is None else report
    out_dir = os.path.dirname(os.path.abspath(path))
    root = etree.Element("mujoco", model=model.name or "robot")
    etree.SubElement(root, "compiler", angle="radian", inertiafromgeom="false", autolimits="true")
    option = etree.SubElement(root, "option", gravity=fmt(*model.gravity))
    _write_fluid(model, option, report)
    asset = etree.SubElement(root, "asset")
    world = etree.SubElement(root, "worldbody")
    by_body = frames_by_body(model)
    bodies, joints, geoms, sites, meshes = Names(), Names(), Names(), Names(), Names()
    mesh_asset: dict[tuple, str] = {}
    body_el: dict[int, etree._Element] = {-1: world}
    q_def = model.q_default

    # massless bodies with one child and no shapes (e.g. the cross of a universal joint) become
    # extra joints of their child's <body>: MuJoCo refuses massless moving bodies
    children: dict[int, list[int]] = {}
    for i in range(model.nb):
        children.setdefault(int(model.parent[i]), []).append(i)
    shaped = {int(g.body) for g in model.geoms}

    def mergeable(i):
        kids = children.get(i, [])
        return (
            model.mass[i] == 0
            and not np.any(model.inertia_com[i])
            and model.jtype[i] != FREE
            and len(kids) == 1
            and model.jtype[kids[0]] != FREE
            and i not in shaped
        )

    groups: dict[int, list[int]] = {}
    member_of: dict[int, int] = {}
    for i in range(model.nb):
        if i in member_of:
            continue
        g = [i]
        while mergeable(g[-1]):
            g.append(children[g[-1]][0])
        for b in g:
            member_of[b] = i
        groups[i] = g
    dropped_frames = []
    velocity_dropped = []
    tiny = []
    merged = []
    for head, grp in groups.items():
        tail = grp[-1]
        par = int(model.parent[head])
        # placement of the tail in the head's parent, and of every later member in the tail
        R, p = np.eye(3), np.zeros(3)
        suffix = [None] * len(grp)  # pose of the tail in member k's frame
        for n in range(len(grp) - 1, -1, -1):
            suffix[n] = (R.copy(), p.copy())
            b = grp[n]
            R, p = model.tree_R[b] @ R, model.tree_p[b] + model.tree_R[b] @ p
        el = etree.SubElement(body_el[par], "body", name=bodies.take(model.body_names[tail]))
        for b in grp:
            body_el[b] = el
        if len(grp) > 1:
            merged += [model.body_names[b] for b in grp[:-1]]
            dropped_frames += [f.name for b in grp[:-1] for f, own in by_body.get(b, []) if not own]
        t_tail = int(model.jtype[tail])
        if t_tail == FREE:
            if par >= 0:
                raise ValueError(
                    f"MJCF: free joint {model.joint_names[tail]!r} of body {model.body_names[tail]!r} "
                    "is not at the top level (MuJoCo allows free joints only on children of the world)"
                )
            if q_def is not None:  # MuJoCo's free qpos0 is the body's pos/quat: fold the reference pose in
                k = int(model.iq[tail])
                p = p + R @ q_def[k : k + 3]
                R = R @ quat_to_rot(q_def[k + 3 : k + 7])
        _pose(el, R, p)
        if model.mass[tail] > 0 or np.any(model.inertia_com[tail]):
            I = model.inertia_com[tail]
            if model.mass[tail] == 0:
                report.append(
                    f"MJCF: body {model.body_names[tail]!r} has rotational inertia but no mass: given mass 1e-9 kg "
                    "(MuJoCo refuses massless moving bodies)"
                )
            etree.SubElement(
                el,
                "inertial",
                pos=fmt(*model.com[tail]),
                mass=fmt(model.mass[tail] if model.mass[tail] > 0 else 1e-9),
                fullinertia=fmt(I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]),
            )
        else:
            tiny.append(model.body_names[tail])
            etree.SubElement(el, "inertial", pos="0 0 0", mass="1e-9", diaginertia="1e-12 1e-12 1e-12")
        gm = model.gravcomp[tail]
        if gm[0] != 0.0 and model.mass[tail] > 0:  # MJCF's share acts at the body's com
            el.set("gravcomp", fmt(gm[0] / model.mass[tail]))
            if not np.allclose(gm[1:] / gm[0], model.com[tail], rtol=0.0, atol=1e-9):
                report.append(
                    f"MJCF: body {model.body_names[tail]!r} fuses bodies with different gravcomp shares; written as "
                    f"one share {gm[0] / model.mass[tail]:.6g} at its com (the compensating torque differs)"
                )
        for n, i in enumerate(grp):
            t = int(model.jtype[i])
            Rs, ps = suffix[n]  # tail in member i's frame -> member i's origin and axis in the tail frame
            anchor = -Rs.T @ ps
            k = int(model.iv[i])
            nv = int(model.nvj[i])
            jname = joints.take(model.joint_names[i])
            if t == FREE:  # <freejoint/> takes no damping/armature: <joint type="free"> then
                plain = not (np.any(model.damping[k : k + nv]) or np.any(model.armature[k : k + nv]))
                j = (
                    etree.SubElement(el, "freejoint", name=jname)
                    if plain
                    else etree.SubElement(el, "joint", name=jname, type="free")
                )
            else:
                j = etree.SubElement(
                    el, "joint", name=jname, type={REVOLUTE: "hinge", PRISMATIC: "slide", BALL: "ball"}[t]
                )
                if np.any(anchor):
                    j.set("pos", fmt(*anchor))
                if t != BALL:
                    j.set("axis", fmt(*(Rs.T @ model.axis[i])))
                    lo, hi = model.lower[k], model.upper[k]
                    if np.isfinite(lo) or np.isfinite(hi):
                        j.set("range", fmt(max(lo, -1e16), min(hi, 1e16)))
                        j.set("limited", "true")
            for attr, arr in (
                ("damping", model.damping),
                ("armature", model.armature),
                ("stiffness", model.stiffness),
                ("frictionloss", model.frictionloss),
            ):
                vals = arr[k : k + nv]
                if np.any(vals):
                    if np.ptp(vals) > 0:
                        report.append(
                            f"MJCF: joint {model.joint_names[i]!r} has per-DOF {attr} {vals.tolist()}; "
                            f"MJCF holds one value per joint, wrote {vals.max()}"
                        )
                    j.set(attr, fmt(vals.max()))
            if t in (REVOLUTE, PRISMATIC) and model.stiffness[k] and model.springref[model.iq[i]]:
                j.set("springref", fmt(model.springref[model.iq[i]]))
            if t == FREE and np.any(model.armature[k : k + 3]):
                report.append(
                    f"MJCF: armature on the linear DOFs of free joint {model.joint_names[i]!r}: MuJoCo "
                    "applies it to the world-frame velocity, pbsim to the body-frame one (the "
                    "accelerations differ by armature * omega x v)"
                )
            eff = model.effort_limit[k : k + nv]
            if np.all(np.isfinite(eff)) and t != FREE:
                j.set("actuatorfrcrange", fmt(-eff.max(), eff.max()))
                j.set("actuatorfrclimited", "true")
            if np.any(np.isfinite(model.velocity_limit[k : k + nv])):
                velocity_dropped.append(model.joint_names[i])
    if model.mimic:
        report.append(
            f"MJCF: mimic coupling of {len(model.mimic)} joint(s) dropped (written as independent joints): "
            f"{[a for a, _, _, _ in model.mimic][:6]}"
        )
    if velocity_dropped:
        report.append(
            f"MJCF: velocity limits of {len(velocity_dropped)} joint(s) dropped (MJCF has none): "
            f"{velocity_dropped[:6]}{' ...' if len(velocity_dropped) > 6 else ''}"
        )
    if tiny:
        report.append(
            f"MJCF: massless moving bod{'ies' if len(tiny) > 1 else 'y'} {tiny[:6]} given mass 1e-9 kg and inertia 1e-12 kg m^2 "
            "(MuJoCo refuses massless moving bodies)"
        )
    if merged:
        report.append(
            f"MJCF: {len(merged)} massless bod{'ies' if len(merged) > 1 else 'y'} {merged[:6]}"
            f"{' ...' if len(merged) > 6 else ''} merged into their child <body> as extra joints "
            "(MuJoCo refuses massless moving bodies; dynamics unchanged)"
        )
    if dropped_frames:
        report.append(f"MJCF: frames {dropped_frames[:6]} of merged massless bodies dropped")

    for b, lst in by_body.items():
        for n, (f, own) in enumerate(lst):
            if own or (b == -1 and n == 0) or (b >= 0 and member_of[b] != b and groups.get(member_of[b], [b])[-1] != b):
                continue
            s = etree.SubElement(body_el[b], "site", name=sites.take(f.name))
            _pose(s, f.R, f.p)

    geom_el = {}
    for idx, g in enumerate(model.geoms):
        sz = np.asarray(g.size, float)
        if g.shape in ("box", "sphere", "capsule", "cylinder", "ellipsoid") and not np.all(sz > 0):
            report.append(f"MJCF: {g.shape} {g.name!r} has size {sz.tolist()}; MuJoCo needs positive sizes, skipped")
            continue
        el = geom_el[idx] = etree.SubElement(body_el[int(g.body)], "geom", name=geoms.take(g.name))
        _pose(el, g.R, g.p)
        if g.shape in ("box", "sphere"):
            el.set("type", g.shape)
            el.set("size", fmt(*sz))
        elif g.shape in ("capsule", "cylinder"):
            el.set("type", g.shape)
            el.set("size", fmt(sz[0], sz[1]))
        elif g.shape == "ellipsoid":
            el.set("type", "ellipsoid")
            el.set("size", fmt(*sz[:3]))
        elif g.shape == "hfield":
            hname, data = g.hfield
            data = np.asarray(data, float)
            hf = etree.SubElement(asset, "hfield", name=hname, nrow=str(data.shape[0]), ncol=str(data.shape[1]))
            hf.set("size", fmt(*sz[:4]))
            if np.ptp(data) > 0:  # MuJoCo normalises file elevations to [0, 1]: data outside it is rescaled
                hf.set("elevation", " ".join(fmt(*data[::-1].reshape(-1)).split()))  # file rows run from +y
                if data.min() != 0 or data.max() != 1:
                    report.append(
                        f"MJCF: hfield {hname!r}: MuJoCo rescales file elevations to [0, 1]; its "
                        f"data spans [{data.min():g}, {data.max():g}]"
                    )
            el.set("type", "hfield")
            el.set("hfield", hname)
        elif g.shape == "plane":
            el.set("type", "plane")
            el.set("size", fmt(sz[0] if sz.size else 0, sz[1] if sz.size > 1 else 0, 0.1))
        elif g.shape == "mesh":
            ref = mesh_ref(g, idx, mesh_paths, out_dir)
            key = (ref, tuple(sz))
            if key not in mesh_asset:
                mesh_asset[key] = meshes.take(os.path.splitext(os.path.basename(ref))[0])
                m = etree.SubElement(asset, "mesh", name=mesh_asset[key], file=ref)
                if not np.array_equal(sz, np.ones(3)):
                    m.set("scale", fmt(*sz))
                if is_ascii_stl(os.path.join(out_dir, ref)):
                    report.append(
                        f"MJCF: mesh {ref!r} is an ASCII STL, which MuJoCo cannot read "
                        "(pbsim convert writes binary STL)"
                    )
                if os.path.splitext(ref)[1].lower() not in (".stl", ".obj", ".msh"):
                    report.append(
                        f"MJCF: mesh {ref!r} is not STL/OBJ; MuJoCo cannot read it (convert with mesh_format='stl')"
                    )
            el.set("type", "mesh")
            el.set("mesh", mesh_asset[key])
        else:
            raise ValueError(f"geometry {g.name!r}: unknown shape {g.shape!r}")
        if g.role == "visual":
            el.set("contype", "0")
            el.set("conaffinity", "0")
            el.set("group", str(VISUAL_GROUP))
        else:
            el.set("group", str(COLLISION_GROUP))
        el.set("rgba", fmt(*g.rgba))
    write_contact(
        model,
        root,
        option,
        geom_el,
        lambda b: -1 if b < 0 else member_of[b],
        lambda w: -1 if model.parent[w] < 0 else member_of[int(model.parent[w])],
        lambda w: "world" if w < 0 else body_el[w].get("name"),
        report,
    )
    if len(asset) == 0:
        root.remove(asset)
    tendons = write_tendons(model, root, report)
    # equality constraints: sites on the written bodies (a body merged into its child has no frame of its own)
    write_equality(model, root, body_el, lambda b: groups[member_of[b]][-1] == b, report, tendons)
    if getattr(model, "nu", 0):
        report.append(f"MJCF: {model.nu} actuator(s) not written: {list(model.actuator_names)[:6]}")
    keys = [k for k in (getattr(model, "keyframes", None) or {}) if k != "default"]
    if keys:
        report.append(f"MJCF: keyframe(s) {keys[:6]} not written (only the reference pose, as 'default')")

    nonfree = np.ones(model.nq, bool)
    for i in range(model.nb):
        if model.jtype[i] == FREE:
            nonfree[model.iq[i] : model.iq[i] + 7] = False
    if q_def is not None and not np.allclose(q_def[nonfree], model.neutral()[nonfree], rtol=0, atol=0):
        qk = q_def.copy()
        for i in range(model.nb):  # free joints: MuJoCo qpos is the world pose
            if model.jtype[i] == FREE:
                k = int(model.iq[i])
                qk[k : k + 3] = model.tree_p[i] + model.tree_R[i] @ q_def[k : k + 3]
                qk[k + 3 : k + 7] = rot_to_quat(model.tree_R[i] @ quat_to_rot(q_def[k + 3 : k + 7]))
        kf = etree.SubElement(root, "keyframe")
        etree.SubElement(kf, "key", name="default", qpos=fmt(*qk))
    return root


def write_mjcf(model, path, mesh_paths: dict | None = None) -> list[str]:
    """Write ``model`` as MJCF to ``path``.

    ``mesh_paths``: optional ``{geom index: filename as written}`` (default: the mesh file's path
    relative to the output folder).  Returns the list of things MJCF could not represent.
    """
    report: list[str] = []
    root = mjcf_tree(model, path, mesh_paths, report)
    etree.ElementTree(root).write(str(path), pretty_print=True, xml_declaration=True, encoding="utf-8")
    return report


def _write_fluid(model, option, report) -> None:
    """The medium to ``<option>``; MuJoCo derives each body's box from its inertia, so a body that
    fuses several (their boxes kept apart in pbsim) is written as one box, which the report says."""
    f = model.fluid
    if f is None:
        return
    option.set("density", fmt(f.density))
    option.set("viscosity", fmt(f.viscosity))
    if np.any(f.wind):
        option.set("wind", fmt(*f.wind))
    fused = sorted({model.body_names[i] for i in f.body if np.count_nonzero(f.body == i) > 1})
    if fused:
        report.append(
            f"MJCF: fluid forces of the bodies fused into {fused[:8]} are written as one inertia box each "
            "(MuJoCo's force on them differs)"
        )
