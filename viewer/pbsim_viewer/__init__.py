"""pbsim's interactive viewer (pyglet + imgui-bundle).

``Session`` has no GL; ``view`` / ``main`` import pyglet and GL lazily, so importing this package
works on a server without a display.
"""

from pbsim_viewer.session import Session


def view(*args, **kw):
    """See :func:`pbsim_viewer.app.view`."""
    from pbsim_viewer.app import view as _view

    return _view(*args, **kw)


def main(argv=None) -> int:
    """``pbsim view`` entry point: see :func:`pbsim_viewer.app.build_parser`."""
    from pbsim_viewer.app import main as _main

    return _main(argv)


__all__ = ["Session", "view", "main"]
