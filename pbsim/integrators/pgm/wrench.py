"""The options of NMDP's contact wrench (:mod:`pbsim.contact.nmdp`) and the bounded body-body candidate buffer.

Their specs and the resolution of their defaults, shared by the methods over the wrench: the PGM's
forms (``nmdp``, ``nmdp_zo``, ``pbd_nmdp``, ``pbd_nmdp_zo``, through :mod:`.integrator`) and the
velocity-level baseline ``ne_mdp``; the buffer (``max_contacts``) also by ``ne_dry``.
"""

from __future__ import annotations

import math

import numpy as np

from pbsim.contact.nmdp import check_wrench_parameters, default_k
from pbsim.errors import InputError
from pbsim.integrators.options import Option

VX = 4  # default friction directions per contact point (the aligned pyramid of B-T3)
MARGIN = 0.02  # [m] the contact set's band (note B5 item 8)
ZETA_FRACTION = 1e-3  # default zeta = ZETA_FRACTION k delta_ref^3 (the capacity at depth 0.1 delta_ref)

MAX_CONTACTS = 256  # default capacity of a step's body-body candidate buffer

MAX_CONTACTS_OPTION = Option(
    "max_contacts",
    MAX_CONTACTS,
    "capacity of the step's body-body candidate buffer (contact between bodies): on "
    "overflow the deepest points are kept and the step is flagged (not converged, extra['contact_overflow'])",
    "int",
)


def check_max_contacts(where: str, v) -> int:
    """``max_contacts`` as an int >= 1, else an InputError naming ``where``."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise InputError(f"{where}: max_contacts must be an integer >= 1, got {v!r}")
    return int(v)


def pair_capacity(ks, max_contacts) -> int:
    """The body-body candidate buffer's size for the scene arrays ``ks``: ``min(max_contacts,
    body-body points)`` (0 without body-body items): memory per trajectory stays bounded."""
    return int(min(int(max_contacts), len(ks.pp_item))) if ks.nitem > 0 else 0


def overflow_warning(name, over, max_contacts, on_fail):
    """Warn (or with ``on_fail='raise'`` raise) when a step's body-body candidate buffer overflowed
    (``over``: (B,) candidates dropped); ``on_fail='ignore'``: nothing."""
    import warnings

    from pbsim.errors import SimulationError

    if not over.any() or on_fail == "ignore":
        return
    i = int(np.flatnonzero(over)[0])
    msg = (
        f"{name}: the body-body contact set overflowed max_contacts = {max_contacts} in {int((over > 0).sum())} "
        f"of {len(over)} trajectories (first: {i}, {int(over[i])} candidate points dropped, the deepest kept); "
        "raise max_contacts"
    )
    if on_fail == "raise":
        raise SimulationError(msg)
    warnings.warn(msg, RuntimeWarning, stacklevel=4)


WRENCH_OPTIONS = (
    Option("k", None, "NMDP contact stiffness k [N/m^3], capacity k d^3 + zeta per point (None: M g / "
           "(4 delta_ref^3), 4 points carry the weight at the scene's delta_ref)", "float"),
    Option("zeta", None, "NMDP capacity of a candidate point out of contact [N] (None: 1e-3 k delta_ref^3)",
           "float"),
    Option("vx", VX, "NMDP friction directions (polytope vertices) per contact point (>= 3)", "int"),
    Option("margin", MARGIN, "contact points with signed distance below this [m] at q or at q + dt v enter "
           "the step's contact set", "float"),
)  # fmt: skip


def wrench_parameters(where: str, model, scene, options) -> tuple[float, float, float, int]:
    """``(mu, k, zeta, vx)`` of a method's ``options``: mu the scene's, ``k`` None -> :func:`default_k`,
    ``zeta`` None -> ``ZETA_FRACTION k delta_ref^3``; InputError naming ``where`` unless valid
    (:func:`check_wrench_parameters`)."""
    k = options.get("k")
    zeta = options.get("zeta")
    vx = options.get("vx", VX)
    mu = scene.mu
    k = default_k(model, scene.delta_ref) if k is None else k
    if zeta is None and isinstance(k, (int, float)) and math.isfinite(k):
        zeta = ZETA_FRACTION * k * scene.delta_ref**3
    check_wrench_parameters(where, mu, k, zeta, vx)
    return float(mu), float(k), float(zeta), int(vx)
