"""ModelBuilder: links + joints (robot-file vocabulary) -> Model (bodies in topological order).

Rules applied here, once for every loader:
- fixed joints merge the child link into its parent body (inertia added, frames and shapes kept);
- a link that is merged into the world (fixed base) is static: its mass is dropped from the model;
- links without inertia are massless; a joint whose whole subtree carries no inertia along its
  motion gets armature ``MIN_ARMATURE`` on its DOFs (a warning and a note say so), so the mass
  matrix stays positive definite and nothing becomes NaN; the rest of the tree is unaffected.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from pbsim.dynamics.joints import BALL, FREE, PRISMATIC, REVOLUTE, motion_subspace
from pbsim.errors import ParseError
from pbsim.model.geometry import Frame, Geometry
from pbsim.model.inertia import check_inertia, spatial_inertia, split_spatial_inertia, transform_to_parent
from pbsim.model.model import Model

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


class ModelBuilder:
    """Collects links and joints, then :meth:`build` makes the Model."""

    def __init__(self, name: str = "robot", source: str = ""):
        self.name = name
        self.source = source
        self.links: dict[str, LinkSpec] = {}
        self.joints: list[JointSpec] = []
        self.world_links: set[str] = set()
        self.gravity = np.array([0.0, 0.0, -9.81])
        self.world_geoms: list[Geometry] = []
        self.notes: list[str] = []
        self.fix_inertia = False

    def where(self, what: str) -> str:
        return f"{self.source}: {what}" if self.source else what

    def add_link(self, link: LinkSpec) -> LinkSpec:
        if link.name in self.links:
            raise ParseError(self.where(f"link {link.name!r} is defined twice"))
        self.links[link.name] = link
        return link

    def add_joint(self, joint: JointSpec) -> JointSpec:
        if joint.type not in JOINT_TYPES:
            raise ParseError(self.where(f"joint {joint.name!r} has unknown type {joint.type!r} "
                                        f"(supported: {', '.join(sorted(JOINT_TYPES))})"))
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

            def subtree_mass(link):
                lk = self.links.get(link)
                return (lk.mass if lk else 0.0) + sum(subtree_mass(c.child) for c in kids.get(link, []))

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

        def attach_link(name, body, R, p):
            nonlocal static_mass
            link_body[name] = (body, R, p)
            frames.append(Frame(name, body, R.copy(), p.copy()))
            link = self.links.get(name)
            if link is None:
                return
            I = check_inertia(link.mass, link.inertia, self.where(f"link {name!r}"), fix=self.fix_inertia)
            if link.mass > 0:
                I6 = spatial_inertia(link.mass, link.com, I)
                if body >= 0:
                    bodies[body]["I6"] += transform_to_parent(R, p, I6)
                else:
                    static_mass += link.mass
            for g in link.geoms:
                geoms.append(Geometry(g.name, g.shape, body, R @ g.R, R @ g.p + p, g.size, g.role,
                                      g.mesh_path, g.rgba, link=name))

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
                                   I6=np.zeros((6, 6)), nv=nv, spec=j))
                attach_link(j.child, len(bodies) - 1, np.eye(3), np.zeros(3))
            for c in kids.get(j.child, []):
                visit(c)

        for j in base_joints:
            visit(j)
        if static_mass > 0:
            self.notes.append(f"links welded to the world carry {static_mass:.6g} kg that does not move")

        nb = len(bodies)
        if nb == 0:
            raise ParseError(self.where("the model has no moving joint"))
        mass = np.zeros(nb)
        com = np.zeros((nb, 3))
        Ic = np.zeros((nb, 3, 3))
        for i, b in enumerate(bodies):
            mass[i], com[i], Ic[i] = split_spatial_inertia(b["I6"])
        per_dof = lambda key, default: np.concatenate(  # noqa: E731
            [np.full(b["nv"], getattr(b["spec"], key, default), float) for b in bodies])
        lower = np.concatenate([[b["spec"].lower] if b["nv"] == 1 else np.full(b["nv"], -np.inf) for b in bodies])
        upper = np.concatenate([[b["spec"].upper] if b["nv"] == 1 else np.full(b["nv"], np.inf) for b in bodies])
        armature = per_dof("armature", 0.0)
        self._regularize_massless(bodies, armature)
        model = Model(
            name=self.name,
            body_names=[b["name"] for b in bodies],
            joint_names=[b["joint"] for b in bodies],
            parent=np.array([b["parent"] for b in bodies]),
            jtype=np.array([b["jtype"] for b in bodies]),
            axis=np.array([b["axis"] for b in bodies]),
            tree_R=np.array([b["tree_R"] for b in bodies]),
            tree_p=np.array([b["tree_p"] for b in bodies]),
            mass=mass, com=com, inertia_com=Ic,
            lower=lower, upper=upper,
            effort_limit=per_dof("effort", np.inf), velocity_limit=per_dof("velocity", np.inf),
            damping=per_dof("damping", 0.0), armature=armature,
            gravity=self.gravity.copy(), frames=frames, geoms=geoms, source=self.source,
            notes=list(self.notes),
        )
        return model

    def _regularize_massless(self, bodies, armature):
        """Give joints whose subtree has no inertia along their motion a tiny armature."""
        nb = len(bodies)
        Icomp = [b["I6"].copy() for b in bodies]
        for i in range(nb - 1, -1, -1):
            par = bodies[i]["parent"]
            if par >= 0:
                Icomp[par] += transform_to_parent(bodies[i]["tree_R"], bodies[i]["tree_p"], Icomp[i])
        off = 0
        for i, b in enumerate(bodies):
            S = motion_subspace(b["jtype"], b["axis"])[: b["nv"]]
            D = S @ Icomp[i] @ S.T + np.diag(armature[off:off + b["nv"]])
            scale = max(1.0, np.abs(Icomp[0]).max())
            if np.linalg.eigvalsh(D).min() <= 1e-12 * scale:
                armature[off:off + b["nv"]] = np.maximum(armature[off:off + b["nv"]], MIN_ARMATURE)
                msg = (f"joint {b['joint']!r} moves no mass (link {b['name']!r} and its subtree are massless "
                       f"along it): armature {MIN_ARMATURE:g} added so the mass matrix stays positive definite")
                self.notes.append(msg)
                warnings.warn(self.where(msg), stacklevel=3)
            off += b["nv"]
