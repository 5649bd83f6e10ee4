"""The contact part of a Model written as MJCF (:mod:`pbsim.io.export_mjcf`).

A collision geom keeps its ``contype``/``conaffinity``, ``margin`` and sliding ``friction``; a
model whose contact pairs the file decided (``Model.contact_pairs``, MJCF) is written so that
MuJoCo's rules on the written file give exactly those pairs, with their margins and friction:
the pairs MuJoCo would find on its own (bitmasks, weld and parent filtering on the written body
tree) stay implicit, every other one becomes a ``<pair>`` (the file's own ``<pair>`` elements
too), and a body pair MuJoCo would pair but the model does not is an ``<exclude>`` (its wanted
pairs then all ``<pair>``).  ``Model.contact_disabled`` is ``<flag contact="disable"/>``.
"""

from __future__ import annotations

import math

from lxml import etree

from pbsim.io.export_urdf import Names, fmt

PAIR_FRICTION_REST = (0.005, 0.0001, 0.0001)  # MuJoCo's defaults: torsional, rolling x2
GEOM_FRICTION_REST = (0.005, 0.0001)


def _friction(f) -> float:
    return 1.0 if f is None else float(f)


def write_contact(model, root, option, geom_el: dict, group, group_parent, body_name, report: list) -> None:
    """Contact attributes and elements for ``model`` under the MJCF ``root``.

    ``geom_el``: {geom index: its written <geom>}; ``group(b)``: the written body of pbsim body
    ``b`` (-1: the world), ``group_parent(w)``: the written body of written body ``w``'s parent;
    ``body_name(w)``: its written name."""
    for i, el in geom_el.items():
        g = model.geoms[i]
        if g.role == "visual":
            continue
        if g.contype != 1:
            el.set("contype", str(int(g.contype)))
        if g.conaffinity != 1:
            el.set("conaffinity", str(int(g.conaffinity)))
        if g.margin:
            el.set("margin", fmt(g.margin))
        if g.friction is not None and g.friction != 1.0:
            el.set("friction", fmt(g.friction, *GEOM_FRICTION_REST))
    if model.contact_disabled:
        etree.SubElement(option, "flag", contact="disable")
    if model.contact_pairs is None:
        return
    geoms = model.geoms
    wanted, lost = {}, []
    for p in model.contact_pairs:
        if p.geom1 in geom_el and p.geom2 in geom_el:
            wanted[frozenset((p.geom1, p.geom2))] = p
        else:
            lost.append(f"{geoms[p.geom1].name}-{geoms[p.geom2].name}")
    if lost:
        report.append(f"MJCF: {len(lost)} contact pair(s) of shapes not written dropped: {lost[:6]}")

    # what MuJoCo's rules give on the written file (every written body has joints; no mocap)
    implicit = {}
    idx = [i for i in geom_el if geoms[i].role != "visual"]
    for n, i in enumerate(idx):
        for j in idx[n + 1 :]:
            a, b = geoms[i], geoms[j]
            wa, wb = group(a.body), group(b.body)
            if wa == wb or (wa >= 0 and wb >= 0 and (group_parent(wa) == wb or group_parent(wb) == wa)):
                continue
            if not ((a.contype & b.conaffinity) | (b.contype & a.conaffinity)):
                continue
            if a.shape == "plane" and b.shape == "plane":
                continue
            key = frozenset((i, j))
            implicit[key] = (a.margin + b.margin, max(_friction(a.friction), _friction(b.friction)), (wa, wb))
    excluded = {tuple(sorted(w)) for k, (_, _, w) in implicit.items() if k not in wanted}
    explicit = []
    for key, p in wanted.items():
        imp = implicit.get(key)
        if (
            p.explicit
            or imp is None
            or tuple(sorted(imp[2])) in excluded
            or not math.isclose(imp[0], p.margin, rel_tol=1e-12, abs_tol=1e-15)
            or imp[1] != _friction(p.friction)
        ):
            explicit.append(p)
    if not (excluded or explicit):
        return
    contact = etree.SubElement(root, "contact")
    names = Names()
    for p in explicit:
        el = etree.SubElement(contact, "pair")
        if p.name:
            el.set("name", names.take(p.name))
        el.set("geom1", geom_el[p.geom1].get("name"))
        el.set("geom2", geom_el[p.geom2].get("name"))
        if p.margin:
            el.set("margin", fmt(p.margin))
        if p.friction is not None:
            el.set("friction", fmt(p.friction, p.friction, *PAIR_FRICTION_REST))
    for wa, wb in sorted(excluded):
        etree.SubElement(contact, "exclude", body1=body_name(wa), body2=body_name(wb))
