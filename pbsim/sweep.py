"""Parameter sweeps of batched rollouts, run as Ray tasks (``pbsim sweep``; docs/sweep.md).

A sweep is a list of *points*, each a dict of parameters (:data:`PARAMS`, plus any integrator
option by name), usually the product of a grid (:func:`parse_grid`, :func:`expand`).  Every point
is one Ray task running one batched rollout (:func:`run_point`: ``pbsim.rollout(..., batch=B,
on_nan="stop")``) and returning one row of numbers; :func:`run_sweep` submits them with at most
``workers`` in flight, gathers the rows in the points' order, and never loses one: a point whose
rollout raised is a row with ``status="error"`` and the error; a task whose worker died is retried
by Ray (``max_retries``) and, when every try died, is a row with the Ray error; a task over
``timeout`` is cancelled and is a row with ``status="timeout"``; a rollout in which a trajectory
broke the shared divergence rule is a row with ``status="diverged"``, how many of the batch did
and the first one's reason.  :func:`write_rows` writes CSV (or Parquet through pyarrow),
:func:`plot_rows` a summary figure.

:func:`run_cmaes` replaces the grid by CMA-ES (:func:`pbsim.optim.cmaes.cmaes`) over continuous
parameters within bounds: each generation's candidates are points run the same way, through one
Ray session for all generations, every row kept with its ``generation`` and ``candidate``;
:func:`plot_cmaes` draws its learning curve.

Ray is optional (``pip install 'pbsim[sweep]'``); nothing here imports it at module level.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import pickle
import socket
import time
import traceback
from dataclasses import dataclass
from typing import Callable

import numpy as np

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


def _initial_state(model, p):
    from pbsim.dynamics.api import integrate

    B = int(p["batch"])
    q0 = np.tile(np.asarray(model.default_configuration(), float), (B, 1))
    if p.get("noise"):
        rng = np.random.default_rng(int(p.get("seed", 0)))
        q0 = integrate(model, q0, float(p["noise"]) * rng.standard_normal((B, model.nv)))
    return q0, np.zeros((B, model.nv))


def _control(model, p):
    mode = p.get("control", "torque")
    if mode in (None, "torque", "none"):
        if p.get("kp") is not None or p.get("kd") is not None:
            raise InputError("kp/kd need control=pd or control=spd")
        return None
    if mode not in ("pd", "spd"):
        raise InputError(f"control={mode!r}: expected torque, pd or spd")
    from pbsim.control import Control
    from pbsim.control.motions import default_gains

    kp0, kd0 = default_gains(model)
    kp = kp0 if p.get("kp") is None else float(p["kp"])
    kd = kd0 if p.get("kd") is None else float(p["kd"])
    return Control(mode=mode, kp=kp, kd=kd, q_ref=np.asarray(model.default_configuration(), float))


def _scene(model, p):
    from pbsim.contact import default_scene

    kw = {k: float(p[k]) for k in ("mu", "stiffness", "damping") if p.get(k) is not None}
    ground = p.get("ground", "model")
    if ground in (None, "none") and kw:
        raise InputError(f"{', '.join(kw)} set with ground=none: there is no contact to apply them to")
    return default_scene(model, ground=None if ground == "none" else ground, **kw)


def run_point(model, point: dict) -> dict:
    """One point: a batched rollout (``on_nan="stop"``) and its row of :data:`RESULT_COLUMNS`
    (``status`` "ok", "diverged" or "error"; an exception is caught into ``error``)."""
    import pbsim

    row = {"status": "ok", "error": "", "host": socket.gethostname(), "pid": os.getpid()}
    t0 = time.perf_counter()
    try:
        p = point
        opts = {k: v for k, v in p.items() if k not in PARAMS}
        q0, v0 = _initial_state(model, p)
        kw = dict(dt=float(p["dt"]), q0=q0, v0=v0, control=_control(model, p), scene=_scene(model, p), on_nan="stop")
        if p.get("device", "cpu") != "cpu":
            kw["device"] = p["device"]
        # one step first: loading the kernels from numba's cache (or compiling them) is not the run's time
        pbsim.rollout(model, p["integrator"], steps=1, **kw, **opts)
        t1 = time.perf_counter()
        row["load_s"] = t1 - t0
        traj = pbsim.rollout(
            model, p["integrator"], steps=int(p["steps"]), record_every=int(p.get("record_every", 100)), **kw, **opts
        )
        wall = time.perf_counter() - t1
        compile_s = float(traj.info.get("compile_s", 0.0))
        E = np.asarray(traj.energy, float).reshape(len(traj.t), -1)
        div = np.asarray(traj.diverged, bool).reshape(-1)
        first = traj.info.get("divergence")
        first = first if isinstance(first, list) else [first]
        reason = next((d for d in first if d), None)
        drift = (E[-1] - E[0])[~div]  # over the trajectories that did not diverge
        pen = traj.info.get("max_penetration")
        it = traj.info.get("iterations")
        row.update(
            status="diverged" if div.any() else "ok",
            diverged=int(div.sum()),
            divergence=(f"step {reason['step']} (t {reason['t']:.4g} s): {reason['why']}" if reason else ""),
            t_end=float(traj.t[-1]),
            energy_start=float(E[0].mean()),
            energy_end=float(E[-1][~div].mean()) if (~div).any() else np.nan,
            energy_drift=float(drift.mean()) if drift.size else np.nan,
            energy_drift_max=float(np.abs(drift).max()) if drift.size else np.nan,
            max_penetration=float(np.max(pen)) if pen is not None and np.size(pen) else np.nan,
            iterations=float(np.mean(it)) if it is not None else np.nan,
            wall_s=wall,
            compile_s=compile_s,
            steps_per_s=int(p["steps"]) * int(p["batch"]) / max(wall - compile_s, 1e-9),
        )
    except Exception as e:  # noqa: BLE001 - every failure of a point is a row, not a lost task
        row.update(status="error", error=f"{type(e).__name__}: {e}".strip(), wall_s=time.perf_counter() - t0)
        row["traceback"] = traceback.format_exc(limit=6)
    return row


def _task(fn, model_bytes, point, threads):
    """The body of one Ray task: ``threads`` numba threads, then ``fn(model, point)``.  The model
    travels pickled: Ray's object store hands numpy arrays over read-only, and numba compiles (and
    does not cache) a separate specialization of every kernel for read-only arrays."""
    model = pickle.loads(model_bytes)
    if threads:
        try:
            import numba

            numba.set_num_threads(max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS)))
        except Exception:  # noqa: BLE001 - a thread setting never fails a point
            pass
    return fn(model, point)


def task_options(point: dict, threads: int, max_retries: int) -> dict:
    """Ray's resource request for one point: ``threads`` CPUs, and one whole GPU when the point runs
    on ``device="cuda"`` (Ray then sets ``CUDA_VISIBLE_DEVICES`` to that GPU for the task)."""
    opts = {"num_cpus": threads, "max_retries": max_retries}
    if point.get("device", "cpu") == "cuda":
        opts["num_gpus"] = 1
    return opts


def _ray_error(e: BaseException) -> str:
    """The message of a failed Ray task: the task's own exception when it raised one (Ray wraps it
    in a RayTaskError), else Ray's error (WorkerCrashedError ...) and its first lines."""
    import re

    cause = getattr(e, "cause", None)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {cause}".strip()
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(e))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return f"{type(e).__name__}: {' '.join(lines[:2])}"[:500]


def _error_row(status: str, err: str) -> dict:
    return {"status": status, "error": err}


class RaySweep:
    """A connection to Ray for sweeps: a local Ray of ``workers`` CPUs started here when
    ``address`` is None (shut down by :meth:`close`), else the cluster at ``address`` ("auto":
    the one ``ray start`` made on this machine; "ray://host:10001": Ray Client).  :meth:`map`
    runs points as tasks; it can be called many times (a CMA-ES generation each)."""

    def __init__(
        self,
        address: str | None = None,
        workers: int = 2,
        threads: int = 1,
        max_retries: int = 3,
        timeout: float | None = None,
        init_kwargs: dict | None = None,
    ):
        try:
            import ray
        except ImportError:
            raise InputError("pbsim sweep runs on Ray: pip install 'pbsim[sweep]' (or pip install ray)") from None
        self.ray = ray
        self.workers = max(1, int(workers))
        self.threads = max(1, int(threads))
        self.max_retries = int(max_retries)
        self.timeout = timeout
        self.own = False
        if not ray.is_initialized():
            kw = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
            if address is None:
                kw["num_cpus"] = self.workers * self.threads
            kw.update(init_kwargs or {})
            ray.init(address=address, **kw)
            self.own = True
        self._remote = ray.remote(_task)
        self._models: dict = {}

    def close(self) -> None:
        if self.own and self.ray.is_initialized():
            self.ray.shutdown()
        self.own = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _model_ref(self, models, name):
        if name not in self._models:
            m = models(name) if callable(models) else models[name]
            self._models[name] = self.ray.put(pickle.dumps(m))
        return self._models[name]

    def map(self, points: list[dict], models, fn: Callable = run_point, progress: Callable | None = None) -> list[dict]:
        """One row per point, in order: ``{"index": i, **point, **fn(model, point)}``.
        ``models``: ``{name: Model}`` or a callable ``name -> Model`` (called once per variant,
        here; the model goes to the workers through Ray's object store); a point's ``model`` key
        names its variant.  ``progress(done, total, row)`` after each task."""
        ray = self.ray
        rows: list = [None] * len(points)
        pending = list(range(len(points)))[::-1]
        running: dict = {}  # ref -> (index, start)
        done = 0
        while pending or running:
            while pending and len(running) < self.workers:
                i = pending.pop()
                try:
                    ref = self._remote.options(**task_options(points[i], self.threads, self.max_retries)).remote(
                        fn, self._model_ref(models, points[i]["model"]), points[i], self.threads
                    )
                    running[ref] = (i, time.perf_counter())
                except Exception as e:  # noqa: BLE001 - e.g. a model that does not load: a row
                    rows[i] = _error_row("error", f"{type(e).__name__}: {e}")
                    done += 1
                    if progress:
                        progress(done, len(points), {"index": i, **points[i], **rows[i]})
            if not running:
                continue
            wait_s = None
            if self.timeout:
                oldest = min(s for _, s in running.values())
                wait_s = max(0.05, oldest + self.timeout - time.perf_counter())
            ready, _ = ray.wait(list(running), num_returns=1, timeout=wait_s)
            now = time.perf_counter()
            finished = []
            for ref in ready:
                i, _ = running.pop(ref)
                try:
                    rows[i] = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - every retry died, or a Ray error: a row
                    rows[i] = _error_row("error", _ray_error(e))
                finished.append(i)
            if self.timeout:
                for ref, (i, s) in list(running.items()):
                    if now - s > self.timeout:
                        ray.cancel(ref, force=True)
                        running.pop(ref)
                        rows[i] = _error_row("timeout", f"cancelled after {self.timeout:g} s")
                        finished.append(i)
            for i in finished:
                done += 1
                if progress:
                    progress(done, len(points), {"index": i, **points[i], **rows[i]})
        return [{"index": i, **p, **r} for i, (p, r) in enumerate(zip(points, rows))]


def run_sweep(
    points: list[dict],
    models,
    address: str | None = None,
    workers: int = 2,
    threads: int = 1,
    max_retries: int = 3,
    timeout: float | None = None,
    fn: Callable = run_point,
    progress: Callable | None = None,
    init_kwargs: dict | None = None,
) -> list[dict]:
    """Run ``points`` on Ray (:class:`RaySweep`) and return their rows in order; a local Ray
    started here is shut down before returning."""
    with RaySweep(address, workers, threads, max_retries, timeout, init_kwargs) as rs:
        return rs.map(points, models, fn, progress)


# ---- CMA-ES over continuous parameters (``pbsim sweep --cmaes``) ----------------------------

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
# the columns run_cmaes adds to every row (after ``index``)
CMAES_COLUMNS = ("generation", "candidate", "objective")
LOG_RATIO = 100.0  # a bound pair with lo > 0 and hi / lo above this is searched on a log scale
# cma's stops on equal values off: a generation whose candidates all failed (all ranked worst,
# equal) or a flat objective does not end the search; cma's stops on x (tolx ...) stay
CMA_OPTIONS = {"tolfun": 0, "tolfunhist": 0}


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


def _numeric_columns(rows) -> list[str]:
    skip = {"index", "generation", "candidate", "pid", "objective"}
    return [c for c in columns(rows) if c not in skip and any(_number(r.get(c)) for r in rows)]


def objective_value(row: dict, objective: str) -> float:
    """The value CMA-ES sees for a row: its ``objective`` column, NaN unless the row is ``ok`` and
    the value a finite number (a diverged, failed or timed-out candidate)."""
    v = row.get(objective)
    if row.get("status") != "ok" or not _number(v) or not np.isfinite(v):
        return float("nan")
    return float(v)


@dataclass
class CmaesSweep:
    """The result of :func:`run_cmaes`.  ``rows``: every candidate of every generation (the
    points' parameters, :data:`RESULT_COLUMNS`, ``generation`` (1-based), ``candidate`` (0-based
    in its generation), ``objective`` (the value CMA-ES saw; NaN for a candidate that failed or
    diverged)); ``best``: the best candidate's values of the space's parameters (None when no
    candidate had a finite objective), ``best_value``, ``best_row``; ``history``: per generation
    (:class:`pbsim.optim.cmaes.CmaResult`'s arrays: best, median, failed, sigma ...);
    ``space``: ``{key: (lo, hi, scale)}``; ``objective``, ``maximize``, ``stop``."""

    rows: list
    best: dict | None
    best_value: float
    best_row: dict | None
    history: dict
    space: dict
    objective: str
    maximize: bool
    stop: str = ""


def run_cmaes(
    space: dict,
    fixed: dict,
    models,
    objective: str = DEFAULT_OBJECTIVE,
    maximize: bool = False,
    generations: int = 10,
    popsize: int | None = None,
    sigma0: float = 0.3,
    seed: int = 0,
    address: str | None = None,
    workers: int = 2,
    threads: int = 1,
    max_retries: int = 3,
    timeout: float | None = None,
    fn: Callable = run_point,
    progress: Callable | None = None,
    callback: Callable | None = None,
    runner: RaySweep | None = None,
    init_kwargs: dict | None = None,
    options: dict | None = None,
) -> CmaesSweep:
    """CMA-ES (:func:`pbsim.optim.cmaes.cmaes`) over the continuous parameters ``space`` (``{key:
    (lo, hi)}``: :data:`FLOAT_PARAMS` or float options of the points' integrator, at least 2), the
    other parameters ``fixed`` (completed with :data:`DEFAULTS`); minimising (``maximize``:
    maximising) the row column ``objective`` (:data:`NUMERIC_RESULTS`; default the energy error
    ``energy_drift_max``).

    The search runs in the unit box [0, 1]^n (cma's bounds), starting at its centre with step
    ``sigma0``; a key is mapped linearly onto [lo, hi], or logarithmically where lo > 0 and hi /
    lo > :data:`LOG_RATIO`.  Each generation's ``popsize`` candidates (default cma's 4 + 3 ln n)
    are points, run as Ray tasks (``fn``, default :func:`run_point`) through one :class:`RaySweep`
    for the whole search (``runner``, or one opened here from ``address`` ... ``init_kwargs`` and
    closed at the end).  A candidate whose row is not ``ok`` or whose objective is not finite is
    NaN to CMA-ES (it ranks it worst) and its row is kept.  ``progress(done, total, row)`` after
    each task; ``callback(generation, rows, history)`` after each generation, the history so far
    as in :class:`CmaesSweep`.  Rows are numbered ``index`` 0, 1, ... over all generations.
    ``options``: further ``cma.CMAOptions`` over :data:`CMA_OPTIONS` (cma's stops on equal
    values off, so that an all-failed generation does not end the search)."""
    from pbsim.optim.cmaes import cmaes

    fixed = dict(fixed or {})
    sp = check_cmaes(space, fixed, objective if fn is run_point else None)
    if int(generations) < 1:
        raise InputError(f"generations must be >= 1, got {generations}")
    if popsize is not None and int(popsize) < 2:
        raise InputError(f"popsize must be >= 2, got {popsize}")
    base = {**DEFAULTS, **fixed}
    rows: list = []
    state = {"generation": 0, "rows": []}

    def evaluate(rs, X):
        g = state["generation"] = state["generation"] + 1
        pts = [{**base, **decode(sp, x)} for x in X]
        start = len(rows)

        def prog(done, total, row):
            if progress:
                progress(
                    done, total, {**row, "index": start + row["index"], "generation": g, "candidate": row["index"]}
                )

        out = rs.map(pts, models, fn, prog)
        if g == 1 and fn is not run_point and not any(_number(r.get(objective)) for r in out):
            raise InputError(
                f"objective {objective!r} is not a numeric column of a row; numeric columns: "
                f"{', '.join(_numeric_columns(out)) or 'none'}"
            )
        gen = []
        for c, r in enumerate(out):
            r = {**r, "index": start + c, "generation": g, "candidate": c}
            r["objective"] = objective_value(r, objective)
            gen.append(r)
        rows.extend(gen)
        state["rows"] = gen
        return np.array([r["objective"] for r in gen])

    def on_generation(g, res):
        if callback is not None:
            return callback(g, state["rows"], res.history)
        return False

    def search(rs):
        return cmaes(
            lambda X: evaluate(rs, X),
            x0=np.full(len(sp), 0.5),
            sigma0=sigma0,
            generations=generations,
            popsize=popsize,
            seed=seed,
            bounds=[0.0, 1.0],
            maximize=maximize,
            callback=on_generation,
            options={**CMA_OPTIONS, **(options or {})},
        )

    if runner is not None:
        res = search(runner)
    else:
        with RaySweep(address, workers, threads, max_retries, timeout, init_kwargs) as rs:
            res = search(rs)
    finite = [r for r in rows if np.isfinite(r["objective"])]
    best_row = (max if maximize else min)(finite, key=lambda r: r["objective"]) if finite else None
    return CmaesSweep(
        rows=rows,
        best={k: best_row[k] for k in sp} if best_row else None,
        best_value=best_row["objective"] if best_row else float("nan"),
        best_row=best_row,
        history=res.history,
        space=sp,
        objective=objective,
        maximize=maximize,
        stop=res.stop,
    )


def columns(rows: list[dict]) -> list[str]:
    """``index`` (and a CMA-ES sweep's ``generation``, ``candidate``, ``objective``), the
    parameters (:data:`PARAMS` and integrator options, in first-seen order), then
    :data:`RESULT_COLUMNS`, then anything else a custom task function returned."""
    names = set(PARAMS) | _option_names()
    lead = [c for c in CMAES_COLUMNS if any(c in r for r in rows)]
    params, extra = [], []
    for r in rows:
        for k in r:
            if k in ("index", "traceback") or k in RESULT_COLUMNS or k in CMAES_COLUMNS:
                continue
            target = params if k in names else extra
            if k not in target:
                target.append(k)
    return ["index", *lead, *params, *RESULT_COLUMNS, *extra]


def _number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def write_rows(rows: list[dict], path) -> str:
    """Write the rows to ``path``: Parquet when it ends in .parquet (needs pyarrow), else CSV
    (missing values empty).  Returns the path."""
    cols = columns(rows)
    os.makedirs(os.path.dirname(os.path.abspath(str(path))), exist_ok=True)
    if str(path).endswith(".parquet"):
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise InputError(f"{path}: Parquet needs pyarrow (pip install pyarrow); or write .csv") from None
        data = {}
        for c in cols:
            vals = [r.get(c) for r in rows]
            if all(_missing(v) or _number(v) for v in vals):
                data[c] = pa.array([np.nan if _missing(v) else float(v) for v in vals], pa.float64())
            else:
                data[c] = pa.array([None if _missing(v) else str(v) for v in vals], pa.string())
        pq.write_table(pa.table(data), str(path))
        return str(path)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow(["" if _missing(r.get(c)) else _fmt(r.get(c)) for c in cols])
    return str(path)


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and np.isnan(v))


def _fmt(v):
    return repr(float(v)) if isinstance(v, (float, np.floating)) else v


def read_csv(path) -> list[dict]:
    """The rows of a sweep CSV (numbers as floats where they parse)."""
    out = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            row = {}
            for k, v in r.items():
                try:
                    row[k] = float(v) if v != "" else None
                except ValueError:
                    row[k] = v
            out.append(row)
    return out


def summary(rows: list[dict]) -> str:
    """One line: how many rows of each status."""
    n = {s: sum(r.get("status") == s for r in rows) for s in STATUSES}
    return f"{len(rows)} rows: " + ", ".join(f"{v} {k}" for k, v in n.items() if v or k == "ok")


def plot_rows(rows: list[dict], path, title: str = "") -> str:
    """A figure of the sweep: ``|energy drift|`` (max over the batch) and simulated steps/s
    against the first numeric parameter that varies (dt by preference), one line per combination
    of the other varying parameters; diverged points marked x at the top, errors o at the bottom."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    skip = {"index", "pid", "host", "traceback", *RESULT_COLUMNS}
    varying = [k for k in columns(rows) if k not in skip and len({json.dumps(r.get(k), default=str) for r in rows}) > 1]
    numeric = [k for k in varying if all(isinstance(r.get(k), (int, float)) for r in rows)]
    xkey = "dt" if "dt" in numeric else (numeric[0] if numeric else "index")
    series = [k for k in varying if k != xkey]
    groups: dict = {}
    for r in rows:
        groups.setdefault(tuple(str(r.get(k)) for k in series), []).append(r)
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for key, rs in groups.items():
        rs = sorted(rs, key=lambda r: r.get(xkey) or 0)
        label = ", ".join(f"{k}={v}" for k, v in zip(series, key)) or "all"
        ok = [r for r in rs if r.get("status") == "ok"]
        (line,) = ax[0].plot(
            [r[xkey] for r in ok], [max(abs(r["energy_drift_max"]), 1e-16) for r in ok], "o-", label=label
        )
        ax[1].plot([r[xkey] for r in ok], [r["steps_per_s"] for r in ok], "o-", color=line.get_color(), label=label)
        bad = [r for r in rs if r.get("status") == "diverged"]
        if bad:
            ax[0].plot([r[xkey] for r in bad], [1e6] * len(bad), "x", ms=10, color=line.get_color())
        err = [r for r in rs if r.get("status") in ("error", "timeout")]
        if err:
            ax[0].plot([r[xkey] for r in err], [1e-15] * len(err), "o", mfc="none", ms=10, color=line.get_color())
    for a in ax:
        a.set_xlabel(xkey)
        if xkey != "index":
            a.set_xscale("log")
        a.set_yscale("log")
        a.grid(True, which="both", alpha=0.3)
    ax[0].set_ylabel("max |E(T) - E(0)| over the batch [J]")
    ax[0].set_title("energy drift (x: diverged, o: error)")
    ax[1].set_ylabel("simulated steps/s (trajectories x steps / wall)")
    ax[1].set_title("throughput per task")
    ax[1].legend(fontsize=7)
    fig.suptitle(title or summary(rows))
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(str(path))), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)


def plot_cmaes(
    rows: list[dict],
    path,
    objective: str = "objective",
    space: dict | None = None,
    maximize: bool = False,
    title: str = "",
) -> str:
    """The learning curve of a CMA-ES sweep (:func:`run_cmaes`'s rows, or :func:`read_csv` of its
    file; ``objective`` only names the axis, the values are the rows' ``objective`` column): every
    candidate's value per generation (failed or diverged candidates as x at the bottom), the best
    (``maximize``: the largest) and the median of each generation and the best so far; beside it each
    parameter of ``space`` (default: the numeric parameters that vary), candidates as dots and the
    generation's mean as a line, scaled to its [lo, hi] (log where :func:`check_space` says so)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gens = sorted({int(r["generation"]) for r in rows})
    val = {g: np.array([objective_value(r, "objective") for r in rows if int(r["generation"]) == g]) for g in gens}
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    ok = [(r["generation"], r["objective"]) for r in rows if np.isfinite(objective_value(r, "objective"))]
    if ok:
        ax[0].plot(*zip(*ok), ".", color="0.6", label="candidates")
    pick = np.nanmax if maximize else np.nanmin
    best = [pick(v) if np.isfinite(v).any() else np.nan for v in val.values()]
    med = [np.nanmedian(v) if np.isfinite(v).any() else np.nan for v in val.values()]
    run = (np.fmax if maximize else np.fmin).accumulate(np.array(best, float))
    ax[0].plot(gens, best, "o-", label="generation best")
    ax[0].plot(gens, med, "s--", label="generation median")
    ax[0].plot(gens, run, "k-", lw=1, label="best so far")
    failed = {g: int((~np.isfinite(v)).sum()) for g, v in val.items() if (~np.isfinite(v)).any()}
    if failed:
        lo = min((y for _, y in ok), default=1.0)
        ax[0].plot(list(failed), [lo] * len(failed), "x", color="C3", ms=8, label="failed / diverged (count)")
        for g, n in failed.items():
            ax[0].annotate(str(n), (g, lo), textcoords="offset points", xytext=(6, 4), color="C3", fontsize=8)
    vals = [y for _, y in ok]
    if vals and min(vals) > 0 and max(vals) / min(vals) > 100:
        ax[0].set_yscale("log")
    ax[0].set_xlabel("generation")
    ax[0].set_ylabel(objective)
    ax[0].set_title("CMA-ES learning curve")
    ax[0].legend(fontsize=7)
    ax[0].grid(True, which="both", alpha=0.3)
    if space is None:
        skip = {"index", "pid", "seed", "steps", "batch", "record_every", *CMAES_COLUMNS, *RESULT_COLUMNS}
        keys = [
            k
            for k in columns(rows)
            if k not in skip and all(_number(r.get(k)) for r in rows) and len({r.get(k) for r in rows}) > 1
        ]
        space = {k: (min(r[k] for r in rows), max(r[k] for r in rows)) for k in keys}
    for i, (k, b) in enumerate(space.items()):
        lo, hi = float(b[0]), float(b[1])
        log = (b[2] == "log") if len(b) > 2 else (lo > 0 and hi / lo > LOG_RATIO)

        def unit(x, lo=lo, hi=hi, log=log):
            if hi <= lo:
                return 0.5
            return np.log(x / lo) / np.log(hi / lo) if log else (x - lo) / (hi - lo)

        pts = [(r["generation"], unit(r[k])) for r in rows if _number(r.get(k))]
        if not pts:
            continue
        g_, u_ = zip(*pts)
        ax[1].plot(np.asarray(g_) + 0.05 * (i - len(space) / 2), u_, ".", color=f"C{i}", alpha=0.5)
        mean = [np.mean([u for gg, u in pts if gg == g]) for g in gens]
        ax[1].plot(gens, mean, "-", color=f"C{i}", label=f"{k} in [{lo:g}, {hi:g}]" + (" (log)" if log else ""))
    ax[1].set_ylim(-0.05, 1.05)
    ax[1].set_xlabel("generation")
    ax[1].set_ylabel("parameter, scaled to its bounds (0 = lo, 1 = hi)")
    ax[1].set_title("candidates (dots) and generation mean")
    ax[1].legend(fontsize=7)
    ax[1].grid(True, alpha=0.3)
    fig.suptitle(title or summary(rows))
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(str(path))), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)
