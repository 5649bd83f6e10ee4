"""URDF -> Model, with our own lxml reader.

Accepted beyond the URDF spec: the pybullet dialect (``spherical`` joints, ``<capsule>``
geometry, CRLF line ends, bytes after ``</robot>`` such as a trailing NUL, a limit with
``lower > upper`` meaning "no limit", a mesh ``scale`` with extra numbers), and ``floating``
joints.  Rules (documented in docs/robots.md and ``pbsim info`` notes):
- base: a massless root link named ``world`` is the world, and its joint to the robot decides
  (fixed or floating); a root link whose ``<inertial>`` says ``mass="0"`` is static (fixed base,
  as in pybullet); otherwise the robot floats (as in pybullet, Gazebo, Drake).
  ``floating_base=True/False`` overrides either way;
- a link without ``<inertial>`` is massless; a ``mass="0"`` link keeps its rotational inertia (as
  Pinocchio); joint axis defaults to (1, 0, 0) and is normalised;
- ``<dynamics damping friction>``: viscous damping and dry friction (``Model.frictionloss``);
- ``mimic`` joints (``<mimic joint= multiplier= offset=>``, defaults 1 and 0): ``mimic="couple"``
  (default) loads them as Pinocchio's ``buildModelFromUrdf(..., mimic=True)`` does: the joint's
  ``q = multiplier * q_master + offset`` and ``v = multiplier * v_master``, no DOF of its own
  (chains resolve to the root master; :meth:`Model.mimic_coupling` gives the coupling matrix G).
  The state still carries the joint's entries in q and v (as MuJoCo and pybullet states do); the
  explicit integrators (euler, explicit_euler, rk2-4) solve the exactly coupled dynamics and set
  the slaved entries from their masters after every step (so an initial state that violates the
  coupling is corrected by the first step); the other integrators refuse a coupled model.  Only
  1-DOF revolute/continuous/prismatic joints can be coupled; an unknown master, a cycle, a
  non-finite multiplier or offset is a ``ParseError`` naming the joint.  ``mimic="independent"``
  loads them as independent joints (as Pinocchio's default and pybullet do), with a warning and a
  note; ``mimic="error"`` refuses them;
- relative mesh paths are looked up beside the file, then in its parent folders (pybullet's
  search path is usually the data root).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from lxml import etree

from pbsim.errors import MeshNotFoundError, ParseError
from pbsim.model.builder import JOINT_TYPES, JointSpec, LinkSpec, ModelBuilder
from pbsim.model.geometry import Geometry
from pbsim.model.inertia import MAX_INERTIA, MAX_LENGTH, MAX_MASS
from pbsim.model.notes import warn

MIMIC_MODES = ("couple", "independent", "error")


def rpy_to_rot(r, p, y):
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


class _Reader:
    def __init__(self, path: str, package_map: dict[str, str] | None, missing_meshes: str, mimic: str = "couple"):
        self.path = str(path)
        self.dir = Path(path).resolve().parent
        self.package_map = {k: str(v) for k, v in (package_map or {}).items()}
        self.missing_meshes = missing_meshes
        self.materials: dict[str, np.ndarray] = {}
        self.mimic = mimic
        self.notes: list[str] = []

    def at(self, el) -> str:
        line = getattr(el, "sourceline", None)
        return f"{self.path}:{line}" if line else self.path

    def err(self, el, msg, cls=ParseError):
        line = getattr(el, "sourceline", None)
        return cls(f"{self.path}:{line}: {msg}" if line else f"{self.path}: {msg}")

    def floats(self, el, attr, n, default=None, extra_ok=False, bound=None):
        s = el.get(attr)
        if s is None:
            if default is None:
                raise self.err(el, f"<{el.tag}> is missing attribute {attr!r}")
            return np.array(default, dtype=float)
        try:
            v = np.array([float(t) for t in s.replace(",", " ").split()])
        except ValueError:
            raise self.err(el, f"<{el.tag} {attr}=\"{s}\">: not a number list") from None
        if extra_ok and v.size > n:  # pybullet reads the first n numbers
            warn(
                self.notes,
                f"line {el.sourceline}: <{el.tag} {attr}=\"{s}\"> has {v.size} numbers; the first {n} "
                "are used (as pybullet does)",
                self.path,
                stacklevel=3,
            )
            v = v[:n]
        if v.size != n:
            raise self.err(el, f"<{el.tag} {attr}=\"{s}\">: expected {n} numbers, got {v.size}")
        if not np.all(np.isfinite(v)):
            raise self.err(el, f"<{el.tag} {attr}=\"{s}\">: NaN or inf")
        if bound is not None and np.abs(v).max(initial=0) > bound:
            raise self.err(el, f"<{el.tag} {attr}=\"{s}\">: beyond the bound {bound:g} (docs/reliability.md)")
        return v

    def origin(self, el):
        o = el.find("origin") if el is not None else None
        if o is None:
            return np.eye(3), np.zeros(3)
        return rpy_to_rot(*self.floats(o, "rpy", 3, (0, 0, 0), bound=MAX_LENGTH)), self.floats(
            o, "xyz", 3, (0, 0, 0), bound=MAX_LENGTH
        )

    # ------------------------------------------------------------------ meshes
    def resolve_mesh(self, el, filename: str, role: str = "collision") -> str | None:
        """The mesh file's path, or None (a note) for a missing visual mesh -- the viewer then
        draws the link's collision shapes -- or, with ``missing_meshes="warn"``, a missing
        collision mesh; a missing collision mesh is otherwise a :class:`MeshNotFoundError`."""
        tried = []
        if filename.startswith("package://"):
            rest = filename[len("package://") :]
            pkg, _, rel = rest.partition("/")
            if pkg in self.package_map:
                tried.append(os.path.join(self.package_map[pkg], rel))
            # package:///x (empty package name) and unknown packages: look beside and above the file
            for base in [self.dir, *self.dir.parents[:3]]:
                tried.append(str(base / rel))
                if pkg:
                    tried.append(str(base / pkg / rel))
        elif filename.startswith("file://"):
            tried.append(filename[len("file://") :])
        elif os.path.isabs(filename):
            tried.append(filename)
        else:  # beside the file, then above it (pybullet resolves against its search path)
            for base in [self.dir, *self.dir.parents[:3]]:
                tried.append(str(base / filename))
        for t in tried:
            if os.path.isfile(t):
                return os.path.normpath(t)
        msg = f"mesh {filename!r} not found; tried: {', '.join(dict.fromkeys(tried))}" + (
            ""
            if not filename.startswith("package://")
            else " (pass package_map={'pkg': '/path/to/pkg'} or --package pkg=/path)"
        )
        if self.missing_meshes == "error" and role != "visual":
            raise self.err(el, msg, MeshNotFoundError)
        skipped = (
            "the visual shape is skipped (drawn from collision shapes)" if role == "visual" else "the shape is skipped"
        )
        warn(self.notes, f"line {el.sourceline}: {msg}; {skipped}", self.path, stacklevel=4)
        return None

    def geometry(self, el, link: str, role: str, k: int):
        g = el.find("geometry")
        if g is None or len(g) == 0:
            raise self.err(el, f"link {link!r}: <{role}> without <geometry>")
        shape_el = g[0]
        while not isinstance(shape_el.tag, str) and shape_el.getnext() is not None:  # skip comments
            shape_el = shape_el.getnext()
        tag = shape_el.tag
        R, p = self.origin(el)
        name = el.get("name") or f"{link}_{role}{k}"
        if tag == "box":
            size, shape = self.floats(shape_el, "size", 3, bound=MAX_LENGTH) / 2, "box"
        elif tag == "sphere":
            size, shape = self.floats(shape_el, "radius", 1, bound=MAX_LENGTH), "sphere"
        elif tag in ("cylinder", "capsule"):
            rad = self.floats(shape_el, "radius", 1, bound=MAX_LENGTH)[0]
            length = self.floats(shape_el, "length", 1, bound=MAX_LENGTH)[0]
            size, shape = np.array([rad, length / 2]), tag
        elif tag == "mesh":
            fn = shape_el.get("filename")
            if not fn:
                raise self.err(shape_el, f"link {link!r}: <mesh> without filename")
            path = self.resolve_mesh(shape_el, fn, role)
            if path is None:
                return None
            scale = self.floats(shape_el, "scale", 3, (1, 1, 1), extra_ok=True) if shape_el.get("scale") else np.ones(3)
            return Geometry(name, "mesh", -1, R, p, scale, role, mesh_path=path, rgba=self.rgba(el))
        elif tag == "plane":
            size, shape = np.zeros(2), "plane"
        else:
            warn(
                self.notes,
                f"line {shape_el.sourceline}: link {link!r}: unsupported geometry <{tag}> in <{role}>; the shape is skipped",
                self.path,
            )
            return None
        return Geometry(name, shape, -1, R, p, size, role, rgba=self.rgba(el))

    def rgba(self, el):
        """A shape's colour: its <material><color rgba>, or the robot-level <material> its
        material names (``<material name="blue"/>``), else grey."""
        mat = el.find("material")
        c = None if mat is None else mat.find("color")
        if c is not None and c.get("rgba"):
            try:
                return self.floats(c, "rgba", 4)
            except ParseError:
                pass
        if mat is not None and mat.get("name") in self.materials:
            return self.materials[mat.get("name")].copy()
        return np.array([0.7, 0.7, 0.75, 1.0])

    # ------------------------------------------------------------------ document
    def parse(self, data: bytes, floating_base, fix_inertia) -> "ModelBuilder":
        end = data.rfind(b"</robot>")
        if end >= 0:
            data = data[: end + len(b"</robot>")]  # pybullet files carry a NUL byte after it
        if data.lstrip().startswith(b"<?xml"):  # some files declare version="0.0", which libxml2 refuses
            start = data.index(b"<?xml")
            stop = data.find(b"?>", start) + 2
            if stop < 2:
                raise ParseError(f"{self.path}:1: malformed XML: the <?xml declaration is not closed by ?>")
            data = data[:start] + b" " * (stop - start) + data[stop:]
        try:
            root = etree.fromstring(data, parser=etree.XMLParser(remove_comments=True, huge_tree=True))
        except etree.XMLSyntaxError as e:
            line = e.lineno if e.lineno else "?"
            raise ParseError(f"{self.path}:{line}: malformed XML: {e.msg}") from None
        if root.tag != "robot":
            raise ParseError(f"{self.path}:{root.sourceline}: root element is <{root.tag}>, expected <robot>")
        b = ModelBuilder(root.get("name") or Path(self.path).stem, self.path)
        b.fix_inertia = fix_inertia
        self.materials = {}  # the robot-level <material name><color rgba/></material> table
        for m in root.findall("material"):
            c = m.find("color")
            if m.get("name") and c is not None and c.get("rgba"):
                try:
                    self.materials[m.get("name")] = self.floats(c, "rgba", 4)
                except ParseError:
                    pass
        b.notes = self.notes
        zero_mass = set()  # links whose <inertial> says mass="0"
        for el in root.findall("link"):
            name = el.get("name")
            if not name:
                raise self.err(el, "<link> without a name")
            link = LinkSpec(name)
            inert = el.find("inertial")
            if inert is not None:
                m_el = inert.find("mass")
                link.mass = float(self.floats(m_el, "value", 1, bound=MAX_MASS)[0]) if m_el is not None else 0.0
                if m_el is not None and link.mass == 0:
                    zero_mass.add(name)
                R, p = self.origin(inert)
                i_el = inert.find("inertia")
                if i_el is not None:
                    v = {
                        a: float(self.floats(i_el, a, 1, (0.0,), bound=MAX_INERTIA)[0])
                        for a in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
                    }
                    I = np.array(
                        [[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]], [v["ixz"], v["iyz"], v["izz"]]]
                    )
                    link.inertia = R @ I @ R.T
                link.com = p
            for role in ("visual", "collision"):
                for k, g_el in enumerate(el.findall(role)):
                    g = self.geometry(g_el, name, role, k)
                    if g is not None:
                        link.geoms.append(g)
            try:
                b.add_link(link)
            except ParseError as e:
                raise self.err(el, str(e).split(": ", 1)[-1]) from None
        for el in root.findall("joint"):
            name = el.get("name") or "?"
            jt = el.get("type")
            if jt not in JOINT_TYPES:
                raise self.err(
                    el,
                    f"joint {name!r} has unknown type {jt!r} (supported: revolute, "
                    "continuous, prismatic, fixed, floating, spherical/ball)",
                )
            mim = el.find("mimic")
            mimic = None
            if mim is not None:
                what = (
                    f"joint {name!r} mimics joint {mim.get('joint')!r} (multiplier {mim.get('multiplier', '1')}, "
                    f"offset {mim.get('offset', '0')})"
                )
                if self.mimic == "error":
                    raise self.err(
                        mim,
                        f"{what}: mimic joints are refused (mimic='error'); the default mimic='couple' couples "
                        "it, mimic='independent' loads it as an independent joint",
                    )
                if self.mimic == "independent":
                    warn(
                        self.notes,
                        f"line {mim.sourceline}: {what}: loaded as an independent joint (mimic='independent'), "
                        "the coupling is dropped",
                        self.path,
                    )
                else:
                    if not mim.get("joint"):
                        raise self.err(mim, f"joint {name!r}: <mimic> without joint=")
                    if jt not in ("revolute", "continuous", "prismatic"):
                        raise self.err(
                            mim,
                            f"{what}: joint {name!r} is a {jt!r} joint; only 1-DOF revolute, continuous and "
                            "prismatic joints can be coupled (mimic='independent' loads it uncoupled)",
                        )
                    vals = []
                    for attr, default in (("multiplier", 1.0), ("offset", 0.0)):
                        try:
                            vals.append(float(self.floats(mim, attr, 1, (default,))[0]))
                        except ParseError as e:
                            raise self.err(mim, f"joint {name!r}: {str(e).split(': ', 1)[-1]}") from None
                    mimic = (mim.get("joint"), vals[0], vals[1])
            par, chi = el.find("parent"), el.find("child")
            if par is None or chi is None or not par.get("link") or not chi.get("link"):
                raise self.err(el, f"joint {name!r} needs <parent link=...> and <child link=...>")
            R, p = self.origin(el)
            ax_el = el.find("axis")
            axis = self.floats(ax_el, "xyz", 3, (1, 0, 0)) if ax_el is not None else np.array([1.0, 0, 0])
            if jt in ("revolute", "prismatic", "continuous") and np.linalg.norm(axis) < 1e-12:
                raise self.err(ax_el if ax_el is not None else el, f"joint {name!r} has a zero axis")
            j = JointSpec(name, jt, par.get("link"), chi.get("link"), R, p, axis, mimic=mimic)
            lim = el.find("limit")
            if lim is not None:
                if jt != "continuous":
                    j.lower = float(self.floats(lim, "lower", 1, (-np.inf,))[0]) if lim.get("lower") else -np.inf
                    j.upper = float(self.floats(lim, "upper", 1, (np.inf,))[0]) if lim.get("upper") else np.inf
                    if jt == "revolute" and j.lower == 0 and j.upper == 0 and lim.get("lower") is None:
                        j.lower, j.upper = -np.inf, np.inf
                if lim.get("effort"):
                    j.effort = float(self.floats(lim, "effort", 1)[0]) or np.inf
                if lim.get("velocity"):
                    j.velocity = float(self.floats(lim, "velocity", 1)[0]) or np.inf
                if j.lower > j.upper:
                    warn(
                        self.notes,
                        f"line {lim.sourceline}: joint {name!r} has lower limit {j.lower} > upper limit {j.upper}: "
                        "read as no position limit (pybullet's convention)",
                        self.path,
                    )
                    j.lower, j.upper = -np.inf, np.inf
            dyn = el.find("dynamics")
            if dyn is not None:
                for attr, key in (("damping", "damping"), ("friction", "frictionloss")):
                    if dyn.get(attr):
                        val = float(self.floats(dyn, attr, 1)[0])
                        if val < 0:
                            raise self.err(dyn, f"joint {name!r}: negative {attr} {val}")
                        setattr(j, key, val)
            b.add_joint(j)
        self.static_root = None
        children = {j.child for j in b.joints}
        roots = [n for n in b.links if n not in children]
        if len(roots) == 1 and roots[0] in zero_mass and not (roots[0] == "world" and not b.links[roots[0]].geoms):
            self.static_root = roots[0]
        return b


def load_urdf(
    path,
    floating_base: bool | None = None,
    package_map: dict | None = None,
    fix_inertia: bool = False,
    missing_meshes: str = "error",
    mimic: str = "couple",
):
    """Read a URDF file into a :class:`pbsim.Model`.

    ``floating_base``: None -> the file decides (see module doc); True/False overrides.
    ``package_map``: ``{"pkg": "/path"}`` for ``package://pkg/...`` mesh paths.
    ``fix_inertia``: project non-physical inertias instead of raising :class:`InertiaError`.
    ``missing_meshes``: "error" (default: a missing collision mesh is an error; a missing
    visual mesh is always a note, the shape skipped) or "warn" (skip missing collision meshes too).
    ``mimic``: "couple" (default: a mimic joint is slaved to its master, no DOF of its own; see
    the module doc), "independent" (load it as an independent joint, as Pinocchio and pybullet
    do by default; a warning and a note say so) or "error" (refuse it).
    """
    path = str(path)
    if missing_meshes not in ("error", "warn"):
        raise ParseError(f"{path}: missing_meshes must be 'error' or 'warn', got {missing_meshes!r}")
    if mimic not in MIMIC_MODES:
        raise ParseError(f"{path}: mimic must be one of {MIMIC_MODES}, got {mimic!r}")
    if not os.path.isfile(path):
        raise ParseError(f"{path}: no such file")
    with open(path, "rb") as f:
        data = f.read()
    reader = _Reader(path, package_map, missing_meshes, mimic)
    builder = reader.parse(data, floating_base, fix_inertia)
    if reader.static_root is not None and floating_base is None:
        builder.notes.append(
            f"root link {reader.static_root!r} has mass 0: static (fixed base), as pybullet reads it "
            "(floating_base=True lets it float)"
        )
        floating_base = False
    return builder.build(floating_base=floating_base, default_floating=True)
