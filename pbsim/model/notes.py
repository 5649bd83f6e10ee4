"""What a loader changed or assumed: recorded in ``Model.notes`` (printed by ``pbsim info``) and,
for what a user should act on, raised as a :class:`ModelWarning`."""

from __future__ import annotations

import warnings

from pbsim.errors import PbsimWarning


class ModelWarning(PbsimWarning):
    """A robot file was loaded, but not exactly as written (the message names the file and the
    element; the same text is in ``Model.notes``)."""


def warn(notes: list[str], msg: str, where: str = "", stacklevel: int = 3) -> None:
    """Append ``msg`` to ``notes`` and warn with ``where: msg`` (a :class:`ModelWarning`)."""
    notes.append(msg)
    warnings.warn(f"{where}: {msg}" if where else msg, ModelWarning, stacklevel=stacklevel + 1)


def listed(names, limit: int = 12) -> str:
    """``'a', 'b', ...`` for a note: the first ``limit`` names, then how many in all."""
    names = list(names)
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")
