"""Equality constraints (MuJoCo's ``<equality>``): ``connect``, ``weld``, ``joint``, ``tendon``.

Each :class:`Equality` is held exactly by the integrators that support it (the explicit steps:
:mod:`pbsim.dynamics.equality`), as MuJoCo defines its residual (``efc_pos``):

- ``connect`` (3 rows): ``phi = x1(p1) - x2(p2)``, the world positions of a point fixed on body1
  and one on body2;
- ``weld`` (6 rows): the same 3 rows for ``p1`` on body1 and ``p2`` (MuJoCo's ``anchor``) on
  body2, and ``phi_rot = imag(conj(q2 f2) q1 f1)``, the vector part of the relative rotation
  between body2's frame ``f2`` and body1's target frame ``f1`` (MuJoCo: ``neg(q1) q0 relpose``;
  here with the scalar part kept >= 0); ``torquescale = 0`` leaves the rotation free (3 rows);
- ``joint`` (1 row): ``phi = (q_1 - r_1) - P(q_2 - r_2)``, ``P`` the quartic ``polycoef`` and ``r``
  the reference configuration (MuJoCo's ``qpos0``); without joint2, ``phi = q_1 - r_1 - a_0``;
- ``tendon`` (1 row): the same polynomial on fixed-tendon lengths ``L = sum_j c_j q_j`` with
  references ``L_0`` (MuJoCo's ``tendon_length0``).

Bodies are pbsim bodies (``-1``: the world) and points/frames are in pbsim body frames (a MuJoCo
body merged into its parent by a fixed joint keeps its frame through :class:`Frame`).  Only
``active`` constraints get kernel rows; ``solref``/``solimp`` are kept as read (the explicit steps
hold the constraint exactly and use neither; docs/robots.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pbsim.errors import InputError

TYPES = ("connect", "weld", "joint", "tendon")  # MuJoCo's mjtEq order
CONNECT, WELD, JOINT, TENDON = 0, 1, 2, 3


@dataclass
class Equality:
    """One equality constraint; see the module doc for each type's residual."""

    name: str
    type: str  # one of TYPES
    obj1: str = ""  # what the file names: body/site (connect, weld), joint, tendon
    obj2: str = ""  # "" where the file gives none (world body / no second joint or tendon)
    body1: int = -1  # pbsim body (connect, weld); -1 world
    body2: int = -1
    point1: np.ndarray = field(default_factory=lambda: np.zeros(3))  # on body1, its frame
    point2: np.ndarray = field(default_factory=lambda: np.zeros(3))  # on body2, its frame
    quat1: np.ndarray = field(default_factory=lambda: np.array([1.0, 0, 0, 0]))  # weld: target frame in body1
    quat2: np.ndarray = field(default_factory=lambda: np.array([1.0, 0, 0, 0]))  # weld: frame in body2
    torquescale: float = 1.0
    joint1: str = ""  # joint: joint names
    joint2: str = ""
    tendon1: dict = field(default_factory=dict)  # tendon: {joint name: coefficient}
    tendon2: dict = field(default_factory=dict)
    ref: np.ndarray = field(default_factory=lambda: np.zeros(2))  # joint/tendon reference values
    polycoef: np.ndarray = field(default_factory=lambda: np.array([0.0, 1.0, 0.0, 0.0, 0.0]))
    active: bool = True
    solref: np.ndarray = field(default_factory=lambda: np.array([0.02, 1.0]))
    solimp: np.ndarray = field(default_factory=lambda: np.array([0.9, 0.95, 0.001, 0.5, 2.0]))

    @property
    def nrows(self) -> int:
        if self.type == "connect":
            return 3
        if self.type == "weld":
            return 6 if self.torquescale != 0.0 else 3
        return 1

    def describe(self) -> str:
        """One line for ``pbsim info``."""
        what = {
            "connect": f"{self.obj1 or 'world'} - {self.obj2 or 'world'}",
            "weld": f"{self.obj1 or 'world'} - {self.obj2 or 'world'}",
            "joint": f"{self.obj1} = P({self.obj2})" if self.obj2 else f"{self.obj1} fixed",
            "tendon": f"{self.obj1} = P({self.obj2})" if self.obj2 else f"{self.obj1} fixed",
        }[self.type]
        return f"{self.name} ({self.type}: {what}{'' if self.active else ', inactive'})"

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "type": self.type,
            "obj1": self.obj1,
            "obj2": self.obj2,
            "active": bool(self.active),
            "rows": self.nrows,
            "solref": [float(x) for x in self.solref],
            "solimp": [float(x) for x in self.solimp],
        }


def equality_rows(equality) -> int:
    """Number of kernel rows of the active constraints."""
    return int(sum(e.nrows for e in equality if e.active))


def equality_arrays(model) -> dict:
    """The kernels' arrays (``KModel.eq_*``) of the model's active equality constraints:
    ``eq_type`` (ne,), ``eq_row`` first row, ``eq_nrow``, ``eq_body`` (ne, 2), ``eq_point``
    (ne, 2, 3), ``eq_quat`` (ne, 2, 4), ``eq_jq``/``eq_jv`` (ne, 2) q/v index of joint1/joint2
    (-1: none), ``eq_ten_q`` (ne, 2, nq) / ``eq_ten_v`` (ne, 2, nv) fixed-tendon coefficients by q
    and v index (empty unless a tendon constraint exists), ``eq_ref`` (ne, 2), ``eq_poly`` (ne, 5)."""
    act = [e for e in model.equality if e.active]
    ne = len(act)
    ten = any(e.type == "tendon" for e in act)
    out = dict(
        eq_type=np.zeros(ne, np.int64),
        eq_row=np.zeros(ne, np.int64),
        eq_nrow=np.zeros(ne, np.int64),
        eq_body=np.full((ne, 2), -1, np.int64),
        eq_point=np.zeros((ne, 2, 3)),
        eq_quat=np.zeros((ne, 2, 4)),
        eq_jq=np.full((ne, 2), -1, np.int64),
        eq_jv=np.full((ne, 2), -1, np.int64),
        eq_ten_q=np.zeros((ne if ten else 0, 2, model.nq)),
        eq_ten_v=np.zeros((ne if ten else 0, 2, model.nv)),
        eq_ref=np.zeros((ne, 2)),
        eq_poly=np.zeros((ne, 5)),
    )
    r = 0
    for i, e in enumerate(act):
        out["eq_type"][i] = TYPES.index(e.type)
        out["eq_row"][i] = r
        out["eq_nrow"][i] = e.nrows
        r += e.nrows
        out["eq_body"][i] = (e.body1, e.body2)
        out["eq_point"][i] = (e.point1, e.point2)
        out["eq_quat"][i] = (
            np.asarray(e.quat1) / np.linalg.norm(e.quat1),
            np.asarray(e.quat2) / np.linalg.norm(e.quat2),
        )
        out["eq_ref"][i] = e.ref
        out["eq_poly"][i] = e.polycoef
        if e.type == "joint":
            for c, jn in enumerate((e.joint1, e.joint2)):
                if jn:
                    out["eq_jq"][i, c] = model.idx_q(jn).start
                    out["eq_jv"][i, c] = model.idx_v(jn).start
        if e.type == "tendon":
            for c, coef in enumerate((e.tendon1, e.tendon2)):
                out["eq_jq"][i, c] = 0 if coef else -1  # tendon2 present or not
                for jn, a in coef.items():
                    out["eq_ten_q"][i, c, model.idx_q(jn).start] += a
                    out["eq_ten_v"][i, c, model.idx_v(jn).start] += a
    return {k: np.ascontiguousarray(v) for k, v in out.items()}


def check_equality(model) -> None:
    """Refuse what the kernels cannot hold, naming the constraint (InputError)."""
    from pbsim.dynamics.joints import PRISMATIC, REVOLUTE

    names = set()
    for e in model.equality:
        where = f"model {model.name!r}: equality {e.name!r}"
        if e.type not in TYPES:
            raise InputError(f"{where}: unknown type {e.type!r}; known: {TYPES}")
        if e.name in names:
            raise InputError(f"{where}: the name is used twice")
        names.add(e.name)
        for bi in (e.body1, e.body2):
            if not -1 <= bi < model.nb:
                raise InputError(f"{where}: body index {bi} out of range")
        if e.type in ("connect", "weld") and e.body1 == e.body2:
            raise InputError(f"{where}: both sides on the same body ({e.obj1!r})")
        joints = [e.joint1, e.joint2] if e.type == "joint" else list(e.tendon1) + list(e.tendon2)
        for jn in joints:
            if not jn:
                continue
            try:
                i = model.joint_index(jn)
            except KeyError:
                raise InputError(f"{where}: no joint {jn!r} in the model") from None
            if model.jtype[i] not in (REVOLUTE, PRISMATIC):
                raise InputError(
                    f"{where}: joint {jn!r} is a {model.joint_type_name(i)} joint; "
                    "joint and tendon equalities take hinge/slide joints"
                )
        if e.type == "joint" and not e.joint1:
            raise InputError(f"{where}: joint1 is missing")
        if not np.all(np.isfinite(e.polycoef)) or len(e.polycoef) != 5:
            raise InputError(f"{where}: polycoef must be 5 finite numbers, got {list(e.polycoef)}")
    if model.equality and getattr(model, "mimic", None):
        raise InputError(
            f"model {model.name!r}: coupled mimic joints and equality constraints together are not "
            "supported (load the URDF with mimic='independent' or drop the equalities)"
        )
