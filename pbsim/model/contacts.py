"""``Model.contact_pairs`` for people and for JSON: counts by kind and one row per pair
(``pbsim info [--contacts] [--json]``)."""
from __future__ import annotations

DEFAULT_RULES = "decided by pbsim's default rules (robot-environment; self-collision off)"


def _body_label(model, g) -> str:
    if g.body >= 0:
        return model.body_names[g.body]
    return "world" if g.link in ("", "world") else f"world:{g.link}"  # a link welded to the world


def contact_pair_rows(model) -> list[dict] | None:
    """One dict per pair (geom and body names, indices, margin, friction, explicit, name); None
    when the model has no pair list (pbsim's default rules decide)."""
    if model.contact_pairs is None:
        return None
    rows = []
    for p in model.contact_pairs:
        g1, g2 = model.geoms[p.geom1], model.geoms[p.geom2]
        rows.append({"geom1": g1.name, "geom2": g2.name, "body1": _body_label(model, g1),
                     "body2": _body_label(model, g2), "index1": int(p.geom1), "index2": int(p.geom2),
                     "margin": float(p.margin), "friction": None if p.friction is None else float(p.friction),
                     "explicit": bool(p.explicit), "name": p.name})
    return rows


def contact_pairs_text(model, detail: bool = False) -> str:
    """``contact pairs: N (a body-world, b body-body; c from <pair>)``, and with ``detail`` one
    line per pair."""
    if model.contact_disabled:
        return "contact pairs: none (contact is disabled by the file)"
    rows = contact_pair_rows(model)
    if rows is None:
        return f"contact pairs: {DEFAULT_RULES}"
    world = sum(1 for p in model.contact_pairs
                if model.geoms[p.geom1].body < 0 or model.geoms[p.geom2].body < 0)
    explicit = sum(1 for p in model.contact_pairs if p.explicit)
    lines = [f"contact pairs: {len(rows)} ({world} body-world, {len(rows) - world} body-body"
             + (f"; {explicit} from <pair>" if explicit else "") + ")"]
    if detail:
        for r in rows:
            fr = "scene mu" if r["friction"] is None else f"{r['friction']:g}"
            tag = f"  <pair{' ' + r['name'] if r['name'] else ''}>" if r["explicit"] else ""
            lines.append(f"  {r['geom1']} ({r['body1']}) -- {r['geom2']} ({r['body2']})  "
                         f"margin {r['margin']:g}  friction {fr}{tag}")
    return "\n".join(lines)
