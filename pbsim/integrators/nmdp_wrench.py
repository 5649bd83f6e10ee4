"""The options of NMDP's contact wrench (:mod:`pbsim.contact.nmdp`) shared by the methods over it
(``ne_mdp``; ``nmdp``, ``nmdp_zo``): their specs and the resolution of their defaults.

Not a method: no ``register`` here (the registry's discovery imports it like a method's module).
"""

from __future__ import annotations

import math

from pbsim.contact.nmdp import check_wrench_parameters, default_k
from pbsim.integrators.options import Option

VX = 4  # default friction directions per contact point (the aligned pyramid of B-T3)
MARGIN = 0.02  # [m] the contact set's band (note B5 item 8)
ZETA_FRACTION = 1e-3  # default zeta = ZETA_FRACTION k delta_ref^3 (the capacity at depth 0.1 delta_ref)

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
