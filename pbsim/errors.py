"""Exceptions pbsim raises for bad input.  Every message names the file,
element, joint, link or value at fault."""


class PbsimError(Exception):
    """Base class of all pbsim errors."""


class PbsimWarning(UserWarning):
    """Base class of pbsim's warnings (a file loaded not exactly as written, a run that needed care)."""


class ParseError(PbsimError, ValueError):
    """A robot file could not be read (malformed XML, unknown joint type, ...)."""


class MeshNotFoundError(ParseError, FileNotFoundError):
    """A mesh referenced by a robot file does not exist."""


class InertiaError(PbsimError, ValueError):
    """A link's inertia is not physical (not positive definite, triangle inequality)."""


class InputError(PbsimError, ValueError):
    """An array passed to the API has the wrong shape or holds NaN/inf."""


class SimulationError(PbsimError, RuntimeError):
    """A step diverged (NaN) or an implicit solver did not converge."""


def check_dt(dt) -> float:
    """``dt`` as a float, or InputError if it is not a positive finite number."""
    import math

    try:
        x = float(dt)
    except (TypeError, ValueError):
        raise InputError(f"time step dt must be a positive finite number, got {dt!r}") from None
    if not math.isfinite(x) or x <= 0:
        raise InputError(f"time step dt must be a positive finite number, got {dt!r}")
    return x


def check_batch(batch) -> int | None:
    """``batch`` as an int (None stays None), or InputError unless it is a positive integer."""
    if batch is None:
        return None
    try:
        ok = not isinstance(batch, bool) and int(batch) == batch and int(batch) >= 1
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise InputError(f"batch must be a positive integer, got {batch!r}")
    return int(batch)
