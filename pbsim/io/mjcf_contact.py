"""Which geoms of an MJCF model may touch: MuJoCo's candidate geom pairs, for the contact layer.

The rules are MuJoCo's collision driver's (``engine_collision_driver.c``: ``mj_collision``,
``mj_broadphase``, ``filterBodyPair``, ``filterCollisionPair``; MJX's ``geom_pairs`` is the same
list), applied to the compiled ``mjModel`` without the distance tests:

- every ``<pair>`` is a candidate whatever the bitmasks, excludes and parent filter say, with its
  own ``margin`` and ``friction[0]``; it replaces the dynamic pair of the same two geoms;
- dynamic pairs: bodies ``b1 <= b2``, skipped when both are welded together (same weld body: a
  body with joints, a mocap body or the world, with its joint-less descendants), when neither
  weld body has a degree of freedom (the world and mocap bodies: static shapes never pair), when
  the parent filter applies (``filterparent`` not disabled, neither weld body the world, one the
  weld body of the other's weld body's parent), or when ``<exclude>`` names the two bodies;
  within a body pair, geoms with ``(contype1 & conaffinity2) | (contype2 & conaffinity1) != 0``;
  MuJoCo has no collision function for plane-plane, plane-hfield and hfield-hfield, so those
  never pair;
- margin: ``margin1 + margin2`` (MuJoCo adds the geoms' margins; a ``<pair>`` has its own),
  ``o_margin`` under ``<flag override="enable"/>``; friction: the higher-``priority`` geom's,
  the larger of the two at equal priority (MuJoCo's mixing), ``o_friction`` under override;
- ``<flag contact="disable"/>`` or ``<flag constraint="disable"/>`` (MuJoCo then detects no
  contact): no pairs, ``Model.contact_disabled``.

Which bodies have joints is read from the Model pbsim built, not from ``mjModel``: the same for
a plain load, but ``floating_base=False`` welds free bodies and ``floating_base=True`` frees
welded ones, and the pairs must follow what moves in pbsim (pbsim welds mocap bodies where they
are; MuJoCo's rules already treat them as dof-less weld bodies of their own).  A ``<pair>``
between two shapes that do not move relative to each other (one rigid body, or both static) is
dropped with a note: it exerts no force.  Geoms pbsim does not import (ellipsoid, hfield, SDF)
cannot be in a pair; the pairs they would be in are listed in one note.
"""

from __future__ import annotations

import numpy as np

from pbsim.model.geometry import ContactPair
from pbsim.model.notes import listed as _listed

PLANE, HFIELD = 0, 1  # mjtGeom codes


def contact_disabled(mj) -> bool:
    """True when MuJoCo detects no contact at all in this model (contact or constraints off)."""
    import mujoco

    D = mujoco.mjtDisableBit
    return bool(mj.opt.disableflags & (D.mjDSBL_CONTACT | D.mjDSBL_CONSTRAINT))


def geom_contact_fields(mj, g: int) -> dict:
    """The contact fields of :class:`~pbsim.model.geometry.Geometry` for MuJoCo geom ``g``."""
    return dict(
        contype=int(mj.geom_contype[g]),
        conaffinity=int(mj.geom_conaffinity[g]),
        margin=float(mj.geom_margin[g]),
        friction=float(mj.geom_friction[g, 0]),
        source_index=int(g),
    )


def weld_bodies(mj, moving=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(weld, weld_parent, dofless)`` per MuJoCo body: its weld body (the topmost body of its
    rigid group: a body with joints, a mocap body or the world), the weld body of that one's
    parent, and whether its weld body has no degree of freedom (the world, mocap bodies).
    ``moving[i]``: MuJoCo body ``i`` has a joint in the Model pbsim built (None: MuJoCo's own
    ``body_weldid``/``body_dofnum``)."""
    parent = np.asarray(mj.body_parentid, int)
    if moving is None:
        weld = np.asarray(mj.body_weldid, int)
        return weld, weld[parent[weld]], np.asarray(mj.body_dofnum, int)[weld] == 0
    moving = np.asarray(moving, bool)
    weld = np.zeros(mj.nbody, int)
    for b in range(1, mj.nbody):  # parents come before children
        weld[b] = b if moving[b] or mj.body_mocapid[b] >= 0 else weld[parent[b]]
    return weld, weld[parent[weld]], ~moving[weld]


def candidate_pairs(mj, moving=None) -> list[tuple[int, int, int]]:
    """MuJoCo's candidate geom pairs ``(g1, g2, ipair)`` (geom ids; ``ipair`` the ``<pair>`` index,
    -1 for a dynamic pair), the ``<pair>`` elements first; every geom type included.  ``moving``:
    see :func:`weld_bodies` (None: MuJoCo's own weld bodies)."""
    import mujoco

    if contact_disabled(mj):
        return []
    weld, weld_parent, dofless = weld_bodies(mj, moving)
    filterparent = not (mj.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_FILTERPARENT)
    gtype = np.asarray(mj.geom_type, int)
    ct, ca = np.asarray(mj.geom_contype, np.int64), np.asarray(mj.geom_conaffinity, np.int64)
    flat = np.isin(gtype, (PLANE, HFIELD))  # MuJoCo has no collision function for two of these

    out, seen = [], set()
    for i in range(mj.npair):
        g1, g2 = int(mj.pair_geom1[i]), int(mj.pair_geom2[i])
        if not (flat[g1] and flat[g2]):
            out.append((g1, g2, i))
        seen.add((min(g1, g2), max(g1, g2)))  # a <pair> replaces the dynamic pair of its two geoms
    excluded = np.asarray(mj.exclude_signature, np.int64)
    c = np.flatnonzero(ct | ca)
    body = np.asarray(mj.geom_bodyid, np.int64)[c]
    w, wp, dl = weld[body], weld_parent[body], dofless[body]
    for n in range(len(c) - 1):
        j = slice(n + 1, None)
        keep = (w[j] != w[n]) & ~(dl[j] & dl[n])
        if filterparent and w[n] != 0:
            keep &= ~((w[j] != 0) & ((wp[j] == w[n]) | (w[j] == wp[n])))
        keep &= ((ct[c[n]] & ca[c[j]]) | (ct[c[j]] & ca[c[n]])) != 0
        if flat[c[n]]:
            keep &= ~flat[c[j]]
        if excluded.size:
            keep &= ~np.isin((np.minimum(body[n], body[j]) << 16) + np.maximum(body[n], body[j]), excluded)
        g1 = int(c[n])
        for g2 in c[j][keep].tolist():
            if (g1, g2) not in seen:
                out.append((g1, g2, -1))
    return out


def pair_parameters(mj, g1: int, g2: int, ipair: int) -> tuple[float, float]:
    """``(margin, friction)`` of a candidate pair as MuJoCo sets them on its contacts (sliding
    friction only)."""
    m, f = _pair_parameters(mj, [g1], [g2], [ipair])
    return float(m[0]), float(f[0])


def _pair_parameters(mj, g1, g2, ipair) -> tuple[np.ndarray, np.ndarray]:
    import mujoco

    g1, g2, ipair = (np.asarray(x, np.int64) for x in (g1, g2, ipair))
    if mj.opt.enableflags & mujoco.mjtEnableBit.mjENBL_OVERRIDE:
        return np.full(len(g1), float(mj.opt.o_margin)), np.full(len(g1), float(mj.opt.o_friction[0]))
    gm, gf, pr = np.asarray(mj.geom_margin), np.asarray(mj.geom_friction)[:, 0], np.asarray(mj.geom_priority)
    margin = gm[g1] + gm[g2]
    f1, f2, p1, p2 = gf[g1], gf[g2], pr[g1], pr[g2]
    friction = np.where(p1 > p2, f1, np.where(p2 > p1, f2, np.maximum(f1, f2)))
    e = ipair >= 0
    if e.any():
        margin[e] = np.asarray(mj.pair_margin)[ipair[e]]
        friction[e] = np.asarray(mj.pair_friction)[ipair[e], 0]
    return margin, friction


def contact_pairs_from_mjmodel(mj, model, mj_body_names, name_of) -> list[str]:
    """Set ``model.contact_pairs``, ``model.contact_disabled`` and the geom roles ("collision"
    for a geom in at least one pair, "visual" otherwise) of a Model built from ``mj``;
    ``mj_body_names[i]``: the link name of MuJoCo body ``i`` (its frame in ``model``);
    ``name_of(kind, i, default)``: a MuJoCo name.  Returns the notes to add to ``model.notes``."""
    import mujoco

    O = mujoco.mjtObj
    notes = []
    frame_body = {f.name: f.body for f in model.frames}
    body_of = [-1] + [frame_body[mj_body_names[i]] for i in range(1, mj.nbody)]
    moving = [False] + [body_of[i] != body_of[mj.body_parentid[i]] for i in range(1, mj.nbody)]
    index = {g.source_index: i for i, g in enumerate(model.geoms) if g.source_index >= 0}
    model.contact_disabled = contact_disabled(mj)
    if model.contact_disabled:
        which = "contact" if mj.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONTACT else "constraint"
        notes.append(f"contact is disabled (<option><flag {which}='disable'/>): no shape touches another")

    def gname(g):
        return name_of(O.mjOBJ_GEOM, g, f"geom{g}")

    unsupported, rigid, keep = [], [], []
    for g1, g2, ipair in candidate_pairs(mj, moving):
        if g1 not in index or g2 not in index:
            unsupported.append(f"{gname(g1)}-{gname(g2)}")
        elif model.geoms[index[g1]].body == model.geoms[index[g2]].body:
            label = f"{gname(g1)}-{gname(g2)}"
            rigid.append(name_of(O.mjOBJ_PAIR, ipair, label) if ipair >= 0 else label)
        else:
            keep.append((g1, g2, ipair))
    g1s, g2s, ips = (np.array([k[c] for k in keep], np.int64) for c in range(3))
    margin, friction = _pair_parameters(mj, g1s, g2s, ips)
    gap = np.asarray(mj.geom_gap)[g1s] + np.asarray(mj.geom_gap)[g2s]
    gap[ips >= 0] = np.asarray(mj.pair_gap)[ips[ips >= 0]]
    gaps = [f"{gname(a)}-{gname(b)}" for a, b in zip(g1s[gap != 0].tolist(), g2s[gap != 0].tolist())]
    pairs = [
        ContactPair(index[a], index[b], m, f, explicit=i >= 0, name=name_of(O.mjOBJ_PAIR, i, "") if i >= 0 else "")
        for a, b, i, m, f in zip(g1s.tolist(), g2s.tolist(), ips.tolist(), margin.tolist(), friction.tolist())
    ]
    model.contact_pairs = pairs
    used = {p.geom1 for p in pairs} | {p.geom2 for p in pairs}
    for i, g in enumerate(model.geoms):
        if g.source_index >= 0:
            g.role = "collision" if i in used else "visual"
    if unsupported:
        notes.append(f"{len(unsupported)} contact pair(s) with unsupported geoms not simulated: {_listed(unsupported)}")
    if rigid:
        notes.append(
            f"{len(rigid)} <pair>(s) between shapes that never move relative to each other (one rigid body, "
            f"or both static) skipped: {_listed(rigid)}"
        )
    if gaps:
        notes.append(
            f"contact gap of {len(gaps)} pair(s) not imported (MuJoCo's contacts within [margin - gap, margin) "
            f"exert no force): {_listed(gaps)}"
        )
    return notes
