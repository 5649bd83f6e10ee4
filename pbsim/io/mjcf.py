"""MJCF -> Model through MuJoCo's own compiler (exact MJCF semantics: defaults, classes,
includes, inertia from geoms, angle conventions), then a conversion of the compiled model.

Mapping:
- a MuJoCo body with k joints becomes k pbsim bodies in a chain (the first k-1 massless),
  each joint's frame at its anchor ``jnt_pos``; ``qpos0``/``ref`` offsets are folded into the
  placements, so pbsim's q equals MuJoCo's qpos exactly (quaternions are (w,x,y,z) in both);
- velocities are equal too, except free joints: MuJoCo's qvel is [world linear, body angular],
  pbsim's is [body linear, body angular];
- which geoms may touch is MuJoCo's decision (``pbsim.io.mjcf_contact``): ``Model.contact_pairs``
  lists MuJoCo's candidate geom pairs (contype/conaffinity bitmasks, weld and parent filtering,
  ``<exclude>``, ``<pair>``), each with its margin and friction; a geom in at least one pair is a
  collision shape, every other one visual; ``<flag contact="disable"/>`` sets
  ``Model.contact_disabled``; every geom keeps its contype, conaffinity, margin, friction and
  MuJoCo geom id (``Geometry.source_index``); worldbody geoms are attached to the world (body -1)
  and become environment geometry; ``<hfield>`` geoms keep their asset's data as MuJoCo compiled
  it (``Geometry.hfield``: name and ``(nrow, ncol)`` elevations, size ``(radius_x, radius_y,
  elevation_z, base_z)``), or the data given at load time (``hfield_data``);
- joint ``stiffness``/``springref`` (``qpos_spring``), ``frictionloss``, ``damping`` and
  ``armature`` go to ``Model.stiffness``/``springref``/``frictionloss``/``damping``/``armature``
  (a ball or free joint's stiffness per DOF: :func:`pbsim.dynamics.passive.ball_springs`);
- body ``gravcomp`` goes to ``Model.gravcomp`` (:mod:`pbsim.dynamics.gravcomp`);
- ``<option density viscosity wind>`` and every body's inertia box go to ``Model.fluid``
  (:mod:`pbsim.model.fluid`, MuJoCo's inertia-box model; the ellipsoid model is noted);
- ``<equality>`` (connect, weld, joint, fixed-tendon) goes to ``Model.equality``
  (:mod:`pbsim.io.mjcf_equality`);
- ``<keyframe>`` keys go to ``Model.keyframes`` (:mod:`pbsim.model.keyframes`: q = qpos, v with a
  free joint's linear velocity in its body frame, ctrl by actuator name);
- whatever the Model cannot hold is listed by name in ``Model.notes`` (``pbsim info``), never
  dropped silently: what the tendon, actuator and equality readers cannot carry, sensors, flexes,
  plugins, the ellipsoid fluid model, limits of ball joints, hfields on moving bodies, SDF geoms and the
  contact pairs they would be in, contact gaps (sites, cameras, lights, materials and textures are
  not dynamics and are ignored);
- a value the compiler accepts but that is NaN or inf (MuJoCo only warns) is a ParseError naming
  the body, joint or geom.
"""

from __future__ import annotations

import os
import re

import numpy as np

from pbsim.errors import InputError, ParseError
from pbsim.io.mjcf_contact import contact_pairs_from_mjmodel, geom_contact_fields
from pbsim.io.mjcf_tendons import limits_enabled
from pbsim.model.builder import JointSpec, LinkSpec, ModelBuilder
from pbsim.model.fluid import MINVAL, inertia_box
from pbsim.model.geometry import Geometry
from pbsim.model.inertia import MAX_GRAVITY, MAX_INERTIA, MAX_LENGTH, MAX_MASS
from pbsim.model.notes import listed as _listed


def _geom_rgba(mj, g) -> np.ndarray:
    """A geom's colour as MuJoCo draws it: its own rgba, or its material's when the geom's is
    MuJoCo's default (0.5, 0.5, 0.5, 1) and it has a material."""
    rgba = np.array(mj.geom_rgba[g], float)
    mat = int(mj.geom_matid[g])
    if mat >= 0 and np.allclose(rgba, (0.5, 0.5, 0.5, 1.0)):
        rgba = np.array(mj.mat_rgba[mat], float)
    return rgba


_SHAPES = {0: "plane", 1: "hfield", 2: "sphere", 3: "capsule", 4: "ellipsoid", 5: "cylinder", 6: "box", 7: "mesh"}


def _quat_to_rot(q):
    w, x, y, z = np.asarray(q, float) / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def _axis_angle(a, t):
    a = np.asarray(a, float)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + np.sin(t) * K + (1 - np.cos(t)) * K @ K


def compile_mjcf(path):
    """``mujoco.MjModel`` of an MJCF file, with compiler errors turned into ParseError."""
    import mujoco

    path = str(path)
    if not os.path.isfile(path):
        raise ParseError(f"{path}: no such file")
    try:
        return mujoco.MjModel.from_xml_path(path)
    except ValueError as e:
        msg = str(e).strip()  # MuJoCo's own names for two elements: "... not found in collision 0"
        for internal, element in (("collision", "<contact><pair>"), ("bodypair", "<contact><exclude>")):
            msg = re.sub(rf"\b(not found in) {internal} (\d+)", rf"\1 {element} #\2", msg)
        raise ParseError(f"{path}: MuJoCo could not compile it: {msg}") from None


def _name(mj, kind, i, default):
    import mujoco

    try:
        n = mujoco.mj_id2name(mj, kind, i)
    except UnicodeDecodeError:  # MuJoCo keeps the bytes as written
        raise ParseError(
            f"the name of {mujoco.mjtObj(kind).name.removeprefix('mjOBJ_').lower()} #{i} is not valid UTF-8 text"
        ) from None
    return n if n else default


def model_from_mjmodel(
    mj, source: str = "", floating_base: bool | None = None, fix_inertia: bool = False, hfield_data=None
):
    """Convert a compiled ``mujoco.MjModel``; ``hfield_data``: see :func:`load_mjcf`."""
    import mujoco

    hfield_data = _check_hfield_data(mj, hfield_data, source)

    OBJ_BODY, OBJ_JOINT, OBJ_GEOM = mujoco.mjtObj.mjOBJ_BODY, mujoco.mjtObj.mjOBJ_JOINT, mujoco.mjtObj.mjOBJ_GEOM
    b = ModelBuilder(
        _name(mj, mujoco.mjtObj.mjOBJ_MODEL, 0, os.path.splitext(os.path.basename(source))[0] or "mjcf"), source
    )
    b.fix_inertia = fix_inertia
    _check_finite(mj, source)
    b.gravity = np.array(mj.opt.gravity, float)
    if mj.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_GRAVITY:
        b.gravity[:] = 0.0
        b.notes.append("gravity is disabled in <option><flag gravity='disable'/>: Model.gravity is 0")
    _note_dropped(mj, b.notes)
    limits_on = limits_enabled(mj)
    if not limits_on and (np.any(mj.jnt_limited) or np.any(mj.tendon_limited)):
        b.notes.append(
            "joint and tendon ranges are disabled in <option><flag limit/constraint='disable'/>: not imported"
        )
    body_names = ["world"] + [_name(mj, OBJ_BODY, i, f"body{i}") for i in range(1, mj.nbody)]
    b.world_links.add("world")
    fluid_bodies = _fluid_bodies(mj, b)
    rename = {}  # last moving link of a MuJoCo body -> the body's name
    joint_names = []  # pbsim's name of each MuJoCo joint
    for i in range(1, mj.nbody):
        name = body_names[i]
        parent = body_names[mj.body_parentid[i]]
        Rb, pb = _quat_to_rot(mj.body_quat[i]), np.array(mj.body_pos[i], float)
        Ri = _quat_to_rot(mj.body_iquat[i])
        link = LinkSpec(
            name,
            mass=float(mj.body_mass[i]),
            com=np.array(mj.body_ipos[i], float),
            inertia=Ri @ np.diag(mj.body_inertia[i]) @ Ri.T,
            gravcomp=float(mj.body_gravcomp[i]),
        )
        if i in fluid_bodies:  # MuJoCo's inertia-box fluid model: the box of this body's inertia
            link.fluid_R, link.fluid_box = Ri, inertia_box(float(mj.body_mass[i]), mj.body_inertia[i])
        jadr, jnum = mj.body_jntadr[i], mj.body_jntnum[i]
        prev, prev_anchor = parent, None
        for n in range(jnum):
            j = jadr + n
            jt = int(mj.jnt_type[j])
            jname = _name(mj, OBJ_JOINT, j, f"{name}_joint{n}")
            joint_names.append(jname)
            anchor = np.array(mj.jnt_pos[j], float)
            if n == 0:
                R, p = Rb, pb + Rb @ anchor
            else:
                R, p = np.eye(3), anchor - prev_anchor
            axis = np.array(mj.jnt_axis[j], float)
            qa = mj.jnt_qposadr[j]
            da = mj.jnt_dofadr[j]
            child = f"{name}:{jname}" if (n < jnum - 1 or np.any(anchor != 0)) else name
            if jt == mujoco.mjtJoint.mjJNT_FREE:
                spec = JointSpec(jname, "free", prev, child)  # q = MuJoCo qpos (world pose) exactly
            elif jt == mujoco.mjtJoint.mjJNT_BALL:
                spec = JointSpec(jname, "ball", prev, child, R, p)
            elif jt == mujoco.mjtJoint.mjJNT_HINGE:
                spec = JointSpec(jname, "revolute", prev, child, R @ _axis_angle(axis, -mj.qpos0[qa]), p, axis)
            else:
                spec = JointSpec(jname, "prismatic", prev, child, R, p - R @ axis * mj.qpos0[qa], axis)
            if jt in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE) and mj.jnt_limited[j] and limits_on:
                spec.lower, spec.upper = float(mj.jnt_range[j, 0]), float(mj.jnt_range[j, 1])
            if mj.jnt_actfrclimited[j]:
                spec.effort = float(max(abs(mj.jnt_actfrcrange[j, 0]), abs(mj.jnt_actfrcrange[j, 1])))
            spec.damping = float(mj.dof_damping[da])
            spec.armature = float(mj.dof_armature[da])
            spec.frictionloss = float(mj.dof_frictionloss[da])
            spec.stiffness = float(mj.jnt_stiffness[j])
            if jt in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
                spec.springref = float(mj.qpos_spring[qa])
            if child != name:
                b.add_link(LinkSpec(child))
                if n == jnum - 1:
                    rename[child] = name
            b.add_joint(spec)
            prev, prev_anchor = child, anchor
        if jnum == 0:
            b.add_link(link)
            b.add_joint(JointSpec(f"{name}_fixed", "fixed", parent, name, Rb, pb))
        elif prev != name:
            b.add_link(link)
            b.add_joint(JointSpec(f"{name}_anchor", "fixed", prev, name, np.eye(3), -prev_anchor))
        else:
            b.add_link(link)
    # shapes
    for g in range(mj.ngeom):
        gt = int(mj.geom_type[g])
        if gt not in _SHAPES:
            kind = mujoco.mjtGeom(gt).name.removeprefix("mjGEOM_").lower()
            b.notes.append(f"geom {_name(mj, OBJ_GEOM, g, str(g))!r} of type {kind} is not imported")
            continue
        body = int(mj.geom_bodyid[g])
        size = np.array(mj.geom_size[g], float)
        shape = _SHAPES[gt]
        if shape == "hfield" and int(mj.body_weldid[body]) != 0:
            b.notes.append(
                f"hfield geom {_name(mj, OBJ_GEOM, g, str(g))!r} is on a moving body: not imported "
                "(pbsim's heightfields are static)"
            )
            continue
        if shape == "hfield":
            size = np.array(mj.hfield_size[mj.geom_dataid[g]], float)
        size = {
            "hfield": size,
            "ellipsoid": size,
            "box": size,
            "sphere": size[:1],
            "capsule": size[:2],
            "cylinder": size[:2],
            "plane": size[:2],
            "mesh": np.ones(3),
        }[shape]
        geom = Geometry(
            _name(mj, OBJ_GEOM, g, f"geom{g}"),
            shape,
            -1,
            _quat_to_rot(mj.geom_quat[g]),
            np.array(mj.geom_pos[g], float),
            size,
            "visual",  # "collision" once it is in a contact pair (mjcf_contact, after the build)
            rgba=_geom_rgba(mj, g),
            **geom_contact_fields(mj, g),
        )
        if shape == "mesh":
            mid = mj.geom_dataid[g]
            va, vn = mj.mesh_vertadr[mid], mj.mesh_vertnum[mid]
            fa, fn = mj.mesh_faceadr[mid], mj.mesh_facenum[mid]
            geom.mesh_data = (np.array(mj.mesh_vert[va : va + vn], float), np.array(mj.mesh_face[fa : fa + fn], int))
        if shape == "hfield":
            geom.hfield = _hfield(mj, int(mj.geom_dataid[g]), hfield_data, source, b.notes)
        if body == 0:
            geom.link = "world"
            b.world_geoms.append(geom)
        else:
            b.links[body_names[body]].geoms.append(geom)
    model = b.build(floating_base=floating_base, default_floating=False)
    model.body_names = [rename.get(n, n) for n in model.body_names]
    # q == qpos (joint by joint where floating_base welded or freed a body): MuJoCo's spring
    # reference and reference configuration as they are
    model.springref = _q_from_qpos(mj, model, joint_names, mj.qpos_spring, model.springref)
    model.q_default = _q_from_qpos(mj, model, joint_names, mj.qpos0, model.neutral())
    model.notes.extend(contact_pairs_from_mjmodel(mj, model, body_names, lambda k, i, d: _name(mj, k, i, d)))
    from pbsim.io.mjcf_tendons import tendons_from_mjmodel

    model.tendons, ten_notes = tendons_from_mjmodel(mj, model, joint_names, lambda k, i, d: _name(mj, k, i, d))
    model._k = None
    model.notes.extend(ten_notes)
    from pbsim.io.mjcf_actuators import actuators_from_mjmodel

    model.actuators, act_notes = actuators_from_mjmodel(mj, model, lambda k, i, d: _name(mj, k, i, d))
    model.notes.extend(act_notes)
    model.keyframes = _keyframes(mj, model, joint_names)
    from pbsim.io.mjcf_actuators import keyframe_activations

    model.notes.extend(keyframe_activations(mj, model, lambda k, i, d: _name(mj, k, i, d)))  # act in State.act order
    from pbsim.io.mjcf_equality import equality_from_mjmodel

    model.equality, eq_notes = equality_from_mjmodel(mj, model, joint_names, lambda k, i, d: _name(mj, k, i, d))
    model.notes.extend(eq_notes)
    if limits_on:
        model.soft_limits = _soft_limits(mj, model, joint_names)
    model._k = None
    return model


def _soft_limits(mj, model, joint_names):
    """MuJoCo's limit constraint on every limited hinge/slide joint, ball joint (its cone) and
    tendon pbsim kept (pbsim.model.limits.SoftLimits)."""
    import mujoco

    from pbsim.model.limits import BALL_CONE, HINGE_SLIDE, TENDON, SoftLimits, clean_solimp, clean_solref

    J = mujoco.mjtJoint
    kinds = {int(J.mjJNT_HINGE): HINGE_SLIDE, int(J.mjJNT_SLIDE): HINGE_SLIDE, int(J.mjJNT_BALL): BALL_CONE}
    rows = []
    for j in range(mj.njnt):
        kind = kinds.get(int(mj.jnt_type[j]))
        if not mj.jnt_limited[j] or kind is None or joint_names[j] not in model.joint_names:
            continue  # not limited, free, or welded by floating_base=False
        lo, hi = (float(x) for x in mj.jnt_range[j])
        if kind == BALL_CONE:
            lo, hi = 0.0, max(lo, hi)  # MuJoCo: the cone's angle is the larger bound
        rows.append(
            (
                kind,
                int(model.iv[model.joint_index(joint_names[j])]),
                mj.jnt_solref[j],
                mj.jnt_solimp[j],
                mj.jnt_margin[j],
                mj.dof_invweight0[mj.jnt_dofadr[j]],
                lo,
                hi,
            )
        )
    tendons = model.tendons
    for t, mt in enumerate(tendons.mj_index if tendons is not None else ()):
        if mj.tendon_limited[mt]:
            rows.append(
                (
                    TENDON,
                    t,
                    mj.tendon_solref_lim[mt],
                    mj.tendon_solimp_lim[mt],
                    mj.tendon_margin[mt],
                    mj.tendon_invweight0[mt],
                    *(float(x) for x in mj.tendon_range[mt]),
                )
            )
    if not rows:
        return None
    refsafe = not (mj.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_REFSAFE)
    col = list(zip(*rows))
    return SoftLimits(
        np.array(col[0], np.int64),
        np.array(col[1], np.int64),
        np.array([clean_solref(r) for r in col[2]]),
        np.array([clean_solimp(r) for r in col[3]]),
        np.array(col[4], float),
        np.array(col[5], float),
        np.array(col[6], float),
        np.array(col[7], float),
        refsafe,
    )


def _hfield_names(mj) -> list[str]:
    import mujoco

    return [_name(mj, mujoco.mjtObj.mjOBJ_HFIELD, h, f"hfield{h}") for h in range(mj.nhfield)]


def _check_hfield_data(mj, hfield_data, source: str) -> dict:
    """``hfield_data`` (:func:`load_mjcf`) checked against the file's ``<hfield>`` assets: ``{hfield
    id: (nrow, ncol) float array}``."""
    if hfield_data is None:
        return {}
    if not isinstance(hfield_data, dict):
        raise InputError(f"{source}: hfield_data must be a dict {{hfield name: elevations}}, got {hfield_data!r}")
    names = _hfield_names(mj)
    out = {}
    for key, val in hfield_data.items():
        if key not in names:
            raise InputError(
                f"{source}: hfield_data names hfield {key!r}, but the file's <hfield> assets are {names or 'none'}"
            )
        h = names.index(key)
        nrow, ncol = int(mj.hfield_nrow[h]), int(mj.hfield_ncol[h])
        try:
            a = np.asarray(val, dtype=np.float64)
        except (TypeError, ValueError):
            a = None
        if a is None or a.size != nrow * ncol or a.ndim not in (1, 2) or (a.ndim == 2 and a.shape != (nrow, ncol)):
            raise InputError(
                f"{source}: hfield_data[{key!r}] must be {nrow}x{ncol} numbers (nrow x ncol), got {np.shape(val)}"
            )
        if not np.all(np.isfinite(a)):
            raise InputError(f"{source}: hfield_data[{key!r}] has NaN or inf values")
        out[h] = a.reshape(nrow, ncol).copy()
    return out


def _hfield(mj, h: int, given: dict, source: str, notes: list) -> tuple:
    """``(name, (nrow, ncol) elevations)`` of hfield asset ``h``: the data given at load time, else
    MuJoCo's compiled ``hfield_data`` (row 0 at -y, columns along x)."""
    name = _hfield_names(mj)[h]
    if h in given:
        return name, given[h]
    nrow, ncol, adr = int(mj.hfield_nrow[h]), int(mj.hfield_ncol[h]), int(mj.hfield_adr[h])
    data = np.array(mj.hfield_data[adr : adr + nrow * ncol], float).reshape(nrow, ncol)
    if not np.any(data) and not any(f"hfield {name!r}" in n for n in notes):
        notes.append(
            f"hfield {name!r} is flat (all {nrow}x{ncol} elevations 0: data MuJoCo sets at run time?): "
            f"give it with pbsim.load(..., hfield_data={{{name!r}: array}}) or make_scene(..., hfield_data=...)"
        )
    return name, data


def _keyframes(mj, model, joint_names) -> dict:
    """The file's ``<keyframe>`` keys in pbsim's coordinates (:mod:`pbsim.model.keyframes`): qpos
    joint by joint, qvel with a free joint's linear velocity in its body frame, ctrl by actuator
    name."""
    import mujoco

    from pbsim.model.keyframes import Keyframe

    out = {}
    act_names = [_name(mj, mujoco.mjtObj.mjOBJ_ACTUATOR, a, f"actuator{a}") for a in range(mj.nu)]
    for k in range(mj.nkey):
        name = _name(mj, mujoco.mjtObj.mjOBJ_KEY, k, f"key{k}")
        q = _q_from_qpos(mj, model, joint_names, mj.key_qpos[k], model.neutral())
        v = np.zeros(model.nv)
        for j, n in enumerate(joint_names):
            if n not in model.joint_names:
                continue
            s, a = model.idx_v(n), int(mj.jnt_dofadr[j])
            qv = np.array(mj.key_qvel[k, a : a + s.stop - s.start], float)
            if int(mj.jnt_type[j]) == mujoco.mjtJoint.mjJNT_FREE:
                qa = int(mj.jnt_qposadr[j])
                qv[:3] = _quat_to_rot(mj.key_qpos[k, qa + 3 : qa + 7]).T @ qv[:3]  # world -> body frame
            v[s] = qv
        ctrl = np.full(model.nu, np.nan)
        for i, an in enumerate(model.actuator_names):
            if an in act_names:
                ctrl[i] = float(mj.key_ctrl[k, act_names.index(an)])
        out[name] = Keyframe(q, v, ctrl, np.array(mj.key_act[k], float), float(mj.key_time[k]))
    return out


def _q_from_qpos(mj, model, names, qpos, default) -> np.ndarray:
    """A pbsim configuration from a MuJoCo one (``names``: pbsim's name of each MuJoCo joint):
    ``qpos`` itself when the joints are the same, else joint by joint, ``default`` for a joint
    MuJoCo does not have."""
    if model.nq == mj.nq and list(model.joint_names) == names:
        return np.array(qpos, float)
    q = np.array(default, float)
    for j, n in enumerate(names):
        if n in model.joint_names:
            s, a = model.idx_q(n), int(mj.jnt_qposadr[j])
            q[s] = qpos[a : a + s.stop - s.start]
    return q


def _names(mj, kind, n, prefix) -> list[str]:
    return [_name(mj, kind, i, f"{prefix}{i}") for i in range(n)]


def _note_dropped(mj, notes: list[str]) -> None:
    """One note per kind of MJCF element the Model cannot hold, naming every element."""
    import mujoco

    O = mujoco.mjtObj
    if mj.nsensor:
        notes.append(
            f"{mj.nsensor} sensor(s) not imported: {_listed(_names(mj, O.mjOBJ_SENSOR, mj.nsensor, 'sensor'))}"
        )
    if mj.nflex:
        notes.append(
            f"{mj.nflex} flex(es) (deformables) not imported: {_listed(_names(mj, O.mjOBJ_FLEX, mj.nflex, 'flex'))}"
        )
    if mj.nplugin:
        notes.append(
            f"{mj.nplugin} plugin(s) not imported: {_listed(_names(mj, O.mjOBJ_PLUGIN, mj.nplugin, 'plugin'))}"
        )
    bodies = _names(mj, O.mjOBJ_BODY, mj.nbody, "body")
    actgravcomp = getattr(mj, "jnt_actgravcomp", np.zeros(mj.njnt))
    clamped = [
        _name(mj, O.mjOBJ_JOINT, j, f"joint{j}") for j in range(mj.njnt) if actgravcomp[j] and mj.jnt_actfrclimited[j]
    ]
    if clamped and np.any(mj.body_gravcomp[1:] != 0):
        notes.append(
            "gravity compensation through the actuators (actuatorgravcomp) is not clamped to the "
            f"joint's actuatorfrcrange: it is a passive force in pbsim, on {_listed(clamped)}"
        )
    mocap = [bodies[i] for i in range(1, mj.nbody) if mj.body_mocapid[i] >= 0]
    if mocap:
        notes.append(f"mocap bodies are welded where they are (not driven): {_listed(mocap)}")
    balls = [
        _name(mj, O.mjOBJ_JOINT, j, f"joint{j}")
        for j in range(mj.njnt)
        if mj.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL and mj.jnt_limited[j]
    ]
    if not limits_enabled(mj):
        balls = []  # no limits at all (model_from_mjmodel notes it)
    if balls:
        notes.append(
            "ball-joint cone limits are held by the explicit methods only (MuJoCo's limit constraint), "
            f"the other methods leave the cone free: {_listed(balls)}"
        )


def _fluid_bodies(mj, b) -> set:
    """The bodies MuJoCo's inertia-box fluid model acts on (``<option density/viscosity>`` set: every
    body with mass whose geoms keep ``fluidshape="none"``); the medium goes to ``b.fluid_medium``.
    Bodies with an ellipsoid fluid shape (MuJoCo's other model) are named in the notes."""
    if not (mj.opt.density > 0 or mj.opt.viscosity > 0):
        return set()
    import mujoco

    b.fluid_medium = (float(mj.opt.density), float(mj.opt.viscosity), np.array(mj.opt.wind, float))
    ellipsoid = {int(mj.geom_bodyid[g]) for g in range(mj.ngeom) if mj.geom_fluid[g, 0] > 0}
    if ellipsoid:
        names = [_name(mj, mujoco.mjtObj.mjOBJ_BODY, i, f"body{i}") for i in sorted(ellipsoid)]
        b.notes.append(
            f"fluid forces of the ellipsoid model (geom fluidshape='ellipsoid') not simulated on {_listed(names)}"
        )
    return {i for i in range(1, mj.nbody) if mj.body_mass[i] >= MINVAL and i not in ellipsoid}


def _check_finite(mj, source: str) -> None:
    """MuJoCo compiles NaN/inf in most attributes with a warning; pbsim refuses them by name."""
    import mujoco

    O = mujoco.mjtObj

    bounds = {
        "pos": MAX_LENGTH,
        "inertial pos": MAX_LENGTH,
        "size": MAX_LENGTH,
        "mass": MAX_MASS,
        "inertia": MAX_INERTIA,
        "gravity": MAX_GRAVITY,
        "armature": MAX_INERTIA,
    }

    def bad(kind, i, prefix, fields):
        for label, arr in fields:
            if not np.all(np.isfinite(arr)):
                raise ParseError(
                    f"{source}: {prefix} {_name(mj, kind, i, f'#{i}')!r}: {label} {np.asarray(arr).tolist()} "
                    "is NaN or inf"
                )
            if label in bounds and np.abs(arr).max(initial=0) > bounds[label]:
                raise ParseError(
                    f"{source}: {prefix} {_name(mj, kind, i, f'#{i}')!r}: {label} {np.asarray(arr).tolist()} "
                    f"is beyond the bound {bounds[label]:g} (docs/reliability.md)"
                )

    bad(O.mjOBJ_MODEL, 0, "option of model", [("gravity", mj.opt.gravity)])
    for i in range(1, mj.nbody):
        bad(
            O.mjOBJ_BODY,
            i,
            "body",
            [
                ("pos", mj.body_pos[i]),
                ("quat", mj.body_quat[i]),
                ("inertial pos", mj.body_ipos[i]),
                ("inertial quat", mj.body_iquat[i]),
                ("mass", mj.body_mass[i]),
                ("inertia", mj.body_inertia[i]),
            ],
        )
    for j in range(mj.njnt):
        qa, da = mj.jnt_qposadr[j], mj.jnt_dofadr[j]
        nq = {0: 7, 1: 4}.get(int(mj.jnt_type[j]), 1)
        nv = {0: 6, 1: 3}.get(int(mj.jnt_type[j]), 1)
        fields = [
            ("pos", mj.jnt_pos[j]),
            ("axis", mj.jnt_axis[j]),
            ("ref (qpos0)", mj.qpos0[qa : qa + nq]),
            ("stiffness", mj.jnt_stiffness[j]),
            ("springref", mj.qpos_spring[qa : qa + nq]),
            ("damping", mj.dof_damping[da : da + nv]),
            ("armature", mj.dof_armature[da : da + nv]),
            ("frictionloss", mj.dof_frictionloss[da : da + nv]),
        ]
        if mj.jnt_limited[j]:
            fields.append(("range", mj.jnt_range[j]))
        if mj.jnt_actfrclimited[j]:
            fields.append(("actuatorfrcrange", mj.jnt_actfrcrange[j]))
        bad(O.mjOBJ_JOINT, j, "joint", fields)
    for g in range(mj.ngeom):
        bad(O.mjOBJ_GEOM, g, "geom", [("pos", mj.geom_pos[g]), ("quat", mj.geom_quat[g]), ("size", mj.geom_size[g])])


def load_mjcf(path, floating_base: bool | None = None, fix_inertia: bool = False, hfield_data=None):
    """Read an MJCF file into a :class:`pbsim.Model` (see module doc for the mapping).

    ``hfield_data``: ``{hfield asset name: elevations}`` replacing the data of those ``<hfield>``
    assets, as MuJoCo users set ``mjModel.hfield_data`` at run time (an ``nrow`` x ``ncol`` hfield
    declared without ``file`` or ``elevation``): an ``(nrow, ncol)`` array (or ``nrow * ncol``
    numbers) in MuJoCo's layout -- row ``r`` at ``y = -size[1] + 2 size[1] r / (nrow - 1)``,
    column ``c`` along x -- used as given (MuJoCo normalises file data to [0, 1], not run-time
    data); the surface is ``size[2] * data`` above the geom's frame.  ``make_scene(...,
    hfield_data=...)`` does the same for one scene."""
    mj = compile_mjcf(path)
    try:
        return model_from_mjmodel(mj, str(path), floating_base, fix_inertia, hfield_data)
    except ParseError as e:
        if str(e).startswith(str(path)):
            raise
        raise ParseError(f"{path}: {e}") from None
