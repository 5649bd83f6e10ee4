"""ModelBuilder: links + joints (robot-file vocabulary) -> Model (bodies in topological order).

Rules applied here, once for every loader:
- fixed joints merge the child link into its parent body (inertia added, frames and shapes kept);
- a link that is merged into the world (fixed base) is static: its mass is dropped from the model;
- links without inertia are massless; a ``mass="0"`` link keeps its rotational inertia (as
  Pinocchio reads it); a joint whose whole subtree carries no inertia along its motion gets
  armature ``MIN_ARMATURE`` on its DOFs (a warning and a note say so), so the mass matrix stays
  positive definite and nothing becomes NaN; the rest of the tree is unaffected;
- inertia validity is checked on the merged bodies the dynamics uses, not link by link: every link
  needs a finite, non-negative mass and a finite symmetric inertia (else :class:`InertiaError`);
  a merged body whose rotational inertia has a negative principal moment is an
  :class:`InertiaError` naming the body and its links; a link whose own inertia is not physical
  (negative moment, or the triangle inequality violated) inside a physical merged body loads with
  a :class:`~pbsim.model.notes.ModelWarning` naming the link (and a note).  ``fix_inertia=True``
  projects every non-physical link inertia to the nearest physical one instead (noted);
  links welded to the world are static and only need finite values;
- a model without any moving joint is static (``nq = nv = 0``, a note says so);
- a joint with ``JointSpec.mimic = (master, multiplier, offset)`` is slaved to its master
  (``q = multiplier * q_master + offset``, no DOF of its own; :meth:`Model.mimic_coupling`): both
  must be moving 1-DOF joints, chains resolve to the root master, a cycle or an unknown master is a
  :class:`ParseError` naming the joint.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from pbsim.dynamics.joints import BALL, FREE, PRISMATIC, REVOLUTE, motion_subspace
from pbsim.errors import InertiaError, ParseError
from pbsim.model.geometry import Frame, Geometry
from pbsim.model.inertia import (
    FIX_HINT,
    MAX_GRAVITY,
    MAX_INERTIA,
    MAX_LENGTH,
    NOT_PD,
    check_link_values,
    inertia_problem,
    principal_moments,
    project_inertia,
    spatial_inertia,
    split_spatial_inertia,
    transform_to_parent,
)
from pbsim.model.model import Model
from pbsim.model.notes import warn

MIN_ARMATURE = 1e-6
JOINT_TYPES = {"fixed": None, "revolute": REVOLUTE, "continuous": REVOLUTE, "hinge": REVOLUTE,
               "prismatic": PRISMATIC, "slide": PRISMATIC, "ball": BALL, "spherical": BALL,
               "free": FREE, "floating": FREE}


@dataclass
class LinkSpec:
    name: str
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))  # about com, link axes
    geoms: list[Geometry] = field(default_factory=list)  # placed in the link frame; body is ignored
    gravcomp: float = 0.0  # MJCF body gravcomp: this share of the link's weight is held up (Model.gravcomp)
    # MJCF fluid forces (Model.fluid): the link's principal axes in its frame (columns) and its
    # inertia box's sides (pbsim.model.fluid.inertia_box); None: the link takes no fluid force
    fluid_R: np.ndarray | None = None
    fluid_box: np.ndarray | None = None


@dataclass
class JointSpec:
    name: str
    type: str
    parent: str
    child: str
    R: np.ndarray = field(default_factory=lambda: np.eye(3))  # child link frame in parent link frame at q=0
    p: np.ndarray = field(default_factory=lambda: np.zeros(3))
    axis: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0]))
    lower: float = -np.inf
    upper: float = np.inf
    effort: float = np.inf
    velocity: float = np.inf
    damping: float = 0.0
    armature: float = 0.0
    stiffness: float = 0.0  # joint spring: tau = -stiffness * (q - springref); ball/free: pbsim.dynamics.passive.ball_springs
    springref: float = 0.0
    frictionloss: float = 0.0  # dry joint friction (MJCF frictionloss, URDF <dynamics friction>)
    # coupled mimic joint (URDF <mimic>): (master joint name, multiplier, offset), q = m q_master + o
    mimic: tuple | None = None


class ModelBuilder:
    """Collects links and joints, then :meth:`build` makes the Model."""

    def __init__(self, name: str = "robot", source: str = ""):
        self.name = name
        self.source = source
        self.links: dict[str, LinkSpec] = {}
        self.joints: list[JointSpec] = []
        self.world_links: set[str] = set()
        self.gravity = np.array([0.0, 0.0, -9.81])
        self.fluid_medium = None  # (density, viscosity, wind (3,)) of MJCF <option>: Model.fluid
        self.world_geoms: list[Geometry] = []
        self.notes: list[str] = []
        self.fix_inertia = False
        self.springref: np.ndarray | None = None  # (nq,) spring rest configuration; None: from the joints

    def where(self, what: str) -> str:
        return f"{self.source}: {what}" if self.source else what

    def _add_link(self, link: LinkSpec) -> LinkSpec:
        if link.name in self.links:
            raise ParseError(self.where(f"link {link.name!r} is defined twice"))
        self.links[link.name] = link
        return link

    def add_link(self, link: LinkSpec) -> LinkSpec:
        com = np.asarray(link.com, float)
        if not np.all(np.isfinite(com)) or np.abs(com).max(initial=0) > MAX_LENGTH:
            raise ParseError(self.where(f"link {link.name!r}: centre of mass {com.tolist()} is not finite or "
                                        f"beyond {MAX_LENGTH:g} m (docs/reliability.md)"))
        return self._add_link(link)

    def add_joint(self, joint: JointSpec) -> JointSpec:
        if joint.type not in JOINT_TYPES:
            raise ParseError(self.where(f"joint {joint.name!r} has unknown type {joint.type!r} "
                                        f"(supported: {', '.join(sorted(JOINT_TYPES))})"))
        R, p = np.asarray(joint.R, float), np.asarray(joint.p, float)
        if not (np.all(np.isfinite(R)) and np.all(np.isfinite(p))) or np.abs(p).max(initial=0) > MAX_LENGTH:
            raise ParseError(self.where(f"joint {joint.name!r}: placement {p.tolist()} is not finite or beyond "
                                        f"{MAX_LENGTH:g} m (docs/reliability.md)"))
        for key in ("damping", "armature", "stiffness", "frictionloss"):
            val = float(getattr(joint, key))
            if not np.isfinite(val) or (val < 0 and key != "stiffness") or (key == "armature" and val > MAX_INERTIA):
                raise ParseError(self.where(f"joint {joint.name!r}: {key} {val!r} must be finite and >= 0"))
        ax = np.asarray(joint.axis, dtype=float)
        n = np.linalg.norm(ax)
        if JOINT_TYPES[joint.type] in (REVOLUTE, PRISMATIC):
            if not np.isfinite(n) or n < 1e-12:
                raise ParseError(self.where(f"joint {joint.name!r} has a zero or invalid axis {ax.tolist()}"))
            joint.axis = ax / n
        self.joints.append(joint)
        return joint

    # ------------------------------------------------------------------ build
    def build(self, floating_base: bool | None = None, default_floating: bool = True) -> Model:
        g = np.asarray(self.gravity, float)
        if not np.all(np.isfinite(g)) or np.abs(g).max(initial=0) > MAX_GRAVITY:
            raise ParseError(self.where(f"gravity {g.tolist()} is not finite or beyond {MAX_GRAVITY:g} m/s^2 "
                                        "(docs/reliability.md)"))
        for j in self.joints:
            for end in (j.parent, j.child):
                if end not in self.links and end not in self.world_links:
                    raise ParseError(self.where(f"joint {j.name!r} refers to unknown link {end!r}"))
        child_of = {}
        for j in self.joints:
            if j.child in child_of:
                raise ParseError(self.where(f"link {j.child!r} is the child of two joints "
                                            f"({child_of[j.child].name!r}, {j.name!r}): not a tree"))
            child_of[j.child] = j
        roots = [n for n in list(self.links) + sorted(self.world_links) if n not in child_of]
        if len(roots) != 1:
            raise ParseError(self.where(f"expected one root link, found {len(roots)}: {roots}"))
        root = roots[0]
        kids: dict[str, list[JointSpec]] = {}
        for j in self.joints:
            kids.setdefault(j.parent, []).append(j)

        # the world: an explicit world link, or (fixed base) the root link itself
        is_world_root = root in self.world_links or (
            root == "world" and self.links[root].mass == 0 and not self.links[root].geoms)
        base_joints = []
        if is_world_root:
            world_kids = kids.get(root, [])
            has_free = any(JOINT_TYPES[j.type] == FREE for j in world_kids)

            def subtree_mass(link):  # iterative: a tree's depth is limited by memory only
                total, stack = 0.0, [link]
                while stack:
                    name = stack.pop()
                    lk = self.links.get(name)
                    total += lk.mass if lk else 0.0
                    stack.extend(c.child for c in kids.get(name, []))
                return total

            for j in world_kids:
                t = JOINT_TYPES[j.type]
                if floating_base is True and t is None and not has_free and subtree_mass(j.child) > 0:
                    j.type = "free"  # welded robot made floating; massless static links stay welded
                elif floating_base is False and t == FREE:
                    j.type = "fixed"
                base_joints.append(j)
            world_name = root
        else:
            floating = default_floating if floating_base is None else floating_base
            world_name = "world"
            base_joints = [JointSpec(name=f"{root}_root" if floating else f"{root}_weld",
                                     type="free" if floating else "fixed", parent=world_name, child=root)]

        # depth-first traversal: parent body always before child body
        bodies: list[dict] = []
        link_body: dict[str, tuple[int, np.ndarray, np.ndarray]] = {world_name: (-1, np.eye(3), np.zeros(3))}
        frames = [Frame(world_name, -1, np.eye(3), np.zeros(3))]
        geoms: list[Geometry] = list(self.world_geoms)
        static_mass = 0.0
        fluid_parts = []  # (body, principal frame and centre in the body frame, box, link)

        def attach_link(name, body, R, p):
            nonlocal static_mass
            link_body[name] = (body, R, p)
            frames.append(Frame(name, body, R.copy(), p.copy()))
            link = self.links.get(name)
            if link is None:
                return
            where = self.where(f"link {name!r}")
            I = check_link_values(link.mass, link.inertia, where, fix=self.fix_inertia)
            if body < 0:  # welded to the world: static, its inertia never enters the dynamics
                static_mass += link.mass
            else:
                what = inertia_problem(I)
                if what is not None:
                    if self.fix_inertia:
                        I2 = project_inertia(link.mass, I)
                        self.notes.append(f"link {name!r}: inertia with principal moments {principal_moments(I)} "
                                          f"{what}; projected to {principal_moments(I2)} (fix_inertia)")
                        I = I2
                    else:
                        bodies[body]["issues"].append((name, what, principal_moments(I)))
                if link.mass > 0 or np.any(I):
                    bodies[body]["I6"] += transform_to_parent(R, p, spatial_inertia(link.mass, link.com, I))
                if link.gravcomp != 0.0:  # the held-up mass and its first moment, in the body frame
                    gm = link.gravcomp * link.mass
                    bodies[body]["gc"] += np.concatenate([[gm], gm * (R @ np.asarray(link.com, float) + p)])
                bodies[body]["links"].append(name)
                if link.fluid_box is not None:
                    fluid_parts.append((body, R @ link.fluid_R, R @ np.asarray(link.com, float) + p,
                                        np.asarray(link.fluid_box, float), name))
            for g in link.geoms:
                # a copy placed in its body: every other field (contact parameters, source_index) kept
                geoms.append(dataclasses.replace(g, body=body, R=R @ g.R, p=R @ g.p + p, link=name))

        def visit(j: JointSpec):
            pb, pR, pp = link_body[j.parent]
            R = pR @ j.R
            p = pR @ j.p + pp
            t = JOINT_TYPES[j.type]
            if t is None:
                attach_link(j.child, pb, R, p)
            else:
                nv = {REVOLUTE: 1, PRISMATIC: 1, BALL: 3, FREE: 6}[t]
                bodies.append(dict(name=j.child, joint=j.name, parent=pb, jtype=t, tree_R=R, tree_p=p,
                                   axis=np.asarray(j.axis, float) if t in (REVOLUTE, PRISMATIC) else np.zeros(3),
                                   I6=np.zeros((6, 6)), nv=nv, spec=j, links=[], issues=[], gc=np.zeros(4)))
                attach_link(j.child, len(bodies) - 1, np.eye(3), np.zeros(3))

        # iterative pre-order walk (same order as the recursive one): depth limited by memory only
        stack = list(reversed(base_joints))
        while stack:
            j = stack.pop()
            visit(j)
            stack.extend(reversed(kids.get(j.child, [])))
        unreached = [n for n in self.links if n not in link_body]
        if unreached:
            raise ParseError(self.where(f"link(s) {unreached[:8]} are not connected to the root link {root!r} "
                                        "(their joints form a cycle)"))
        if static_mass > 0:
            self.notes.append(f"links welded to the world carry {static_mass:.6g} kg that does not move")

        nb = len(bodies)
        if nb == 0:
            self.notes.append("no moving joint: the model is static (nq = nv = 0)")
        mass = np.zeros(nb)
        com = np.zeros((nb, 3))
        Ic = np.zeros((nb, 3, 3))
        point_masses = []
        for i, b in enumerate(bodies):
            mass[i], com[i], Ic[i] = split_spatial_inertia(b["I6"])
            self._check_body_inertia(b, mass[i], Ic[i])
            if mass[i] > 0 and not np.any(Ic[i]):
                point_masses.append(b["name"])
        if point_masses:
            self.notes.append(f"{len(point_masses)} bod{'ies' if len(point_masses) > 1 else 'y'} with zero rotational "
                              f"inertia (point masses): {point_masses[:8]}{' ...' if len(point_masses) > 8 else ''}")

        def per_dof(key, default):
            return np.concatenate([np.full(b["nv"], getattr(b["spec"], key, default), float) for b in bodies]
                                  + [np.zeros(0)])

        def one_dof(key, default):
            return np.concatenate([[getattr(b["spec"], key)] if b["nv"] == 1 else np.full(b["nv"], default)
                                   for b in bodies] + [np.zeros(0)])

        lower, upper = one_dof("lower", -np.inf), one_dof("upper", np.inf)
        stiffness = per_dof("stiffness", 0.0)  # ball/free: MuJoCo's rotational (and translational) spring
        armature = per_dof("armature", 0.0)
        self._regularize_massless(bodies, armature)
        mimic = self._resolve_mimic(bodies)
        model = Model(
            name=self.name,
            body_names=[b["name"] for b in bodies],
            joint_names=[b["joint"] for b in bodies],
            parent=np.array([b["parent"] for b in bodies], dtype=np.int32),
            jtype=np.array([b["jtype"] for b in bodies], dtype=np.int32),
            axis=np.array([b["axis"] for b in bodies]).reshape(nb, 3),
            tree_R=np.array([b["tree_R"] for b in bodies]).reshape(nb, 3, 3),
            tree_p=np.array([b["tree_p"] for b in bodies]).reshape(nb, 3),
            mass=mass, com=com, inertia_com=Ic,
            lower=lower, upper=upper,
            effort_limit=per_dof("effort", np.inf), velocity_limit=per_dof("velocity", np.inf),
            damping=per_dof("damping", 0.0), armature=armature,
            gravity=self.gravity.copy(), frames=frames, geoms=geoms, source=self.source,
            notes=list(self.notes),
            stiffness=stiffness, frictionloss=per_dof("frictionloss", 0.0),
            springref=self._springref(bodies),
            mimic=mimic,
            gravcomp=np.array([b["gc"] for b in bodies]).reshape(nb, 4) if any(b["gc"][0] for b in bodies) else None,
            fluid=self._fluid(fluid_parts),
        )
        return model

    def _fluid(self, parts):
        """``Model.fluid`` from the medium and the moving links' inertia boxes (None: no medium)."""
        if self.fluid_medium is None:
            return None
        from pbsim.model.fluid import Fluid

        rho, beta, wind = self.fluid_medium
        return Fluid(density=rho, viscosity=beta, wind=wind, body=[t[0] for t in parts],
                     R=np.array([t[1] for t in parts]).reshape(-1, 3, 3), p=np.array([t[2] for t in parts]).reshape(-1, 3),
                     box=np.array([t[3] for t in parts]).reshape(-1, 3), names=[t[4] for t in parts])

    def _resolve_mimic(self, bodies) -> list:
        """``[(slave, root master, multiplier, offset)]`` of the coupled mimic joints, chains
        (a mimic of a mimic) composed down to the root master; a note per joint."""
        specs = {j.name: j for j in self.joints}
        moving = {b["joint"]: b for b in bodies}
        direct = {}
        for j in self.joints:
            if j.mimic is None:
                continue
            master, mult, off = j.mimic[0], float(j.mimic[1]), float(j.mimic[2])
            what = f"joint {j.name!r} mimics joint {master!r}"
            if not (np.isfinite(mult) and np.isfinite(off)):
                raise ParseError(self.where(f"{what}: multiplier {mult} and offset {off} must be finite"))
            for name, role in ((j.name, "mimic joint"), (master, "mimicked joint")):
                if name not in specs:
                    raise ParseError(self.where(f"{what}, which does not exist"))
                b = moving.get(name)
                if b is None or b["jtype"] not in (REVOLUTE, PRISMATIC):
                    raise ParseError(self.where(
                        f"{what}: the {role} {name!r} is a {specs[name].type!r} joint; only "
                        "1-DOF revolute, continuous and prismatic joints can be coupled"))
            direct[j.name] = (master, mult, off)
        out = []
        for slave in direct:
            master, mult, off = direct[slave]
            seen = [slave]
            while master in direct:  # q_s = m (m2 q_r + o2) + o = (m m2) q_r + (m o2 + o)
                if master in seen:
                    raise ParseError(self.where(
                        f"joint {slave!r}: mimic joints form a cycle ({' -> '.join(seen + [master])})"))
                seen.append(master)
                m2, mult2, off2 = direct[master]
                master, mult, off = m2, mult * mult2, mult * off2 + off
            out.append((slave, master, mult, off))
            self.notes.append(f"joint {slave!r} mimics {master!r}: q = {mult:g}*q_{master} + {off:g} (no DOF of "
                              "its own; carried in q, kept by the integrators)")
        return out

    def _springref(self, bodies) -> np.ndarray:
        """(nq,) rest configuration of the joint springs: the loader's, else each 1-DOF joint's
        ``springref`` and identity quaternions / the placement for ball and free joints."""
        if self.springref is not None:
            return np.asarray(self.springref, float)
        out = []
        for b in bodies:
            if b["nv"] == 1:
                out.append([getattr(b["spec"], "springref", 0.0)])
            else:  # ball (w,x,y,z) = identity; free: zero position, identity quaternion
                out.append([1.0, 0, 0, 0] if b["nv"] == 3 else [0.0, 0, 0, 1.0, 0, 0, 0])
        return np.concatenate(out + [np.zeros(0)])

    def _check_body_inertia(self, b, mass, Ic):
        """A merged body's inertia (see module doc): error if not positive (semi-)definite,
        a warning per non-physical link otherwise."""
        what = inertia_problem(Ic)
        links = b["links"] or [b["name"]]
        merged = f"link {links[0]!r}" + (f" and {links[1:]} fixed to it" if len(links) > 1 else "")
        if what == NOT_PD:
            bad = "; ".join(f"link {n!r} alone has principal moments {w}" for n, _, w in b["issues"])
            raise InertiaError(self.where(
                f"body {b['name']!r} of joint {b['joint']!r} ({merged}): merged inertia with principal moments "
                f"{principal_moments(Ic)} {what}{'; ' + bad if bad else ''} ({FIX_HINT})"))
        for name, w_what, w in b["issues"]:
            warn(self.notes, f"link {name!r}: inertia with principal moments {w} {w_what}; loaded as written, "
                 f"since body {b['name']!r} ({merged}) has no negative principal moment ({FIX_HINT})",
                 self.source, stacklevel=4)
        if what is not None and not b["issues"]:
            warn(self.notes, f"body {b['name']!r} ({merged}): merged inertia with principal moments "
                 f"{principal_moments(Ic)} {what}", self.source, stacklevel=4)

    def _regularize_massless(self, bodies, armature):
        """Give a joint a tiny armature where the mass matrix would be singular along its motion.

        The test is ABA's own pivot: the articulated-body inertia ``IA`` of each body (its merged
        inertia plus its children's, each with the child joint's own motion projected out,
        Featherstone's backward pass at rest), ``D = S IA S^T + armature``.  D is singular when the
        joint's subtree is massless along it, and also when the body itself is massless and every
        motion of the joint can be absorbed by a child joint (a mass-0 floating root with one
        moving child: the root turns, the child turns back, nothing moves).  Iterative, O(n)."""
        nb = len(bodies)
        Icomp = [b["I6"].copy() for b in bodies]
        for i in range(nb - 1, -1, -1):
            par = bodies[i]["parent"]
            if par >= 0:
                Icomp[par] += transform_to_parent(bodies[i]["tree_R"], bodies[i]["tree_p"], Icomp[i])
        scale = max([1.0] + [np.abs(Icomp[i]).max() for i in range(nb) if bodies[i]["parent"] < 0])
        offs = np.concatenate([[0], np.cumsum([b["nv"] for b in bodies])]).astype(int)
        IA = [b["I6"].copy() for b in bodies]
        for i in range(nb - 1, -1, -1):
            b = bodies[i]
            sl = slice(offs[i], offs[i] + b["nv"])
            S = motion_subspace(b["jtype"], b["axis"])[: b["nv"]]
            U = IA[i] @ S.T
            D = S @ U + np.diag(armature[sl])
            if np.linalg.eigvalsh(0.5 * (D + D.T)).min() <= 1e-12 * scale:
                armature[sl] = np.maximum(armature[sl], MIN_ARMATURE)
                D = S @ U + np.diag(armature[sl])
                msg = (f"joint {b['joint']!r} moves no mass along some direction (link {b['name']!r} and its "
                       "subtree are massless along it, or only the child joints' own motion moves them): "
                       f"armature {MIN_ARMATURE:g} added so the mass matrix stays positive definite")
                warn(self.notes, msg, self.source, stacklevel=4)
            par = b["parent"]
            if par >= 0:
                Ia = IA[i] - U @ np.linalg.solve(D, U.T)
                IA[par] += transform_to_parent(b["tree_R"], b["tree_p"], 0.5 * (Ia + Ia.T))
