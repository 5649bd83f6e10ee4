"""The robot Model: constant arrays, bodies in topological order (parent < child)."""
from __future__ import annotations

import json
from collections import namedtuple
from dataclasses import dataclass, field

import numpy as np

from pbsim.dynamics.joints import BALL, FREE, JOINT_NAMES, PRISMATIC, REVOLUTE
from pbsim.errors import InputError
from pbsim.model.geometry import ContactPair, Frame, Geometry  # noqa: F401 (ContactPair re-exported)

# What the kernels see: a namedtuple of arrays (passes to numba njit and CUDA kernels alike).
KModel = namedtuple(
    "KModel",
    "nb nq nv parent jtype iq iv nqj nvj tree_R tree_p axis S inertia mass com gravity armature damping "
    "lower upper limit_kp limit_kd stiffness springref frictionloss "
    "mimic_qs mimic_qm mimic_vs mimic_vm mimic_mult mimic_off "
    # tendons (pbsim.model.tendons; ten_nt = [tendons, spatial tendons])
    "ten_nt ten_kind ten_adr ten_wtype ten_wbody ten_dof ten_qadr ten_prm ten_pos ten_rot ten_side ten_sbody "
    "ten_k ten_b ten_ls ten_range ten_lkp ten_lkd ten_fl"
    # equality constraints (pbsim.model.equality)
    " eq_type eq_row eq_nrow eq_body eq_point eq_quat eq_jq eq_jv eq_ten_q eq_ten_v eq_ref eq_poly"
    # gravity compensation (Model.gravcomp; pbsim.dynamics.gravcomp)
    " gravcomp"
    # fluid forces (Model.fluid, pbsim.model.fluid; pbsim.dynamics.fluid)
    " fl_medium fl_body fl_R fl_p fl_box"
    # MuJoCo's joint-limit constraint (Model.soft_limits, pbsim.model.limits; pbsim.dynamics.limits)
    # and the tendons' armature, held the same way (lim_arm)
    " lim_kind lim_idx lim_qadr lim_prm lim_soft lim_tsoft lim_arm",
)


@dataclass(eq=False)
class Model:
    """A robot in a scene.  Built once (``pbsim.load`` or :class:`ModelBuilder`), never mutated
    by the simulation.  Per-body arrays have length ``nb``; per-DOF arrays length ``nv``."""

    name: str
    body_names: list[str]
    joint_names: list[str]
    parent: np.ndarray  # (nb,) int32, -1 = world
    jtype: np.ndarray  # (nb,) int32, see pbsim.dynamics.joints
    axis: np.ndarray  # (nb, 3) unit joint axis in the body frame
    tree_R: np.ndarray  # (nb, 3, 3) joint frame in parent body frame, at q = 0
    tree_p: np.ndarray  # (nb, 3)
    mass: np.ndarray  # (nb,)
    com: np.ndarray  # (nb, 3) centre of mass in the body frame
    inertia_com: np.ndarray  # (nb, 3, 3) rotational inertia about the com, body axes
    lower: np.ndarray  # (nv,) position limits (-inf where none; ball/free have none)
    upper: np.ndarray  # (nv,)
    effort_limit: np.ndarray  # (nv,) inf where none
    velocity_limit: np.ndarray  # (nv,)
    damping: np.ndarray  # (nv,) viscous joint damping: tau_passive = -damping * v
    armature: np.ndarray  # (nv,) rotor inertia added to the diagonal of M
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))
    frames: list[Frame] = field(default_factory=list)
    geoms: list[Geometry] = field(default_factory=list)
    q_default: np.ndarray | None = None  # the file's reference configuration (MJCF qpos0)
    source: str = ""
    notes: list[str] = field(default_factory=list)  # what the loader changed or assumed
    # Passive joint forces the files describe (kept for the dynamics; not in the kernels' KModel):
    stiffness: np.ndarray | None = None  # (nv,) joint spring stiffness (ball/free: per DOF, MuJoCo's), 0 where none
    springref: np.ndarray | None = None  # (nq,) the spring's rest configuration (MJCF qpos_spring); neutral()
    frictionloss: np.ndarray | None = None  # (nv,) dry joint friction torque/force (MJCF frictionloss,
    #                                          URDF <dynamics friction>), 0 where none
    # joint-limit spring-damper (N m/rad, N m s/rad; N/m for prismatic): None = pbsim.model.limits defaults
    limit_stiffness: np.ndarray | None = None
    limit_damping: np.ndarray | None = None
    actuators: object = None  # pbsim.control.actuators.Actuators (MJCF <actuator>); None: none
    # coupled mimic joints: [(slave joint, root master joint, multiplier, offset)], q_slave =
    # multiplier * q_master + offset, v_slave = multiplier * v_master (no DOF of its own; the slave
    # keeps its entries in q and v, the explicit integrators keep them coupled)
    mimic: list = field(default_factory=list)
    # Which shapes may touch (pbsim.contact.filter): a list of ContactPair when the file decides
    # (MJCF: MuJoCo's contype/conaffinity, parent and weld filtering, <exclude>, <pair>), None when
    # it has no such data (URDF, generated models: the contact layer's default rules)
    contact_pairs: list | None = None
    contact_disabled: bool = False  # MJCF <option><flag contact="disable"/>: nothing touches
    # (nb,) which part of a combined model each body belongs to (pbsim.model.compose.combine; None: one
    # part): bodies of different parts may always touch (pbsim's default contact rules)
    body_group: np.ndarray | None = None
    # named states from the file (MJCF <keyframe>): name -> pbsim.model.keyframes.Keyframe
    keyframes: dict = field(default_factory=dict)
    # equality constraints (MJCF <equality>): pbsim.model.equality.Equality, held exactly by the
    # explicit steps (pbsim.dynamics.equality); only active ones reach the kernels
    equality: list = field(default_factory=list)
    tendons: object = None  # pbsim.model.tendons.Tendons (MJCF <tendon>); None: none
    # gravity compensation (MJCF body gravcomp): (nb, 4) per body, the mass whose weight is held up
    # [kg] and its first moment in the body frame [kg m] (a force -m_gc g at that mass's centre,
    # pbsim.dynamics.gravcomp); None: none (zeros)
    gravcomp: np.ndarray | None = None
    # fluid forces (MJCF <option density viscosity wind>): pbsim.model.fluid.Fluid, MuJoCo's
    # inertia-box model (pbsim.dynamics.fluid); None: none
    fluid: object = None
    # MuJoCo's soft joint-limit constraint (MJCF ranges): pbsim.model.limits.SoftLimits, the law
    # the explicit methods hold those DOFs by (pbsim.dynamics.limits); None: the spring-damper alone
    soft_limits: object = None

    def __post_init__(self):
        nb = len(self.body_names)
        self.parent = np.ascontiguousarray(self.parent, dtype=np.int32)
        self.jtype = np.ascontiguousarray(self.jtype, dtype=np.int32)
        nqj = np.array([{REVOLUTE: 1, PRISMATIC: 1, BALL: 4, FREE: 7}[int(t)] for t in self.jtype], np.int32)
        nvj = np.array([{REVOLUTE: 1, PRISMATIC: 1, BALL: 3, FREE: 6}[int(t)] for t in self.jtype], np.int32)
        self.nqj, self.nvj = nqj, nvj
        self.iq = np.concatenate([[0], np.cumsum(nqj)[:-1]]).astype(np.int32) if nb else np.zeros(0, np.int32)
        self.iv = np.concatenate([[0], np.cumsum(nvj)[:-1]]).astype(np.int32) if nb else np.zeros(0, np.int32)
        self.nb = nb
        self.nq = int(nqj.sum())
        self.nv = int(nvj.sum())
        for a in ("axis", "tree_R", "tree_p", "mass", "com", "inertia_com", "lower", "upper",
                  "effort_limit", "velocity_limit", "damping", "armature", "gravity"):
            setattr(self, a, np.ascontiguousarray(getattr(self, a), dtype=np.float64))
        for a, n in (("stiffness", self.nv), ("frictionloss", self.nv)):
            x = np.zeros(n) if getattr(self, a) is None else getattr(self, a)
            setattr(self, a, np.ascontiguousarray(x, dtype=np.float64).reshape(n))
        self.springref = np.ascontiguousarray(self.neutral() if self.springref is None else self.springref,
                                              dtype=np.float64).reshape(self.nq)
        self.gravcomp = np.ascontiguousarray(np.zeros((nb, 4)) if self.gravcomp is None else self.gravcomp,
                                             dtype=np.float64).reshape(nb, 4)
        from pbsim.model.inertia import spatial_inertia

        self.inertia = np.stack([spatial_inertia(self.mass[i], self.com[i], self.inertia_com[i])
                                 for i in range(nb)]) if nb else np.zeros((0, 6, 6))
        from pbsim.dynamics.joints import motion_subspace

        self.S = np.stack([motion_subspace(int(self.jtype[i]), self.axis[i]) for i in range(nb)]) \
            if nb else np.zeros((0, 6, 6))
        self.mimic = [(str(a), str(b), float(c), float(d)) for a, b, c, d in self.mimic]
        for a, b, _, _ in self.mimic:
            for n in (a, b):
                i = self.joint_index(n)
                if self.jtype[i] not in (REVOLUTE, PRISMATIC):
                    raise InputError(f"model {self.name!r}: mimic joint {n!r} is a {self.joint_type_name(i)} "
                                     "joint; only 1-DOF revolute/prismatic joints can be coupled")
        idx = [(int(self.iq[self.joint_index(a)]), int(self.iq[self.joint_index(b)]),
                int(self.iv[self.joint_index(a)]), int(self.iv[self.joint_index(b)])) for a, b, _, _ in self.mimic]
        k = len(self.mimic)
        self.mimic_qs, self.mimic_qm, self.mimic_vs, self.mimic_vm = (
            np.array([t[c] for t in idx], np.int64).reshape(k) for c in range(4))
        self.mimic_mult = np.array([t[2] for t in self.mimic], np.float64).reshape(k)
        self.mimic_off = np.array([t[3] for t in self.mimic], np.float64).reshape(k)
        self._k = None

    # ------------------------------------------------------------------ kernels
    @property
    def k(self) -> KModel:
        """The arrays the kernels read, as one namedtuple."""
        if self._k is None:
            kp, kd = self.limit_gains()
            self._k = KModel(self.nb, self.nq, self.nv, self.parent, self.jtype, self.iq, self.iv,
                             self.nqj, self.nvj, self.tree_R, self.tree_p, self.axis, self.S,
                             self.inertia, self.mass, self.com, self.gravity, self.armature, self.damping,
                             self.lower, self.upper, kp, kd, self.stiffness, self.springref, self.frictionloss,
                             self.mimic_qs, self.mimic_qm, self.mimic_vs, self.mimic_vm, self.mimic_mult,
                             self.mimic_off, **self._tendon_fields(), **self._equality_arrays(),
                             gravcomp=self.gravcomp, **self._fluid_fields(), **self._limit_fields())
            # a read-only field (a broadcast view, a frozen array) would change the kernels' types
            # and compile every kernel again for this model: writeable copies instead
            self._k = KModel(*(np.array(a) if isinstance(a, np.ndarray) and not a.flags.writeable else a
                               for a in self._k))
        return self._k

    def _fluid_fields(self) -> dict:
        from pbsim.model.fluid import Fluid

        f = self.fluid if self.fluid is not None else Fluid()
        if f.nf and (f.body.min() < 0 or f.body.max() >= self.nb):
            raise InputError(f"model {self.name!r}: fluid parts name bodies outside 0..{self.nb - 1}")
        return f.kernel_fields()

    def _limit_fields(self) -> dict:
        from pbsim.model.limits import SoftLimits

        lim = self.soft_limits if self.soft_limits is not None and not self.mimic else SoftLimits()
        return lim.kernel_fields(self, armature=not self.mimic)

    def _tendon_fields(self) -> dict:
        from pbsim.model.tendons import Tendons

        return (self.tendons if self.tendons is not None else Tendons()).kernel_fields()

    @property
    def ntendon(self) -> int:
        """Number of tendons (MJCF ``<tendon>``, :mod:`pbsim.model.tendons`)."""
        return 0 if self.tendons is None else self.tendons.nt

    def _equality_arrays(self) -> dict:
        from pbsim.model.equality import check_equality, equality_arrays

        check_equality(self)
        return equality_arrays(self)

    @property
    def neq_rows(self) -> int:
        """Rows of the active equality constraints (3 connect, 6 weld, 1 joint/tendon)."""
        from pbsim.model.equality import equality_rows

        return equality_rows(self.equality)

    # ------------------------------------------------------------------ mimic joints
    @property
    def nmimic(self) -> int:
        """Number of coupled mimic joints (constraints ``q_s = m q_master + o``)."""
        return len(self.mimic)

    def mimic_coupling(self) -> tuple[np.ndarray, np.ndarray]:
        """``(G, free)``: ``free`` (nv - k,) the v-indices that are DOFs of their own (every index
        but the mimic joints'), ``G`` (nv, nv - k) the coupling ``v = G v[free]``.  The reduced
        mass matrix of the coupled model is ``G.T @ M @ G`` (Pinocchio's ``mimic=True`` model)."""
        free = np.setdiff1d(np.arange(self.nv), self.mimic_vs).astype(np.int64)
        col = {int(j): c for c, j in enumerate(free)}
        G = np.zeros((self.nv, free.size))
        for c, j in enumerate(free):
            G[j, c] = 1.0
        for s, mj, mult in zip(self.mimic_vs, self.mimic_vm, self.mimic_mult):
            G[s, col[int(mj)]] = mult
        return G, free

    def mimic_project(self, q, v=None):
        """Copies of ``q`` (and ``v``) (single or batched) with the mimic joints set from their
        masters: ``q_s = m q_master + o``, ``v_s = m v_master`` (what the integrators do after
        every step)."""
        q = np.array(q, dtype=np.float64)
        q[..., self.mimic_qs] = self.mimic_mult * q[..., self.mimic_qm] + self.mimic_off
        if v is None:
            return q
        v = np.array(v, dtype=np.float64)
        v[..., self.mimic_vs] = self.mimic_mult * v[..., self.mimic_vm]
        return q, v

    def limit_gains(self) -> tuple[np.ndarray, np.ndarray]:
        """``(kp, kd)`` (nv,) of the joint-limit spring-damper: ``limit_stiffness``/``limit_damping``
        where given, else :func:`pbsim.model.limits.default_limit_gains` (0 where no finite limit)."""
        from pbsim.model.limits import default_limit_gains

        kp, kd = default_limit_gains(self)
        if self.limit_stiffness is not None:
            kp = np.ascontiguousarray(np.broadcast_to(self.limit_stiffness, (self.nv,)), np.float64)
        if self.limit_damping is not None:
            kd = np.ascontiguousarray(np.broadcast_to(self.limit_damping, (self.nv,)), np.float64)
        return np.ascontiguousarray(kp), np.ascontiguousarray(kd)

    @property
    def nu(self) -> int:
        """Number of actuators (``Control(ctrl=u)`` takes u of this length)."""
        return 0 if self.actuators is None else self.actuators.nu

    @property
    def na(self) -> int:
        """Number of actuator activations (``State.act``; actuators with ``dyntype`` != none)."""
        return 0 if self.actuators is None else self.actuators.na

    @property
    def actuator_names(self) -> list[str]:
        return [] if self.actuators is None else list(self.actuators.names)

    # ------------------------------------------------------------------ configurations
    def neutral(self) -> np.ndarray:
        """Zero angles and displacements, identity quaternions, free bases at their placement."""
        q = np.zeros(self.nq)
        for i in range(self.nb):
            k = self.iq[i]
            if self.jtype[i] == BALL:
                q[k] = 1.0
            elif self.jtype[i] == FREE:
                q[k + 3] = 1.0
        return self.mimic_project(q) if getattr(self, "mimic_qs", None) is not None and self.mimic else q

    def default_configuration(self) -> np.ndarray:
        """The file's own reference pose (MJCF qpos0 / keyframe) or :meth:`neutral`."""
        return self.neutral() if self.q_default is None else self.q_default.copy()

    def random_configuration(self, rng=None) -> np.ndarray:
        """Uniform within joint limits (±pi where unlimited); random unit quaternions;
        free-base positions within ±1 m."""
        rng = np.random.default_rng(rng)
        q = np.zeros(self.nq)
        for i in range(self.nb):
            k, j = self.iq[i], self.iv[i]
            t = self.jtype[i]
            if t in (REVOLUTE, PRISMATIC):
                lo, hi = self.lower[j], self.upper[j]
                lo = -np.pi if not np.isfinite(lo) else lo
                hi = np.pi if not np.isfinite(hi) else hi
                q[k] = rng.uniform(lo, hi)
            elif t == BALL:
                u = rng.normal(size=4)
                q[k:k + 4] = u / np.linalg.norm(u)
            else:
                q[k:k + 3] = rng.uniform(-1, 1, 3)
                u = rng.normal(size=4)
                q[k + 3:k + 7] = u / np.linalg.norm(u)
        return self.mimic_project(q) if self.mimic else q

    # ------------------------------------------------------------------ names
    def joint_index(self, name: str) -> int:
        try:
            return self.joint_names.index(name)
        except ValueError:
            raise KeyError(f"no joint named {name!r} in model {self.name!r}; joints: {self.joint_names}") from None

    def body_index(self, name: str) -> int:
        try:
            return self.body_names.index(name)
        except ValueError:
            raise KeyError(f"no body named {name!r} in model {self.name!r}; bodies: {self.body_names}") from None

    def frame(self, name: str) -> Frame:
        for f in self.frames:
            if f.name == name:
                return f
        raise KeyError(f"no frame (link) named {name!r} in model {self.name!r}")

    def idx_q(self, name: str) -> slice:
        """Slice of ``q`` holding joint ``name``."""
        i = self.joint_index(name)
        return slice(int(self.iq[i]), int(self.iq[i] + self.nqj[i]))

    def idx_v(self, name: str) -> slice:
        """Slice of ``v`` (and of ``tau``) holding joint ``name``."""
        i = self.joint_index(name)
        return slice(int(self.iv[i]), int(self.iv[i] + self.nvj[i]))

    @property
    def total_mass(self) -> float:
        return float(self.mass.sum())

    @property
    def floating_base(self) -> bool:
        return bool(self.nb and self.jtype[0] == FREE and self.parent[0] == -1)

    def joint_type_name(self, i: int) -> str:
        return JOINT_NAMES[int(self.jtype[i])]

    # ------------------------------------------------------------------ summary
    def to_dict(self) -> dict:
        from pbsim.model.contacts import contact_pair_rows

        return {
            "name": self.name,
            "source": self.source,
            "nq": self.nq,
            "nv": self.nv,
            "nbodies": self.nb,
            "total_mass": self.total_mass,
            "floating_base": self.floating_base,
            "gravity": self.gravity.tolist(),
            "joints": [
                {"name": self.joint_names[i], "type": self.joint_type_name(i), "body": self.body_names[i],
                 "parent": self.body_names[self.parent[i]] if self.parent[i] >= 0 else "world",
                 "q_index": [int(self.iq[i]), int(self.iq[i] + self.nqj[i])],
                 "v_index": [int(self.iv[i]), int(self.iv[i] + self.nvj[i])]}
                for i in range(self.nb)
            ],
            "joint_names": list(self.joint_names),
            "joint_types": [self.joint_type_name(i) for i in range(self.nb)],
            "mimic": [{"joint": a, "master": b, "multiplier": c, "offset": d} for a, b, c, d in self.mimic],
            "tendons": [{"name": n, "kind": ("fixed", "spatial")[int(self.tendons.kind[t])]}
                        for t, n in enumerate(self.tendons.names)] if self.ntendon else [],
            "actuators": [{"name": n, "tendon": self.tendons.names[int(self.actuators.tendon[a])]
                           if self.actuators.tendon[a] >= 0 else None,
                           "dyntype": ("none", "integrator", "filter", "filterexact")[int(self.actuators.dyntype[a])]}
                          for a, n in enumerate(self.actuators.names)] if self.nu else [],
            "equality": [e.to_dict() for e in self.equality],
            "soft_limits": self.soft_limits.to_dict(self) if self.soft_limits is not None else None,
            "contact_pairs": contact_pair_rows(self),  # null: pbsim's default rules decide
            "contact_disabled": bool(self.contact_disabled),
            # every shape that touches something, by type; hfields with their grids
            "contact_shapes": {k: sum(g.role == "collision" and g.shape == k for g in self.geoms)
                               for k in sorted({g.shape for g in self.geoms if g.role == "collision"})},
            "hfields": [{"geom": g.name, "hfield": g.hfield[0], "nrow": int(g.hfield[1].shape[0]),
                         "ncol": int(g.hfield[1].shape[1]), "size": [float(x) for x in g.size]}
                        for g in self.geoms if g.shape == "hfield" and g.hfield is not None],
            "notes": list(self.notes),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def tree(self) -> str:
        """ASCII kinematic tree."""
        children: dict[int, list[int]] = {}
        for i in range(self.nb):
            children.setdefault(int(self.parent[i]), []).append(i)
        lines = ["world"]

        roots = children.get(-1, [])
        stack = [(r, "", n == len(roots) - 1) for n, r in reversed(list(enumerate(roots)))]
        while stack:  # iterative pre-order: depth limited by memory only
            i, prefix, last = stack.pop()
            lines.append(f"{prefix}{'`-- ' if last else '|-- '}{self.body_names[i]} "
                         f"[{self.joint_type_name(i)} {self.joint_names[i]}, m={self.mass[i]:.4g}]")
            kids = children.get(i, [])
            sub = prefix + ("    " if last else "|   ")
            stack.extend((c, sub, n == len(kids) - 1) for n, c in reversed(list(enumerate(kids))))
        return "\n".join(lines)

    def summary(self) -> str:
        rows = [f"Model {self.name!r}  ({self.source or 'built in code'})",
                f"  bodies {self.nb}   nq {self.nq}   nv {self.nv}   total mass {self.total_mass:.4f} kg   "
                f"{'floating' if self.floating_base else 'fixed'} base   gravity {self.gravity.tolist()}"
                + (f"   {self.nmimic} mimic joint(s): {self.nv - self.nmimic} DOFs of their own" if self.mimic else ""),
                f"  {'#':>3} {'joint':<24} {'type':<9} {'body':<24} {'parent':<24} {'q idx':<8} {'v idx':<8} limits"]
        for i in range(self.nb):
            j = self.iv[i]
            lim = ""
            if self.jtype[i] in (REVOLUTE, PRISMATIC) and np.isfinite(self.lower[j]):
                lim = f"[{self.lower[j]:.3g}, {self.upper[j]:.3g}]"
            par = self.body_names[self.parent[i]] if self.parent[i] >= 0 else "world"
            qi = f"{self.iq[i]}:{self.iq[i] + self.nqj[i]}"
            vi = f"{self.iv[i]}:{self.iv[i] + self.nvj[i]}"
            rows.append(f"  {i:>3} {self.joint_names[i]:<24} {self.joint_type_name(i):<9} "
                        f"{self.body_names[i]:<24} {par:<24} {qi:<8} {vi:<8} {lim}")
        if self.ntendon:
            rows.append(f"  {self.ntendon} tendon(s): " + "; ".join(self.tendons.summary_rows()))
        if self.nu:
            rows.append(f"  {self.nu} actuator(s)" + (f", {self.na} with activation dynamics" if self.na else "")
                        + ": " + ", ".join(self.actuator_names))
        if self.equality:
            rows.append(f"  {len(self.equality)} equality constraint(s), {self.neq_rows} row(s) active: "
                        + "; ".join(e.describe() for e in self.equality))
        if self.soft_limits is not None and self.soft_limits.n:
            rows.append("  " + self.soft_limits.describe(self)
                        + (" (not with mimic joints: the spring-damper there)" if self.mimic else ""))
        held = [i for i in range(self.nb) if self.gravcomp[i, 0] != 0.0]
        if held:
            rows.append(f"  gravity compensation on {len(held)} bod{'ies' if len(held) > 1 else 'y'}: "
                        + ", ".join(f"{self.body_names[i]} ({self.gravcomp[i, 0]:.4g} kg held)" for i in held))
        if self.fluid is not None and self.fluid.nf:
            rows.append("  " + self.fluid.describe())
        shapes = {}
        for g in self.geoms:  # the shapes that touch something (MJCF: those in a contact pair)
            if g.role == "collision":
                shapes[g.shape] = shapes.get(g.shape, 0) + 1
        if shapes:
            hf = [f"{g.hfield[0]!r} {g.hfield[1].shape[0]}x{g.hfield[1].shape[1]}" for g in self.geoms
                  if g.shape == "hfield" and g.role == "collision" and g.hfield is not None]
            rows.append("  contact shapes: " + ", ".join(f"{n} {k}" + (f" ({', '.join(hf)})" if k == "hfield" and hf
                                                                         else "") for k, n in sorted(shapes.items())))
        for n in self.notes:
            rows.append(f"  note: {n}")
        return "\n".join(rows)

    def __repr__(self):
        return f"<pbsim.Model {self.name!r}: {self.nb} bodies, nq={self.nq}, nv={self.nv}>"
