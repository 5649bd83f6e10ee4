"""Robot-file readers and writers."""

from __future__ import annotations

import os

from pbsim.errors import ParseError


def load(path, floating_base: bool | None = None, **kw):
    """Load a robot file by extension: ``.urdf`` or MJCF ``.xml``/``.mjcf``."""
    p = str(path)
    ext = os.path.splitext(p)[1].lower()
    if ext == ".urdf":
        from pbsim.io.urdf import load_urdf

        return load_urdf(p, floating_base=floating_base, **kw)
    if ext in (".xml", ".mjcf"):
        from pbsim.io.mjcf import load_mjcf

        return load_mjcf(p, floating_base=floating_base, **kw)
    raise ParseError(f"{p}: unknown robot file type {ext!r} (expected .urdf, .xml or .mjcf)")
