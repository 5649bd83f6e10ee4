"""Exceptions pbsim raises for bad input.  Every message names the file,
element, joint, link or value at fault."""


class PbsimError(Exception):
    """Base class of all pbsim errors."""


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
