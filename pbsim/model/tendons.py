"""A model's tendons (MJCF ``<tendon>``): fixed tendons (a length linear in joint positions) and
spatial tendons (a path through sites, wrapping over spheres and cylinders, split by pulleys).

``Tendons`` holds per tendon its kind, passive parameters and path, as flat arrays the kernels
read (``Model.k``'s ``ten_*`` fields; the algorithms: :mod:`pbsim.dynamics.tendon`):

- path elements ``adr[t]:adr[t+1]`` of tendon ``t``, each with a type (:data:`JOINT`, :data:`SITE`,
  :data:`SPHERE`, :data:`CYLINDER`, :data:`PULLEY`), a body (-1: world), a position and rotation
  in that body's frame, and ``prm``: a fixed tendon's coefficient, a pulley's divisor, a wrapping
  geom's radius; a joint element also has its DOF (``dof``) and q index (``qadr``); a wrapping geom
  its side site (``side``, on body ``sbody``; -2: none);
- passive force along the tendon (MuJoCo's)::

      F = -k (L - L_s) - b dL/dt        L_s: the nearest point of [springlength lo, hi] (a dead band)

  and a one-sided limit spring-damper past ``range`` (pbsim's joint-limit convention,
  :mod:`pbsim.model.limits`), gains ``limit_kp``/``limit_kd``, in the methods other than the
  explicit ones, which hold an MJCF range by MuJoCo's limit constraint instead
  (:mod:`pbsim.dynamics.limits`); ``frictionloss`` smoothed as the joints' (``-f tanh(dL/dt /
  v_f)``).  The force acts on the joints as ``tau = J(q)^T F`` with ``J = dL/dv`` the tendon's
  moment arms.  ``armature``: MuJoCo's tendon armature (the explicit methods only, as rows of the
  same solve).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

FIXED, SPATIAL = 0, 1
JOINT, SITE, SPHERE, CYLINDER, PULLEY = 0, 1, 2, 3, 4
NO_SIDE = -2


def _z(*shape, dtype=np.float64):
    return np.zeros(shape, dtype)


@dataclass
class Tendons:
    names: list[str] = field(default_factory=list)
    kind: np.ndarray = field(default_factory=lambda: _z(0, dtype=np.int64))  # FIXED / SPATIAL
    adr: np.ndarray = field(default_factory=lambda: _z(1, dtype=np.int64))  # (nt + 1,) path offsets
    wtype: np.ndarray = field(default_factory=lambda: _z(0, dtype=np.int64))
    wbody: np.ndarray = field(default_factory=lambda: _z(0, dtype=np.int64))
    dof: np.ndarray = field(default_factory=lambda: _z(0, dtype=np.int64))
    qadr: np.ndarray = field(default_factory=lambda: _z(0, dtype=np.int64))
    prm: np.ndarray = field(default_factory=lambda: _z(0))
    pos: np.ndarray = field(default_factory=lambda: _z(0, 3))
    rot: np.ndarray = field(default_factory=lambda: _z(0, 3, 3))
    side: np.ndarray = field(default_factory=lambda: _z(0, 3))
    sbody: np.ndarray = field(default_factory=lambda: _z(0, dtype=np.int64))
    stiffness: np.ndarray = field(default_factory=lambda: _z(0))
    damping: np.ndarray = field(default_factory=lambda: _z(0))
    springlength: np.ndarray = field(default_factory=lambda: _z(0, 2))  # (lo, hi); lo = hi: no dead band
    range: np.ndarray = field(default_factory=lambda: _z(0, 2))  # +-inf where unlimited
    limit_kp: np.ndarray = field(default_factory=lambda: _z(0))
    limit_kd: np.ndarray = field(default_factory=lambda: _z(0))
    frictionloss: np.ndarray = field(default_factory=lambda: _z(0))
    armature: np.ndarray = field(default_factory=lambda: _z(0))  # MuJoCo's tendon armature (inertia along L)

    @property
    def nt(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"no tendon named {name!r}; tendons: {self.names}") from None

    def kernel_fields(self) -> dict:
        """The ``ten_*`` fields of ``Model.k`` (contiguous arrays; never empty, so that the
        kernels compile once: a model without tendons has ``nt = 0`` and one dummy row)."""

        def c(a, dtype, shape):
            a = np.ascontiguousarray(a, dtype=dtype)
            return a if a.shape[0] else np.zeros(shape, dtype)

        nt = self.nt
        out = dict(
            ten_nt=np.array([nt, int((self.kind == SPATIAL).sum())], np.int64),
            ten_kind=c(self.kind, np.int64, (1,)),
            ten_adr=np.ascontiguousarray(self.adr, np.int64) if nt else np.zeros(2, np.int64),
            ten_wtype=c(self.wtype, np.int64, (1,)),
            ten_wbody=c(self.wbody, np.int64, (1,)),
            ten_dof=c(self.dof, np.int64, (1,)),
            ten_qadr=c(self.qadr, np.int64, (1,)),
            ten_prm=c(self.prm, np.float64, (1,)),
            ten_pos=c(self.pos, np.float64, (1, 3)),
            ten_rot=c(self.rot, np.float64, (1, 3, 3)),
            ten_side=c(self.side, np.float64, (1, 3)),
            ten_sbody=c(self.sbody, np.int64, (1,)),
            ten_k=c(self.stiffness, np.float64, (1,)),
            ten_b=c(self.damping, np.float64, (1,)),
            ten_ls=c(self.springlength, np.float64, (1, 2)),
            ten_range=c(self.range, np.float64, (1, 2)),
            ten_lkp=c(self.limit_kp, np.float64, (1,)),
            ten_lkd=c(self.limit_kd, np.float64, (1,)),
            ten_fl=c(self.frictionloss, np.float64, (1,)),
        )
        return out

    def summary_rows(self) -> list[str]:
        kinds = {FIXED: "fixed", SPATIAL: "spatial"}
        rows = []
        for t, n in enumerate(self.names):
            parts = [kinds[int(self.kind[t])], f"{int(self.adr[t + 1] - self.adr[t])} path element(s)"]
            if self.stiffness[t]:
                lo, hi = self.springlength[t]
                parts.append(f"stiffness {self.stiffness[t]:g} at {lo:g}" + (f"..{hi:g}" if hi != lo else ""))
            if self.damping[t]:
                parts.append(f"damping {self.damping[t]:g}")
            if np.isfinite(self.range[t]).any():
                parts.append(f"range [{self.range[t, 0]:g}, {self.range[t, 1]:g}]")
            if self.frictionloss[t]:
                parts.append(f"frictionloss {self.frictionloss[t]:g}")
            if self.armature[t]:
                parts.append(f"armature {self.armature[t]:g}")
            rows.append(f"{n}: " + ", ".join(parts))
        return rows


def build_tendons(items: list[dict]) -> Tendons:
    """From dicts ``{name, kind, path: [dict(type, body, dof, qadr, prm, pos, rot, side, sbody)],
    stiffness, damping, springlength, range, limit_kp, limit_kd, frictionloss}``."""
    t = Tendons()
    nt = len(items)
    t.names = [it["name"] for it in items]
    t.kind = np.array([it["kind"] for it in items], np.int64).reshape(nt)
    counts = [len(it["path"]) for it in items]
    t.adr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    path = [p for it in items for p in it["path"]]
    nw = len(path)
    t.wtype = np.array([p["type"] for p in path], np.int64).reshape(nw)
    t.wbody = np.array([p.get("body", -1) for p in path], np.int64).reshape(nw)
    t.dof = np.array([p.get("dof", -1) for p in path], np.int64).reshape(nw)
    t.qadr = np.array([p.get("qadr", -1) for p in path], np.int64).reshape(nw)
    t.prm = np.array([p.get("prm", 0.0) for p in path], float).reshape(nw)
    t.pos = np.array([p.get("pos", (0.0, 0.0, 0.0)) for p in path], float).reshape(nw, 3)
    t.rot = np.array([p.get("rot", np.eye(3)) for p in path], float).reshape(nw, 3, 3)
    t.side = np.array([p.get("side", (0.0, 0.0, 0.0)) for p in path], float).reshape(nw, 3)
    t.sbody = np.array([p.get("sbody", NO_SIDE) for p in path], np.int64).reshape(nw)

    def col(key, default, shape=(nt,)):
        return np.array([it.get(key, default) for it in items], float).reshape(shape)

    t.stiffness = col("stiffness", 0.0)
    t.damping = col("damping", 0.0)
    t.springlength = col("springlength", (0.0, 0.0), (nt, 2))
    t.range = col("range", (-np.inf, np.inf), (nt, 2))
    t.limit_kp = col("limit_kp", 0.0)
    t.limit_kd = col("limit_kd", 0.0)
    t.frictionloss = col("frictionloss", 0.0)
    t.armature = col("armature", 0.0)
    return t
