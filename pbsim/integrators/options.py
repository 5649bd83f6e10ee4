"""The declarative option spec of an integrator: one :class:`Option` per keyword ``make()`` takes.

``make()`` validates a call's options against it once (unknown or misspelt names and wrong kinds
are an ``InputError`` naming the valid ones), the CLI generates its flags from it and
``pbsim integrators`` prints it, so every method names the same thing the same way.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from pbsim.errors import InputError


@dataclass(frozen=True)
class Option:
    """One option an integrator takes: its ``name``, ``default``, a one-line ``doc``, the
    ``kind`` of value ("int", "float", "str", "bool", "dict" or "any") and, for "str"/"int"
    options with a closed set of values, the allowed ``choices``.  ``None`` is accepted when
    the default is None (None then means "automatic", as the doc says) or ``nullable`` is set.
    Range checks (``tol > 0`` ...) stay in the integrator's constructor.  ``alias_of``: an old
    name kept for callers of earlier versions (accepted, not listed, no CLI flag).  ``cli``:
    False for options a command line cannot express (dicts of arrays ...)."""

    name: str
    default: object
    doc: str
    kind: str = "any"
    choices: tuple | None = None
    nullable: bool = False
    alias_of: str | None = None
    cli: bool = True

    def check(self, integrator: str, value):
        """InputError naming the option unless ``value`` has the declared kind / is a choice."""
        if value is None and self.alias_of is None and (self.default is None or self.nullable):
            return
        ok = {
            "int": lambda x: isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_)),
            "float": lambda x: isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_)),
            "str": lambda x: isinstance(x, str),
            "bool": lambda x: isinstance(x, (bool, np.bool_)),
            "dict": lambda x: isinstance(x, dict),
            "any": lambda x: True,
        }[self.kind](value)
        if not ok:
            raise InputError(f"integrator {integrator!r}: option {self.name!r} must be {self.describe_kind()}, "
                             f"got {value!r} ({type(value).__name__})")
        if self.choices is not None and value not in self.choices:
            raise InputError(f"integrator {integrator!r}: option {self.name!r} must be one of "
                             f"{', '.join(map(repr, self.choices))}; got {value!r}")

    def describe_kind(self) -> str:
        none = " or None" if self.default is None or self.nullable else ""
        if self.choices is not None:
            return "one of " + ", ".join(map(repr, self.choices)) + none
        k = {"int": "an integer", "float": "a real number", "str": "a string", "bool": "a bool",
             "dict": "a dict", "any": "any value"}[self.kind]
        return k + none
