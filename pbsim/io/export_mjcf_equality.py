"""``Model.equality`` -> MJCF ``<equality>`` (the writer's part for :mod:`pbsim.model.equality`).

- ``connect`` and ``weld`` are written with site semantics: a site on each side at the
  constraint's point (and, for a weld, its frame), so the written constraint is the model's
  exactly, whatever MuJoCo's compiler would derive from ``qpos0``; ``torquescale`` as given;
- ``joint``: the writer's joints have ``qpos0 = 0``, so the polynomial about the model's
  references ``q1 - r1 = P(q2 - r2)`` is re-expanded about 0: ``q1 = r1 + P(q2 - r2)``;
- ``active``, ``solref`` and ``solimp`` as read;
- ``tendon``: on the fixed tendons the writer wrote (:mod:`pbsim.io.export_mjcf_tendon`), the
  polynomial re-expanded as for joints (the written ``qpos0 = 0`` gives ``tendon_length0 = 0``); one
  on a tendon not written is reported, as is a side on a massless body the writer merged into its
  child.
"""

from __future__ import annotations

import numpy as np
from lxml import etree

from pbsim.io.export_urdf import fmt


def _about_zero(poly, r1: float, r2: float, two: bool) -> np.ndarray:
    """Coefficients (ascending, 5) of ``y -> r1 + P(y - r2)`` (``r1 + a0`` without joint2)."""
    if not two:
        return np.array([r1 + poly[0], 0.0, 0.0, 0.0, 0.0])
    out = np.polynomial.polynomial.Polynomial([0.0])
    shift = np.polynomial.polynomial.Polynomial([-r2, 1.0])
    for k, a in enumerate(poly):
        out = out + a * shift**k
    c = np.zeros(5)
    c[: len(out.coef)] = out.coef[:5]
    c[0] += r1
    return c


def write_equality(model, root, body_el, written_frame, report: list, tendons=frozenset()) -> None:
    """Append ``<equality>`` to ``root``; ``body_el``: pbsim body -> its ``<body>`` element (-1: the
    worldbody), ``written_frame(b)``: whether body b's frame is its element's frame, ``tendons``:
    the names of the tendons written."""
    eqs = list(getattr(model, "equality", ()) or ())
    if not eqs:
        return
    el = etree.SubElement(root, "equality")
    dropped = []
    for e in eqs:
        attrs = {
            "name": e.name,
            "active": "true" if e.active else "false",
            "solref": fmt(*e.solref),
            "solimp": fmt(*e.solimp),
        }
        if e.type in ("connect", "weld"):
            sides = ((e.body1, e.point1, e.quat1), (e.body2, e.point2, e.quat2))
            if any(b >= 0 and not written_frame(b) for b, _, _ in sides):
                dropped.append(f"{e.name} (a side on a body merged into its child)")
                continue
            names = []
            for n, (b, p, quat) in enumerate(sides):
                sname = f"{e.name}:site{n + 1}"
                s = etree.SubElement(body_el[b], "site", name=sname, pos=fmt(*p), size="0.005", group="5")
                if e.type == "weld":
                    s.set("quat", fmt(*quat))
                names.append(sname)
            c = etree.SubElement(el, e.type, site1=names[0], site2=names[1], **attrs)
            if e.type == "weld":
                c.set("torquescale", fmt(e.torquescale))
        elif e.type == "joint":
            coef = _about_zero(np.asarray(e.polycoef, float), float(e.ref[0]), float(e.ref[1]), bool(e.joint2))
            c = etree.SubElement(el, "joint", joint1=e.joint1, polycoef=fmt(*coef), **attrs)
            if e.joint2:
                c.set("joint2", e.joint2)
        elif e.type == "tendon" and e.obj1 in tendons and (not e.obj2 or e.obj2 in tendons):
            coef = _about_zero(np.asarray(e.polycoef, float), float(e.ref[0]), float(e.ref[1]), bool(e.obj2))
            c = etree.SubElement(el, "tendon", tendon1=e.obj1, polycoef=fmt(*coef), **attrs)
            if e.obj2:
                c.set("tendon2", e.obj2)
        else:
            dropped.append(f"{e.name} ({e.type})")
    if dropped:
        report.append(f"MJCF: {len(dropped)} equality constraint(s) not written: {dropped[:6]}")
    if len(el) == 0:
        root.remove(el)
