"""``Model.tendons`` -> MJCF ``<tendon>`` (the writer's part for :mod:`pbsim.model.tendons`).

Fixed tendons are written with their joints and coefficients, ``stiffness``, ``damping``,
``frictionloss``, ``springlength`` (the resolved dead band, absolute: the writer's ``qpos0`` differs
from the file's) and ``range`` (``limited``); pbsim's own limit gains are not MJCF (MuJoCo's limit
is a constraint).  Spatial tendons are not written (reported), nor are the actuators: the writer
emits the kinematic tree, its contact shapes, equality constraints and fixed tendons.
"""

from __future__ import annotations

import numpy as np
from lxml import etree

from pbsim.io.export_urdf import fmt
from pbsim.model.tendons import FIXED


def write_tendons(model, root, report: list) -> set:
    """Append ``<tendon>`` with the model's fixed tendons to ``root``; returns their names."""
    ten = getattr(model, "tendons", None)
    written: set = set()
    if ten is None or ten.nt == 0:
        return written
    dof_joint = {int(model.iv[i]): model.joint_names[i] for i in range(model.nb) if model.nvj[i] == 1}
    el = etree.SubElement(root, "tendon")
    spatial = []
    for t, name in enumerate(ten.names):
        if int(ten.kind[t]) != FIXED:
            spatial.append(name)
            continue
        f = etree.SubElement(el, "fixed", name=name)
        for k in range(int(ten.adr[t]), int(ten.adr[t + 1])):
            etree.SubElement(f, "joint", joint=dof_joint[int(ten.dof[k])], coef=fmt(float(ten.prm[k])))
        for attr, val in (
            ("stiffness", ten.stiffness[t]),
            ("damping", ten.damping[t]),
            ("frictionloss", ten.frictionloss[t]),
        ):
            if val:
                f.set(attr, fmt(float(val)))
        f.set("springlength", fmt(*ten.springlength[t]))
        lo, hi = ten.range[t]
        if np.isfinite(lo) or np.isfinite(hi):
            f.set("limited", "true")
            f.set("range", fmt(lo if np.isfinite(lo) else -1e10, hi if np.isfinite(hi) else 1e10))
        written.add(name)
    if spatial:
        report.append(f"MJCF: {len(spatial)} spatial tendon(s) not written: {spatial[:6]}")
    if len(el) == 0:
        root.remove(el)
    return written
