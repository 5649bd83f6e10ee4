"""A CMA-ES sweep's search space (bounds, log scales, the unit box) and its objective, checked before anything runs."""

from __future__ import annotations

import numpy as np

from pbsim.errors import InputError
from pbsim.sweep.params import DEFAULTS, PARAMS, check_keys
from pbsim.sweep.results import _number

# the continuous parameters of PARAMS a CMA-ES space may hold (besides float integrator options)
FLOAT_PARAMS = ("dt", "kp", "kd", "mu", "stiffness", "damping", "noise")
# the numeric result columns of run_point's rows: what an objective may be
NUMERIC_RESULTS = (
    "energy_drift_max",
    "energy_drift",
    "energy_start",
    "energy_end",
    "max_penetration",
    "iterations",
    "t_end",
    "load_s",
    "wall_s",
    "compile_s",
    "steps_per_s",
)
# |E(T) - E(0)| at its worst over the batch: the integrator's energy error (minimised)
DEFAULT_OBJECTIVE = "energy_drift_max"
LOG_RATIO = 100.0  # a bound pair with lo > 0 and hi / lo above this is searched on a log scale


def parse_space(items) -> dict:
    """``["dt=0.001:0.02", "kp=1:1000"]`` -> ``{"dt": (0.001, 0.02), "kp": (1.0, 1000.0)}``
    (the keys checked by :func:`check_space` in :func:`run_cmaes`)."""
    space: dict = {}
    for it in items:
        k, sep, rng = it.partition("=")
        k = k.strip()
        lo, sep2, hi = rng.partition(":")
        if not sep or not sep2 or not k:
            raise InputError(f"--cmaes item {it!r}: expected KEY=LO:HI")
        if k in space:
            raise InputError(f"--cmaes key {k!r} given twice")
        try:
            space[k] = (float(lo), float(hi))
        except ValueError:
            raise InputError(f"--cmaes {k}={rng}: LO and HI must be numbers") from None
    return space


def check_space(space: dict, integrator: str | None = None) -> dict:
    """``{key: (lo, hi)}`` as floats, with each key's scale (``"log"`` where lo > 0 and hi / lo >
    :data:`LOG_RATIO`, else ``"linear"``): ``{key: (lo, hi, scale)}``.  InputError for a key that
    is not a continuous parameter (:data:`FLOAT_PARAMS`) or a float option of ``integrator``, for
    lo >= hi or a non-finite bound, and for fewer than 2 keys (cma's CMA-ES needs n >= 2)."""
    from pbsim.integrators import describe_options

    opts = {}
    if integrator is not None:
        try:
            opts = describe_options(integrator, aliases=True)
        except Exception:  # noqa: BLE001 - an unknown integrator is refused by the rollout, as a row
            opts = {}
    out = {}
    for k, b in space.items():
        if k not in FLOAT_PARAMS and not (k in opts and opts[k].kind == "float"):
            why = (
                f"an integer or text parameter ({PARAMS[k][0].__name__})"
                if k in PARAMS
                else f"an option of integrator {integrator!r} of kind {opts[k].kind!r}"
                if k in opts
                else f"neither a sweep parameter nor an option of integrator {integrator!r}"
            )
            floats = [o for o, spec in opts.items() if spec.kind == "float"]
            raise InputError(
                f"CMA-ES parameter {k!r} is {why}; a CMA-ES space holds continuous parameters: "
                f"{', '.join(FLOAT_PARAMS)}"
                + (f", or a float option of {integrator}: {', '.join(floats)}" if floats else "")
            )
        try:
            lo, hi = (float(v) for v in b)
        except (TypeError, ValueError):
            raise InputError(f"CMA-ES parameter {k!r}: bounds must be two numbers (lo, hi), got {b!r}") from None
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise InputError(f"CMA-ES parameter {k!r}: bounds must be finite, got {lo:g}:{hi:g}")
        if lo >= hi:
            raise InputError(f"CMA-ES parameter {k!r}: lower bound {lo:g} >= upper bound {hi:g}")
        out[k] = (lo, hi, "log" if lo > 0 and hi / lo > LOG_RATIO else "linear")
    if len(out) < 2:
        raise InputError(
            f"CMA-ES needs at least 2 parameters (the cma package's restriction), got {len(out)}"
            + (f" ({', '.join(out)})" if out else "")
            + "; for one parameter use --grid"
        )
    return out


def decode(space: dict, u) -> dict:
    """A point of the unit box ``u`` (one value per key of :func:`check_space`'s ``space``, in
    [0, 1]) as parameter values: ``lo + u (hi - lo)``, or ``lo (hi / lo) ** u`` on a log scale."""
    out = {}
    for (k, (lo, hi, scale)), ui in zip(space.items(), np.clip(np.asarray(u, float), 0.0, 1.0)):
        v = lo * (hi / lo) ** ui if scale == "log" else lo + ui * (hi - lo)
        out[k] = float(min(max(v, lo), hi))
    return out


def check_objective(objective: str) -> None:
    """InputError unless ``objective`` is a numeric column of :func:`run_point`'s rows
    (:data:`NUMERIC_RESULTS`); the message lists them."""
    if objective not in NUMERIC_RESULTS:
        raise InputError(
            f"objective {objective!r} is not a numeric column of a row; numeric columns: {', '.join(NUMERIC_RESULTS)}"
        )


def check_cmaes(space: dict, fixed: dict, objective: str | None = DEFAULT_OBJECTIVE) -> dict:
    """The checks :func:`run_cmaes` makes before anything runs; returns :func:`check_space`'s
    ``{key: (lo, hi, scale)}``.  InputError for a bad space (:func:`check_space`, against the
    points' integrator), an unknown fixed key, a key both fixed and searched, ``kp``/``kd``
    searched without ``control=pd``/``spd`` and ``mu``/``stiffness``/``damping`` with
    ``ground=none`` (every candidate would be an error row), and an unknown ``objective``
    (:func:`check_objective`; None: not checked)."""
    integ = fixed.get("integrator", DEFAULTS["integrator"])
    sp = check_space(space, integ if isinstance(integ, str) else None)
    check_keys(fixed)
    clash = sorted(set(sp) & set(fixed))
    if clash:
        raise InputError(f"{', '.join(clash)} both fixed and in the CMA-ES space; give each once")
    gains = [k for k in ("kp", "kd") if k in sp]
    control = fixed.get("control", DEFAULTS["control"])
    if gains and control not in ("pd", "spd"):
        raise InputError(f"{'/'.join(gains)} in the CMA-ES space need control=pd or control=spd, not {control}")
    contact = [k for k in ("mu", "stiffness", "damping") if k in sp]
    if contact and fixed.get("ground", DEFAULTS["ground"]) in (None, "none"):
        raise InputError(f"{', '.join(contact)} in the CMA-ES space with ground=none: there is no contact")
    if objective is not None:
        check_objective(objective)
    return sp


def objective_value(row: dict, objective: str) -> float:
    """The value CMA-ES sees for a row: its ``objective`` column, NaN unless the row is ``ok`` and
    the value a finite number (a diverged, failed or timed-out candidate)."""
    v = row.get(objective)
    if row.get("status") != "ok" or not _number(v) or not np.isfinite(v):
        return float("nan")
    return float(v)
