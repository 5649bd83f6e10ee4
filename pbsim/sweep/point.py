"""One sweep point: a batched rollout (``on_nan="stop"``) and its row of numbers."""

from __future__ import annotations

import os
import socket
import time
import traceback

import numpy as np

from pbsim.errors import InputError
from pbsim.sweep.params import PARAMS


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
