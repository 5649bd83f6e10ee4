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


def check_int(name: str, x, minimum: int | None = None) -> int:
    """``x`` as an int, or InputError unless it is an integer (not a bool, not 2.7, not NaN or
    a string) of at least ``minimum``.  An integral float (``1000.0``) is accepted."""
    import numbers

    ok = isinstance(x, numbers.Integral) and not isinstance(x, bool)
    if not ok and isinstance(x, numbers.Real) and not isinstance(x, bool):
        try:
            ok = float(x).is_integer()
        except (OverflowError, ValueError):
            ok = False
    if not ok:
        raise InputError(f"{name} must be an integer, got {x!r}")
    n = int(x)
    if minimum is not None and n < minimum:
        raise InputError(f"{name} must be >= {minimum}, got {n}")
    return n


def check_choice(name: str, x, choices) -> str:
    """``x`` unchanged, or InputError listing ``choices`` when it is not one of them."""
    if not isinstance(x, str) or x not in choices:
        raise InputError(f"{name} must be one of {', '.join(map(repr, choices))}; got {x!r}")
    return x


def check_options(what: str, given, valid) -> None:
    """InputError when a keyword in ``given`` is not in ``valid``: the message names it, suggests
    the closest valid name and lists them all (the one rule for ``rollout``, ``make``,
    ``Control``, ``make_scene``)."""
    import difflib

    valid = list(valid)
    for k in given:
        if k not in valid:
            close = difflib.get_close_matches(k, valid, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InputError(f"{what} has no option {k!r}{hint}; valid options: {', '.join(valid)}")
