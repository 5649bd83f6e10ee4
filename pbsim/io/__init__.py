"""Robot-file readers and writers."""

from __future__ import annotations

import os

import numpy as np

from pbsim.errors import InputError, ParseError


def load(path, floating_base: bool | None = None, actuators: str | None = None, **kw):
    """Load a robot file by extension: ``.urdf`` or MJCF ``.xml``/``.mjcf``.

    ``actuators``: None (the file's own: MJCF ``<actuator>``; a URDF has none) or "joints" (one
    motor per hinge/slide joint, gear 1, force range +-its effort limit, replacing the file's)."""
    p = str(path)
    ext = os.path.splitext(p)[1].lower()
    if actuators not in (None, "joints"):
        raise InputError(f"actuators must be None or 'joints', got {actuators!r}")
    if ext == ".urdf":
        from pbsim.io.urdf import load_urdf

        model = load_urdf(p, floating_base=floating_base, **kw)
    elif ext in (".xml", ".mjcf"):
        from pbsim.io.mjcf import load_mjcf

        model = load_mjcf(p, floating_base=floating_base, **kw)
    else:
        raise ParseError(f"{p}: unknown robot file type {ext!r} (expected .urdf, .xml or .mjcf)")
    if actuators == "joints":
        model.actuators = joint_motors(model)
    return model


def joint_motors(model):
    """One motor per 1-DOF joint (named after it), gear 1, force range +-effort (inf: none)."""
    from pbsim.control.actuators import Actuators

    items = []
    for i in range(model.nb):
        if int(model.nvj[i]) == 1 and model.jtype[i] in (0, 1):
            j = int(model.iv[i])
            eff = float(abs(model.effort_limit[j]))
            rng = (-eff, eff) if np.isfinite(eff) and eff > 0 else (-np.inf, np.inf)
            items.append(dict(name=model.joint_names[i], dof=j, kind="motor", forcerange=rng))
    return Actuators.build(items)
