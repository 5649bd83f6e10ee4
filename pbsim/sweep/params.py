"""The sweep parameters, their defaults and row columns; grids and spec files parsed and expanded into points."""

from __future__ import annotations

import itertools
import json

from pbsim.errors import InputError

# parameter -> (type, meaning); any other key must be an integrator option (validated by rollout)
PARAMS = {
    "model": (str, "model variant: a generated model name or a robot file (loaded once, sent to the workers)"),
    "integrator": (str, "integrator name (`pbsim integrators`)"),
    "dt": (float, "time step [s]"),
    "steps": (int, "steps per trajectory"),
    "batch": (int, "trajectories per task (one batched rollout)"),
    "control": (str, "torque (none), pd or spd: PD / stable PD holding the initial pose"),
    "kp": (float, "PD/SPD stiffness (default: 30 N m/rad per kg of robot)"),
    "kd": (float, "PD/SPD damping (default: 1 N m s/rad per kg)"),
    "ground": (str, "model (the file's world geometry), plane, auto or none"),
    "mu": (float, "Coulomb friction coefficient of the contact scene"),
    "stiffness": (float, "contact normal stiffness per point [N/m]"),
    "damping": (float, "contact normal damping per point [N s/m]"),
    "noise": (float, "std of the initial perturbation q0 (+) noise * N(0, 1) per trajectory [rad or m]"),
    "seed": (int, "seed of that perturbation"),
    "record_every": (int, "keep every k-th frame (the metrics use the last frame)"),
    "device": (str, "cpu, or cuda: the batch on a GPU (pbsim.rollout(device='cuda')), one GPU per Ray task"),
}
DEFAULTS = {
    "integrator": "rk4",
    "dt": 1e-3,
    "steps": 1000,
    "batch": 8,
    "control": "torque",
    "ground": "model",
    "noise": 0.0,
    "seed": 0,
    "record_every": 100,
}
STATUSES = ("ok", "diverged", "error", "timeout")
# the columns every row has, after the point's parameters (docs/sweep.md)
RESULT_COLUMNS = (
    "status",
    "error",
    "diverged",
    "divergence",
    "t_end",
    "energy_start",
    "energy_end",
    "energy_drift",
    "energy_drift_max",
    "max_penetration",
    "iterations",
    "load_s",
    "wall_s",
    "compile_s",
    "steps_per_s",
    "host",
    "pid",
)
# the columns run_cmaes adds to every row (after ``index``)
CMAES_COLUMNS = ("generation", "candidate", "objective")


def _option_names() -> set[str]:
    from pbsim.integrators import available, describe_options

    return {o for n in available() for o in describe_options(n, aliases=True)}


def _convert(key: str, text):
    """A grid value from the command line: the parameter's own type, else int/float/bool/str."""
    if not isinstance(text, str):
        return text
    typ = PARAMS.get(key, (None,))[0]
    if typ is str:
        return text
    if typ is not None:
        try:
            return typ(float(text)) if typ is int and "e" in text.lower() else typ(text)
        except ValueError:
            raise InputError(f"{key}={text!r}: expected {typ.__name__}") from None
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    for t in (int, float):
        try:
            return t(text)
        except ValueError:
            pass
    return text


def check_keys(keys) -> None:
    """Every key is a parameter of :data:`PARAMS` or an integrator option; else an InputError
    naming the closest valid ones."""
    import difflib

    valid = set(PARAMS) | _option_names()
    bad = [k for k in keys if k not in valid]
    if bad:
        msgs = []
        for k in bad:
            close = difflib.get_close_matches(k, sorted(valid), n=3, cutoff=0.6)
            msgs.append(k + (f" (did you mean {' or '.join(close)}?)" if close else ""))
        raise InputError(
            f"unknown sweep parameter {', '.join(msgs)}; parameters: {', '.join(PARAMS)}, or an integrator option "
            "(`pbsim integrators`)"
        )


def parse_grid(items) -> dict:
    """``["integrator=euler,rk4", "dt=0.001,0.002"]`` -> ``{"integrator": ["euler", "rk4"], "dt":
    [0.001, 0.002]}``; values typed by :data:`PARAMS` (integrator options: int, float, bool or
    str).  A key given twice is an error."""
    grid: dict = {}
    for it in items:
        if "=" not in it:
            raise InputError(f"grid item {it!r}: expected KEY=V1,V2,...")
        k, vals = it.split("=", 1)
        k = k.strip()
        if k in grid:
            raise InputError(f"grid key {k!r} given twice")
        vs = [v.strip() for v in vals.split(",") if v.strip()]
        if not vs:
            raise InputError(f"grid item {it!r}: no values")
        grid[k] = [_convert(k, v) for v in vs]
    check_keys(grid)
    return grid


def load_spec(path) -> dict:
    """A sweep spec file (JSON, or YAML when PyYAML is installed): ``{"model": ..., "grid": {key:
    [values]}, "set": {key: value}, "points": [{...}, ...]}`` (every part optional)."""
    with open(path) as f:
        text = f.read()
    if str(path).endswith((".yaml", ".yml")):
        try:
            import yaml
        except ImportError:
            raise InputError(f"{path}: a YAML spec needs PyYAML (pip install pyyaml); or write it as JSON") from None
        spec = yaml.safe_load(text)
    else:
        spec = json.loads(text)
    if not isinstance(spec, dict) or set(spec) - {"model", "grid", "set", "points"}:
        raise InputError(f"{path}: a spec is a mapping of model, grid, set and points")
    grid = {k: (v if isinstance(v, list) else [v]) for k, v in (spec.get("grid") or {}).items()}
    fixed = dict(spec.get("set") or {})
    points = list(spec.get("points") or [])
    if spec.get("model") is not None:
        fixed.setdefault("model", spec["model"])
    check_keys(list(grid) + list(fixed) + [k for p in points for k in p])
    return {"grid": grid, "set": fixed, "points": points}


def expand(grid: dict | None = None, fixed: dict | None = None, points=None) -> list[dict]:
    """The points of a sweep: every combination of ``grid`` (keys in their order, the last varying
    fastest) merged over ``fixed``, then the explicit ``points`` (each merged over ``fixed``), each
    completed with :data:`DEFAULTS`."""
    grid, fixed = dict(grid or {}), dict(fixed or {})
    out = []
    if grid or not points:
        keys = list(grid)
        for combo in itertools.product(*(grid[k] for k in keys)):
            out.append({**DEFAULTS, **fixed, **dict(zip(keys, combo))})
    for p in points or []:
        out.append({**DEFAULTS, **fixed, **p})
    return out
