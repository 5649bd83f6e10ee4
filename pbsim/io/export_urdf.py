"""Model -> URDF (lxml).

One URDF link per body (its merged inertia at the body frame = joint frame), plus a massless
link on a fixed joint for every other frame of the model (links that were merged through fixed
joints when the file was read), so frame names survive a round trip; shapes are written on the
link they were declared on.  Base: a free root body becomes a URDF without a ``world`` link
(pbsim, pybullet and Gazebo let such a robot float); any other base gets a massless ``world``
link.  Ball joints are written as ``spherical`` (the pybullet dialect: ROS URDF has no ball
joint), nested free joints as ``floating``.

``write_urdf`` returns the list of things the URDF cannot hold (armature, gravity, velocity
limits of ball joints ...) so :func:`pbsim.io.convert.convert` can report them.
"""

from __future__ import annotations

import os

import numpy as np
from lxml import etree

from pbsim.dynamics.joints import BALL, FREE, PRISMATIC, REVOLUTE

DEFAULT_GRAVITY = np.array([0.0, 0.0, -9.81])


# ---------------------------------------------------------------------- shared helpers
def fmt(*xs) -> str:
    """Numbers written so that they read back bit for bit (shortest repr of each float)."""
    out = []
    for x in np.ravel(np.asarray(xs, dtype=float)):
        x = float(x)
        out.append("0" if x == 0 else repr(x))
    return " ".join(out)


def rot_to_rpy(R) -> np.ndarray:
    """URDF roll-pitch-yaw (R = Rz(yaw) Ry(pitch) Rx(roll)) of a rotation matrix."""
    R = np.asarray(R, float)
    cp = np.hypot(R[0, 0], R[1, 0])
    pitch = np.arctan2(-R[2, 0], cp)
    if cp > 1e-10:
        roll = np.arctan2(R[2, 1], R[2, 2])
        yaw = np.arctan2(R[1, 0], R[0, 0])
    else:  # gimbal lock: put everything into yaw
        roll = 0.0
        yaw = np.arctan2(-R[0, 1], R[1, 1])
    return np.array([roll, pitch, yaw])


def rot_to_quat(R) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of a rotation matrix (Shepperd's method)."""
    R = np.asarray(R, float)
    t = np.trace(R)
    if t > 0:
        s = 2.0 * np.sqrt(1.0 + t)
        q = np.array([0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s])
    else:
        k = int(np.argmax(np.diag(R)))
        i, j, l = k, (k + 1) % 3, (k + 2) % 3
        s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[l, l])
        q = np.zeros(4)
        q[0] = (R[l, j] - R[j, l]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (R[j, i] + R[i, j]) / s
        q[1 + l] = (R[l, i] + R[i, l]) / s
    q /= np.linalg.norm(q)
    return q if q[0] >= 0 else -q


def quat_to_rot(q) -> np.ndarray:
    w, x, y, z = np.asarray(q, float) / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


class Names:
    """Unique names within one namespace (URDF links, joints ...)."""

    def __init__(self):
        self.used: set[str] = set()

    def take(self, want: str) -> str:
        name, k = want or "unnamed", 1
        while name in self.used:
            name = f"{want}_{k}"
            k += 1
        self.used.add(name)
        return name


def frames_by_body(model):
    """body index -> [(frame, is_body_frame)] (-1 for world); the body's own frame first."""
    out: dict[int, list] = {}
    for f in model.frames:
        own = f.body >= 0 and f.name == model.body_names[f.body] and np.allclose(f.R, np.eye(3)) and np.allclose(f.p, 0)
        out.setdefault(int(f.body), []).append((f, own))
    return out


def geom_frame(model, g, by_body):
    """The frame (of its own body) a shape was declared on, or None (write it on the body)."""
    for n, (f, own) in enumerate(by_body.get(int(g.body), [])):
        if f.name == g.link and not own and not (g.body < 0 and n == 0):
            return f
    return None


def is_regularization_armature(model, j: int) -> bool:
    """True when DOF ``j``'s armature is only the builder's positive-definiteness guard."""
    from pbsim.model.builder import MIN_ARMATURE

    return bool(model.armature[j] == MIN_ARMATURE)


def dof_owner(model):
    """DOF index -> body index."""
    own = np.zeros(model.nv, int)
    for i in range(model.nb):
        own[model.iv[i] : model.iv[i] + model.nvj[i]] = i
    return own


def mesh_ref(g, idx, mesh_paths, out_dir):
    """How a mesh shape's file is named in the written file."""
    if mesh_paths is not None and idx in mesh_paths:
        return mesh_paths[idx]
    p = os.path.abspath(g.mesh_path)
    try:
        return os.path.relpath(p, out_dir)
    except ValueError:  # another drive
        return p


def _origin(parent, R, p):
    if np.allclose(R, np.eye(3), atol=0, rtol=0) and not np.any(p):
        return
    o = etree.SubElement(parent, "origin")
    o.set("xyz", fmt(*p))
    o.set("rpy", fmt(*rot_to_rpy(R)))


def _geometry(el, g, ref):
    geo = etree.SubElement(el, "geometry")
    if g.shape == "box":
        etree.SubElement(geo, "box", size=fmt(*(2 * np.asarray(g.size))))
    elif g.shape == "sphere":
        etree.SubElement(geo, "sphere", radius=fmt(g.size[0]))
    elif g.shape in ("cylinder", "capsule"):
        etree.SubElement(geo, g.shape, radius=fmt(g.size[0]), length=fmt(2 * g.size[1]))
    elif g.shape == "mesh":
        m = etree.SubElement(geo, "mesh", filename=ref)
        if not np.allclose(g.size, 1.0, rtol=0, atol=0):
            m.set("scale", fmt(*g.size))
    elif g.shape == "plane":
        etree.SubElement(geo, "plane")
    else:
        raise ValueError(f"geometry {g.name!r}: unknown shape {g.shape!r}")


# ---------------------------------------------------------------------- writer
def urdf_tree(model, path="robot.urdf", mesh_paths=None, report=None, capsules="capsule"):
    """The URDF document (lxml element) for ``model``; see :func:`write_urdf`."""
    report = [] if report is None else report
    if capsules not in ("capsule", "cylinder+spheres"):
        raise ValueError(f"capsules={capsules!r}: expected 'capsule' or 'cylinder+spheres'")
    out_dir = os.path.dirname(os.path.abspath(path))
    robot = etree.Element("robot", name=model.name or "robot")
    by_body = frames_by_body(model)
    links, joints = Names(), Names()
    link_el: dict[str, etree._Element] = {}

    def add_link(want):
        name = links.take(want)
        link_el[name] = etree.SubElement(robot, "link", name=name)
        return name

    def add_fixed(parent, child, R, p, want):
        j = etree.SubElement(robot, "joint", name=joints.take(want), type="fixed")
        _origin(j, R, p)
        etree.SubElement(j, "parent", link=parent)
        etree.SubElement(j, "child", link=child)

    roots = [i for i in range(model.nb) if model.parent[i] < 0]
    world_geoms = [g for g in model.geoms if g.body < 0]
    world_frames = [f for f, _ in by_body.get(-1, [])][1:]  # [0] is the world itself
    floating_root = (
        len(roots) == 1
        and model.jtype[roots[0]] == FREE
        and np.allclose(model.tree_R[roots[0]], np.eye(3), rtol=0, atol=0)
        and not np.any(model.tree_p[roots[0]])
        # the reader names an implicit free joint "<root link>_root"; any other name
        # needs an explicit world link + floating joint to survive the round trip
        and model.joint_names[roots[0]] == f"{model.body_names[roots[0]]}_root"
    )
    world = None
    if floating_root:
        if world_geoms:
            report.append(
                f"URDF: {len(world_geoms)} shape(s) fixed to the world "
                f"({', '.join(g.name for g in world_geoms[:5])}) dropped: a floating URDF has no world"
            )
        if world_frames:
            report.append(f"URDF: world frame(s) {[f.name for f in world_frames]} dropped (floating base)")
    else:
        world = add_link("world")  # taken first: a body called 'world' is renamed

    body_link: dict[int, str] = {}
    frame_link: dict[tuple[int, str], str] = {}
    # world-fixed frames (static links) under the world link
    if world is not None:
        for f in world_frames:
            n = add_link(f.name)
            add_fixed(world, n, f.R, f.p, f"{f.name}_fixed")
            frame_link[(-1, f.name)] = n
        frame_link[(-1, "")] = world

    for i in range(model.nb):
        name = add_link(model.body_names[i])
        body_link[i] = name
        el = link_el[name]
        if model.mass[i] > 0 or np.any(model.inertia_com[i]):
            if model.mass[i] == 0 and floating_root and i == roots[0]:
                report.append(
                    f"URDF: floating root body {model.body_names[i]!r} has rotational inertia but no mass: "
                    "written as mass 0, which pbsim and pybullet read as a static base unless floating_base=True"
                )
            inert = etree.SubElement(el, "inertial")
            if np.any(model.com[i]):
                etree.SubElement(inert, "origin", xyz=fmt(*model.com[i]), rpy="0 0 0")
            etree.SubElement(inert, "mass", value=fmt(model.mass[i]))
            I = model.inertia_com[i]
            etree.SubElement(
                inert,
                "inertia",
                ixx=fmt(I[0, 0]),
                ixy=fmt(I[0, 1]),
                ixz=fmt(I[0, 2]),
                iyy=fmt(I[1, 1]),
                iyz=fmt(I[1, 2]),
                izz=fmt(I[2, 2]),
            )
        t = int(model.jtype[i])
        par = int(model.parent[i])
        parent_link = body_link[par] if par >= 0 else world
        if parent_link is None:  # the floating root: no joint at all
            pass
        else:
            jt = {REVOLUTE: "revolute", PRISMATIC: "prismatic", BALL: "spherical", FREE: "floating"}[t]
            k = int(model.iv[i])
            if t == REVOLUTE and not (np.isfinite(model.lower[k]) or np.isfinite(model.upper[k])):
                jt = "continuous"
            j = etree.SubElement(robot, "joint", name=joints.take(model.joint_names[i]), type=jt)
            _origin(j, model.tree_R[i], model.tree_p[i])
            etree.SubElement(j, "parent", link=parent_link)
            etree.SubElement(j, "child", link=name)
            if t in (REVOLUTE, PRISMATIC):
                etree.SubElement(j, "axis", xyz=fmt(*model.axis[i]))
                lim = etree.Element("limit")
                if np.isfinite(model.lower[k]) or np.isfinite(model.upper[k]):
                    if not (np.isfinite(model.lower[k]) and np.isfinite(model.upper[k])):
                        report.append(
                            f"URDF: joint {model.joint_names[i]!r} has a one-sided limit "
                            f"[{model.lower[k]}, {model.upper[k]}]; the infinite side is written as ±1e16"
                        )
                    lim.set("lower", fmt(np.clip(model.lower[k], -1e16, 1e16)))
                    lim.set("upper", fmt(np.clip(model.upper[k], -1e16, 1e16)))
                # pbsim reads effort/velocity 0 as "no limit" (as pybullet files use it)
                lim.set("effort", fmt(model.effort_limit[k] if np.isfinite(model.effort_limit[k]) else 0))
                lim.set("velocity", fmt(model.velocity_limit[k] if np.isfinite(model.velocity_limit[k]) else 0))
                if jt != "continuous" or np.isfinite(model.effort_limit[k]) or np.isfinite(model.velocity_limit[k]):
                    j.append(lim)
            else:
                lims = [
                    (a, b)
                    for a, b in zip(
                        model.effort_limit[k : k + model.nvj[i]], model.velocity_limit[k : k + model.nvj[i]]
                    )
                ]
                if any(np.isfinite(a) or np.isfinite(b) for a, b in lims):
                    report.append(
                        f"URDF: effort/velocity limits of {model.joint_type_name(i)} joint "
                        f"{model.joint_names[i]!r} dropped"
                    )
            dyn = {}
            for attr, arr in (("damping", model.damping), ("friction", model.frictionloss)):
                d = arr[k : k + model.nvj[i]]
                if np.any(d):
                    if np.ptp(d) > 0:
                        report.append(
                            f"URDF: joint {model.joint_names[i]!r} has per-DOF {attr} {d.tolist()}; "
                            f"URDF holds one value, wrote {d.max()}"
                        )
                    dyn[attr] = fmt(d.max())
            if dyn:
                etree.SubElement(j, "dynamics", **dyn)
            for slave, master, mult, off in model.mimic:  # coupled mimic joint: its root master
                if slave == model.joint_names[i]:
                    etree.SubElement(j, "mimic", joint=master, multiplier=fmt(mult), offset=fmt(off))
            if np.any(model.stiffness[k : k + model.nvj[i]]):
                report.append(f"URDF: joint {model.joint_names[i]!r}: stiffness (joint spring) dropped (URDF has none)")
            if t == BALL:
                report.append(
                    f"URDF: ball joint {model.joint_names[i]!r} written as type='spherical' "
                    "(pybullet/pbsim dialect; ROS URDF and Pinocchio have no ball joint)"
                )
            if t == FREE:
                report.append(
                    f"URDF: free joint {model.joint_names[i]!r} written as type='floating' "
                    "(Pinocchio and pbsim read it; many ROS tools ignore it)"
                )
        # the body's other frames (links merged through fixed joints)
        for f, own in by_body.get(i, []):
            if own:
                continue
            n = add_link(f.name)
            add_fixed(name, n, f.R, f.p, f"{f.name}_fixed")
            frame_link[(i, f.name)] = n

    # shapes
    nvis = {}
    world_shapes = None
    ncaps = 0
    for idx, g in enumerate(model.geoms):
        if g.body < 0 and world is None:
            continue
        f = geom_frame(model, g, by_body)
        if f is not None:
            host = frame_link[(int(g.body), f.name)]
            R, p = f.R.T @ g.R, f.R.T @ (g.p - f.p)
        elif g.body < 0:  # pbsim's reader treats a world link with shapes as a robot link: use a child
            if world_shapes is None:
                world_shapes = add_link("world_shapes")
                add_fixed(world, world_shapes, np.eye(3), np.zeros(3), "world_shapes_fixed")
            host, R, p = world_shapes, g.R, g.p
        else:
            host = body_link[int(g.body)]
            R, p = g.R, g.p
        role = "visual" if g.role == "visual" else "collision"
        if g.shape == "capsule":
            ncaps += 1
            if capsules == "cylinder+spheres":  # the exact union, in shapes every URDF reader knows
                from pbsim.model.geometry import Geometry

                r, h = float(g.size[0]), float(g.size[1])
                parts = [Geometry(g.name, "cylinder", g.body, R, p, np.array([r, h]), g.role, rgba=g.rgba)]
                for s_, suf in ((1, "_top"), (-1, "_bottom")):
                    parts.append(
                        Geometry(
                            g.name + suf, "sphere", g.body, R, p + s_ * h * R[:, 2], np.array([r]), g.role, rgba=g.rgba
                        )
                    )
                for part in parts:
                    el = etree.Element(role, name=part.name)
                    _origin(el, part.R, part.p)
                    _geometry(el, part, None)
                    if role == "visual":
                        mat = etree.SubElement(
                            el, "material", name=nvis.setdefault(tuple(np.round(g.rgba, 6)), f"mat{len(nvis)}")
                        )
                        etree.SubElement(mat, "color", rgba=fmt(*g.rgba))
                    link_el[host].append(el)
                continue
        if g.shape in ("plane", "ellipsoid", "hfield"):  # urdfdom (ROS, Pinocchio) refuses unknown geometry
            report.append(f"URDF: {g.shape} {g.name!r} dropped (URDF has no {g.shape} geometry)")
            continue
        el = etree.Element(role, name=g.name) if g.name else etree.Element(role)
        _origin(el, R, p)
        _geometry(el, g, mesh_ref(g, idx, mesh_paths, out_dir) if g.shape == "mesh" else None)
        if role == "visual":
            key = tuple(np.round(g.rgba, 6))
            mat = etree.SubElement(el, "material", name=nvis.setdefault(key, f"mat{len(nvis)}"))
            etree.SubElement(mat, "color", rgba=fmt(*g.rgba))
        # URDF wants visuals before collisions only by convention; keep inertial first
        link_el[host].append(el)

    if ncaps and capsules == "capsule":
        report.append(
            f"URDF: {ncaps} capsule(s) written as <capsule> (pybullet/pbsim dialect; ROS urdfdom and "
            "Pinocchio skip them with 'Could not parse visual element'; capsules='cylinder+spheres' "
            "writes the exact union in standard shapes)"
        )
    elif ncaps:
        report.append(f"URDF: {ncaps} capsule(s) written as a cylinder plus two spheres")
    # what URDF cannot hold
    own = dof_owner(model)
    arm = [
        (model.joint_names[own[j]], float(model.armature[j]))
        for j in range(model.nv)
        if model.armature[j] > 0 and not is_regularization_armature(model, j)
    ]
    if arm:
        names = sorted({n for n, _ in arm})
        report.append(
            f"URDF: armature (rotor inertia) dropped on {len(names)} joint(s) "
            f"{names[:6]}{' ...' if len(names) > 6 else ''}: URDF has no armature, so the mass matrix "
            "read back lacks it"
        )
    if not np.allclose(model.gravity, DEFAULT_GRAVITY):
        report.append(
            f"URDF: gravity {model.gravity.tolist()} dropped (URDF has none; readers assume {DEFAULT_GRAVITY.tolist()})"
        )
    if np.any(model.gravcomp[:, 0] != 0.0):
        report.append("URDF: gravity compensation (MJCF gravcomp) dropped: URDF has none")
    if model.fluid is not None and model.fluid.nf:
        report.append("URDF: fluid forces (MJCF <option density viscosity>) dropped: URDF has none")
    if model.q_default is not None and not np.allclose(model.q_default, model.neutral()):
        report.append("URDF: the reference configuration (q_default / MJCF qpos0, keyframes) is not representable")
    if model.contact_pairs is not None or model.contact_disabled:
        what = "disabled contact" if model.contact_disabled else f"{len(model.contact_pairs)} contact pair(s)"
        report.append(
            f"URDF: the source's contact rules ({what}: contype/conaffinity, <pair>, <exclude>, margins, "
            "friction) are not representable; pbsim's default rules apply when it is read back"
        )
    return robot


def write_urdf(model, path, mesh_paths: dict | None = None, capsules: str = "capsule") -> list[str]:
    """Write ``model`` as URDF to ``path``.

    ``mesh_paths``: optional ``{geom index: filename as written}`` (default: the mesh file's path
    relative to the output folder).  ``capsules``: "capsule" (pybullet dialect, read by pbsim and
    pybullet) or "cylinder+spheres" (the same solid in shapes ROS tools read).  Returns the list
    of things the URDF could not represent.
    """
    report: list[str] = []
    root = urdf_tree(model, path, mesh_paths, report, capsules)
    etree.ElementTree(root).write(str(path), pretty_print=True, xml_declaration=True, encoding="utf-8")
    return report
