"""Throughput where users feel it (issue #21): pbsim next to MuJoCo and Pinocchio, same run.

(a) single-trajectory ``pbsim.rollout`` per step on chain10 (its compiled step loop; the Python
    loop for reference) against a Python loop of ``mujoco.mj_step`` on the same chain, converted
    from ours with ``pbsim.io.convert`` (MJCF), Euler at the same dt, no contact;
(b) single-call ``aba``/``rnea``/``crba``/forward kinematics on gymnasium's humanoid: ``pbsim.Data``
    (the fast path) and the validated ``pbsim.aba`` ... against Pinocchio from Python (the same
    multibody built through its API, ``bench_dynamics.pin_model``), and one ``pbsim.Stepper``
    euler step against Pinocchio's ``aba`` + ``integrate``;
(c) batched steps/s of gymnasium's humanoid and ant on their floor: pbsim euler with penalty
    contact (``CpuBatch``, every numba thread) against ``mujoco.rollout`` with as many threads
    (one MjData per thread, its persistent thread pool), B = 1, 4, 16, ... up to ``--max-batch`` or until a size takes longer
    than ``--budget`` seconds; each simulator at the file's own timestep, from qpos0 with small
    random joint velocities, passive (zero control);
(d) wall time per simulated second (and its inverse, the realtime factor) of 2 s of the ant and
    the humanoid dropped from qpos0 onto their floor, passive or held toward qpos0 by a PD
    (bench_contact_dt's gains): pbsim pbad/pbfd/nmdp (``rollout``) at large dt against MuJoCo
    (Euler, its own contact; the PD explicit in ``qfrc_applied``) at the largest dt of a sweep
    (1 ms ... 50 ms) up to which every run was stable (stable: no bad-qacc/qpos/qvel warning,
    finite, the torso's height within [0, 2] m at every step; pbsim: not diverged by the shared
    rule and the same height bound).

Single-thread timings are process CPU time (other processes on a shared machine disturb it far
less than wall time), best of ``--repeat`` rounds, the contenders interleaved within each round;
(c) and (d) use wall time (every thread counts).  Prints markdown tables and writes
``docs/img/bench_throughput.png``.

    python scripts/bench/bench_throughput.py [--parts abcde] [--repeat 5] [--max-batch 4096] [--budget 20]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "models"), str(ROOT / "scripts" / "bench")]

import mujoco  # noqa: E402
import numba  # noqa: E402

import pbsim  # noqa: E402
import pbsim_models  # noqa: E402

ROLLOUT = sys.modules["pbsim.rollout"]
_W = mujoco.mjtWarning
BAD = tuple(int(w) for w in (_W.mjWARN_BADQACC, _W.mjWARN_BADQPOS, _W.mjWARN_BADQVEL))


def asset(robot: str) -> str:
    import gymnasium

    return os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", f"{robot}.xml")


def interleaved(fns: dict, repeat: int, clock=time.process_time) -> dict:
    """Best time per call of each ``fns[name] = (fn, calls)``, the contenders taking turns in every round."""
    best = dict.fromkeys(fns, np.inf)
    for _ in range(repeat):
        for name, (fn, calls) in fns.items():
            t = clock()
            fn()
            best[name] = min(best[name], (clock() - t) / calls)
    return best


def md(header, rows) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# (a) single-trajectory rollout on chain10 vs a Python loop of mj_step


def part_a(repeat: int):
    from pbsim.io.convert import convert

    m = pbsim_models.by_name("chain10")
    with tempfile.TemporaryDirectory() as tmp:
        xml = os.path.join(tmp, "chain10.xml")
        convert(m, xml)
        mm = mujoco.MjModel.from_xml_path(xml)
    assert mm.nv == m.nv, (mm.nv, m.nv)
    q0 = np.full(m.nq, 0.3)
    rows = []
    from pbsim.backends.cpu import CpuBatch

    mm.opt.timestep = (
        1e-3  # MuJoCo's Euler is stable on the chain at 1 ms (not at 10 ms); the cost per step hardly moves
    )
    mm.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    for name, dt, steps in (("euler", 1e-3, 4000), ("rk4", 1e-3, 2000), ("pbad", 1e-2, 1000)):
        md_ = mujoco.MjData(mm)

        def mj(n=steps):
            mujoco.mj_resetData(mm, md_)
            md_.qpos[:] = q0
            for _ in range(n):
                mujoco.mj_step(mm, md_)

        def ours(n=steps):
            pbsim.rollout(m, name, dt=dt, steps=n, q0=q0)

        def python_loop(n=steps // 10):
            ROLLOUT.COMPILED_LOOP = False
            try:
                pbsim.rollout(m, name, dt=dt, steps=n, q0=q0)
            finally:
                ROLLOUT.COMPILED_LOOP = True

        cb = CpuBatch(m, name, batch=1)

        def bare(n=steps):  # the step kernel alone: no recording, no energy, no divergence rule
            cb.set_state(q0)
            cb.advance(n, dt)

        ours(5), python_loop(5), mj(5), bare(5)  # compile / load caches
        best = interleaved(
            {
                "kernel": (ours, steps),
                "python": (python_loop, steps // 10),
                "mujoco": (mj, steps),
                "bare": (bare, steps),
            },
            repeat,
        )
        us = {k: v * 1e6 for k, v in best.items()}
        rows.append((name, dt, us["kernel"], us["python"], us["mujoco"], us["bare"]))
    table = md(
        [
            "method",
            "dt (s)",
            "pbsim rollout us/step",
            "pbsim Python loop us/step",
            "bare step kernel us/step",
            "mj_step loop us/step (Euler, 1 ms)",
            "rollout / mj_step",
        ],
        [(n, dt, f"{k:.2f}", f"{p:.1f}", f"{b:.2f}", f"{j:.2f}", f"{k / j:.2f}") for n, dt, k, p, j, b in rows],
    )
    return f"chain10 ({m.nv} DOF, revolute), single trajectory, no contact\n\n" + table, rows


# ---------------------------------------------------------------------------------------------
# (b) single calls on the humanoid vs Pinocchio


def part_b(repeat: int):
    import pinocchio as pin
    from bench_dynamics import pin_model, to_pin_q

    m = pbsim.load(asset("humanoid"))
    rng = np.random.default_rng(0)
    q = m.random_configuration(rng)
    v, u = rng.normal(size=m.nv), rng.normal(size=m.nv)
    pm = pin_model(m)
    pd = pm.createData()
    qp = to_pin_q(m, q)
    d = pbsim.Data(m)
    st_floor = pbsim.Stepper(m, "euler", dt=1e-3)  # the file's floor (default_scene)
    st_free = pbsim.Stepper(m, "euler", dt=1e-3, scene=pbsim.Scene())
    n = 3000

    def loop(f):
        def run():
            for _ in range(n):
                f()

        return run, n

    def pin_step():
        a = pin.aba(pm, pd, qp, v, u)
        pin.integrate(pm, qp, (v + 1e-3 * a) * 1e-3)

    cases = {
        "aba": (lambda: d.aba(q, v, u), lambda: pbsim.aba(m, q, v, u), lambda: pin.aba(pm, pd, qp, v, u)),
        "rnea": (lambda: d.rnea(q, v, u), lambda: pbsim.rnea(m, q, v, u), lambda: pin.rnea(pm, pd, qp, v, u)),
        "crba": (lambda: d.crba(q), lambda: pbsim.crba(m, q), lambda: pin.crba(pm, pd, qp)),
        "fk": (
            lambda: d.forward_kinematics(q),
            lambda: pbsim.forward_kinematics(m, q),
            lambda: pin.forwardKinematics(pm, pd, qp),
        ),
        "euler step, floor contact": (lambda: st_floor.step(q, v), None, pin_step),
        "euler step, no contact": (lambda: st_free.step(q, v), None, pin_step),
    }
    rows = []
    for name, (fast, valid, theirs) in cases.items():
        for f in (fast, valid, theirs):
            if f is not None:
                f()
        fns = {"fast": loop(fast), "pin": loop(theirs)}
        if valid is not None:
            fns["valid"] = loop(valid)
        us = {k: t * 1e6 for k, t in interleaved(fns, repeat).items()}
        rows.append((name, us["fast"], us.get("valid"), us["pin"]))
    table = md(
        ["call", "pbsim.Data / Stepper us", "validated pbsim.* us", "Pinocchio us", "fast / Pinocchio"],
        [(c, f"{a:.2f}", "-" if b is None else f"{b:.1f}", f"{p:.2f}", f"{a / p:.2f}") for c, a, b, p in rows],
    )
    note = (
        f"gymnasium humanoid (nq {m.nq}, nv {m.nv}, {m.nb} bodies), one state per call from Python; "
        "Pinocchio's step row: `aba` + `integrate` (no contact)"
    )
    return note + "\n\n" + table, rows


# ---------------------------------------------------------------------------------------------
# (c) batched steps/s with floor contact vs mujoco.rollout


def part_c(max_batch: int, budget: float):
    from mujoco import rollout as mjr

    from pbsim.backends.cpu import CpuBatch

    nt = numba.get_num_threads()
    out, rows = [], []
    for robot in ("humanoid", "ant"):
        m = pbsim.load(asset(robot))
        mm = mujoco.MjModel.from_xml_path(asset(robot))
        dt = float(mm.opt.timestep)
        scene = pbsim.default_scene(m)
        spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        nstate = mujoco.mj_stateSize(mm, spec)
        datas = [mujoco.MjData(mm) for _ in range(nt)]
        B = 1
        while B <= max_batch:
            rng = np.random.default_rng(B)
            V = 0.1 * rng.normal(size=(B, m.nv))
            nstep = int(max(10, min(200, 20000 // B)))  # enough work per call; MuJoCo's output array bounded
            cb = CpuBatch(m, "euler", scene=scene, batch=B)
            cb.set_state(np.tile(m.default_configuration(), (B, 1)), V)
            cb.advance(2, dt)  # compile / load
            init = np.zeros((B, nstate))
            d0 = mujoco.MjData(mm)
            for b in range(B):
                mujoco.mj_resetData(mm, d0)
                d0.qvel[:] = V[b]
                mujoco.mj_getState(mm, d0, init[b], spec)
            state = np.zeros((B, nstep, nstate))
            mjr.rollout(mm, datas[: min(nt, B)], init, nstep=2, state=state[:, :2], persistent_pool=True)
            tp, tm = np.inf, np.inf
            t_start = time.perf_counter()
            for _ in range(3):
                cb.set_state(np.tile(m.default_configuration(), (B, 1)), V)
                t = time.perf_counter()
                cb.advance(nstep, dt)
                tp = min(tp, time.perf_counter() - t)
                t = time.perf_counter()
                mjr.rollout(mm, datas[: min(nt, B)], init, nstep=nstep, state=state, persistent_pool=True)
                tm = min(tm, time.perf_counter() - t)
            div, _ = cb.diverged()
            mj_ok = bool(np.isfinite(state).all())
            rows.append((robot, B, nstep, B * nstep / tp, B * nstep / tm, int(div.sum()), mj_ok))
            print(f"  (c) {robot} B={B}: pbsim {B * nstep / tp:.3g} steps/s, mujoco {B * nstep / tm:.3g}", flush=True)
            if time.perf_counter() - t_start > budget:
                break
            B *= 4
        out.append(robot)
    table = md(
        [
            "robot",
            "B",
            "steps per call",
            "pbsim euler steps/s",
            "mujoco.rollout steps/s",
            "pbsim / MuJoCo",
            "pbsim diverged rows",
            "MuJoCo finite",
        ],
        [(r, B, n, f"{p:.3g}", f"{j:.3g}", f"{p / j:.2f}", dv, ok) for r, B, n, p, j, dv, ok in rows],
    )
    return f"{nt} threads each (numba threads = MuJoCo rollout threads)\n\n" + table, rows


# ---------------------------------------------------------------------------------------------
# (d) realtime factor: implicit methods at large dt vs MuJoCo at its largest stable dt


def hold_gains(m):
    """The viewer's PD hold (``pbsim.control.motions.default_gains``): kp = 30 max(M, 1), kd = max(M, 1)
    on the joints, zero on the free base."""
    M = max(float(m.total_mass), 1.0)
    kp, kd = np.full(m.nv, 30.0 * M), np.full(m.nv, M)
    kp[:6] = kd[:6] = 0.0
    return kp, kd


def mujoco_drop(mm, dt, T, kp=None, kd=None):
    """MuJoCo Euler from qpos0 for ``T`` s; with gains, the PD toward qpos0 in ``qfrc_applied``
    (explicit, what a MuJoCo user without position actuators does).  Returns (stable, wall, steps)."""
    mm.opt.timestep = dt
    mm.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    d = mujoco.MjData(mm)
    qref = mm.qpos0[7:].copy()
    n = int(round(T / dt))
    ok = True
    t = time.perf_counter()
    for _ in range(n):
        if kp is not None:
            d.qfrc_applied[6:] = -kp[6:] * (d.qpos[7:] - qref) - kd[6:] * d.qvel[6:]
        mujoco.mj_step(mm, d)
        if not 0.0 <= d.qpos[2] <= 2.0:
            ok = False
    wall = time.perf_counter() - t
    ok = ok and bool(np.isfinite(d.qpos).all()) and not any(d.warning[w].number for w in BAD)
    return ok, wall, n


MJ_DTS = (0.001, 0.002, 0.003, 0.005, 0.01, 0.02, 0.03, 0.05)


def part_d(T: float, budget: float):
    from mujoco import rollout as mjr

    rows = []
    for robot, dts in (("ant", (0.02, 0.05)), ("humanoid", (0.01, 0.02))):
        m = pbsim.load(asset(robot))
        mm = mujoco.MjModel.from_xml_path(asset(robot))
        kp, kd = hold_gains(m)
        for task in ("passive", "PD hold"):
            g = (kp, kd) if task == "PD hold" else (None, None)
            sweep, best_dt = [], None
            for dt in MJ_DTS:
                ok, _, _ = mujoco_drop(mm, dt, T, *g)
                sweep.append((dt, ok))
                if all(s_ for _, s_ in sweep):
                    best_dt = dt  # the largest dt with every smaller dt of the sweep stable too
            best_dt = MJ_DTS[0] if best_dt is None else best_dt
            walls = [mujoco_drop(mm, best_dt, T, *g) for _ in range(3)]
            ok, n = walls[0][0], walls[0][2]
            wall = min(w for _, w, _ in walls)
            stable = ", ".join(f"{dt:g}{'' if s_ else ' (unstable)'}" for dt, s_ in sweep)
            rows.append((robot, task, "mujoco euler (mj_step loop)", best_dt, n / T, wall / T, ok, f"sweep: {stable}"))
            if task == "passive":  # the same run through mujoco.rollout (compiled loop, one thread)
                spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
                init = np.zeros((1, mujoco.mj_stateSize(mm, spec)))
                d0 = mujoco.MjData(mm)
                mujoco.mj_getState(mm, d0, init[0], spec)
                mjr.rollout(mm, d0, init, nstep=2)
                wr = np.inf
                for _ in range(3):
                    t = time.perf_counter()
                    mjr.rollout(mm, d0, init, nstep=n)
                    wr = min(wr, time.perf_counter() - t)
                rows.append((robot, task, "mujoco euler (mujoco.rollout)", best_dt, n / T, wr / T, ok, ""))
            ctrl = (
                pbsim.Control(mode="spd", kp=kp, kd=kd, q_ref=m.default_configuration()) if g[0] is not None else None
            )
            for name in ("pbad", "pbfd", "nmdp"):
                for dt in dts:
                    steps = int(round(T / dt))
                    pbsim.rollout(m, name, dt=dt, steps=2, on_nan="stop", control=ctrl)  # compile / load
                    t = time.perf_counter()
                    pbsim.rollout(m, name, dt=dt, steps=3, on_nan="stop", control=ctrl)
                    per = (time.perf_counter() - t) / 3
                    if per * steps > budget:
                        rows.append(
                            (
                                robot,
                                task,
                                f"pbsim {name}",
                                dt,
                                1 / dt,
                                per * steps / T,
                                None,
                                f"not run: ~{per * steps:.0f} s > budget {budget:g} s",
                            )
                        )
                        continue
                    wall = np.inf
                    for _ in range(2):  # the first run may compile the Python step of an event (then cached)
                        t = time.perf_counter()
                        tr = pbsim.rollout(m, name, dt=dt, steps=steps, on_nan="stop", control=ctrl)
                        wall = min(wall, time.perf_counter() - t)
                    z = tr.q[:, 2]
                    ok = not tr.diverged.any() and bool(np.all((z >= 0.0) & (z <= 2.0)))
                    its = tr.info.get("iterations", 0) / steps
                    note = (
                        f"{tr.info['loop']} loop, {its:.1f} it/step, {tr.info.get('unconverged_steps', 0)} unconverged"
                    )
                    rows.append((robot, task, f"pbsim {name}", dt, 1 / dt, wall / T, ok, note))
                    print(f"  (d) {robot} {task} {name} dt={dt}: {wall / T:.3g} wall s per sim s, ok={ok}", flush=True)
    table = md(
        [
            "robot",
            "task",
            "method",
            "dt (s)",
            "steps per sim s",
            "wall s per sim s",
            "realtime factor",
            "stable",
            "note",
        ],
        [
            (
                r,
                tk,
                meth,
                dt,
                f"{sps:.0f}",
                f"{w:.3g}",
                f"{1 / w:.3g}",
                "-" if ok is None else ("yes" if ok else "no"),
                nt,
            )
            for r, tk, meth, dt, sps, w, ok, nt in rows
        ],
    )
    head = (
        f"{T:g} s from qpos0 onto the file's floor, passive or held toward qpos0 by the PD of hold_gains "
        "(pbsim: SPD; MuJoCo: explicit PD in qfrc_applied), one trajectory, one thread"
    )
    return head + "\n\n" + table, rows


def plot(res, png):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axs = plt.subplots(2, 2, figsize=(16, 9.5))
    ax = axs.ravel()
    if "a" in res:
        rows = res["a"]
        x = np.arange(len(rows))
        for i, (lab, col) in enumerate((("pbsim rollout", 2), ("pbsim Python loop", 3), ("mj_step loop", 4))):
            ax[0].bar(x + (i - 1) * 0.27, [r[col] for r in rows], 0.27, label=lab)
        ax[0].set_xticks(x, [f"{r[0]}\ndt={r[1]:g}" for r in rows])
        ax[0].set_yscale("log")
        ax[0].set_ylabel("us per step")
        ax[0].set_title("(a) chain10, single trajectory")
        ax[0].legend(fontsize=8)
    if "b" in res:
        rows = res["b"]
        x = np.arange(len(rows))
        ax[1].bar(x - 0.27, [r[1] for r in rows], 0.27, label="pbsim.Data / Stepper")
        ax[1].bar(x, [r[2] or 0 for r in rows], 0.27, label="validated pbsim.*")
        ax[1].bar(x + 0.27, [r[3] for r in rows], 0.27, label="Pinocchio")
        ax[1].set_xticks(x, [r[0].replace(", ", "\n") for r in rows], fontsize=7)
        ax[1].set_ylabel("us per call")
        ax[1].set_title("(b) humanoid, one call from Python")
        ax[1].legend(fontsize=8)
    if "c" in res:
        rows = res["c"]
        for robot, mk in (("humanoid", "o"), ("ant", "s")):
            rr = [r for r in rows if r[0] == robot]
            ax[2].loglog([r[1] for r in rr], [r[3] for r in rr], "-" + mk, label=f"pbsim euler, {robot}")
            ax[2].loglog([r[1] for r in rr], [r[4] for r in rr], "--" + mk, label=f"mujoco.rollout, {robot}")
        ax[2].set_xlabel("batch B")
        ax[2].set_ylabel("steps / s")
        ax[2].set_title("(c) batched, floor contact, all cores")
        ax[2].legend(fontsize=8)
    if "d" in res:
        rows = [r for r in res["d"] if r[6] is not None]
        lab = [
            f"{r[0][:3]} {r[1][:4]} {r[2].replace('mujoco euler ', 'mj ').replace('pbsim ', '')} {r[3]:g}" for r in rows
        ]
        ax[3].bar(
            np.arange(len(rows)), [1 / r[5] for r in rows], color=["C1" if "mujoco" in r[2] else "C0" for r in rows]
        )
        ax[3].set_xticks(np.arange(len(rows)), lab, fontsize=6, rotation=90)
        ax[3].set_yscale("log")
        ax[3].set_ylabel("realtime factor (sim s / wall s)")
        ax[3].set_title("(d) 2 s drop onto the floor (passive / PD hold), one thread; orange: MuJoCo")
    fig.tight_layout()
    os.makedirs(os.path.dirname(png), exist_ok=True)
    fig.savefig(png, dpi=110)


# ---------------------------------------------------------------------------------------------
# (e) the vector env: pbsim/Hopper-v0 (one batched kernel call per step) vs gymnasium's Hopper-v5


def part_e(max_batch: int, budget: float):
    """Env steps per second (each env step = frame_skip 4 physics steps at 2 ms in both, random
    actions, autoreset) of ``gymnasium.make_vec("pbsim/Hopper-v0", vectorization_mode=
    "vector_entry_point")`` against gymnasium's own MuJoCo ``Hopper-v5`` vector env, "sync" (one
    process) and, for B <= 16, "async" (a process per env)."""
    import gymnasium

    import pbsim.envs  # noqa: F401 - registers pbsim/...

    def rate(env, B, nstep, seed):
        rng = np.random.default_rng(seed)
        acts = rng.uniform(-1, 1, size=(nstep + 5, B, 3))
        env.reset(seed=seed)
        for a in acts[:5]:  # compile / load, first autoresets
            env.step(a)
        t = time.perf_counter()
        for a in acts[5:]:
            env.step(a)
        return B * nstep / (time.perf_counter() - t)

    rows = []
    B = 1
    while B <= min(max_batch, 1024):
        nstep = int(max(20, min(400, 40000 // B)))
        t_start = time.perf_counter()
        pe = gymnasium.make_vec("pbsim/Hopper-v0", num_envs=B, vectorization_mode="vector_entry_point")
        ge = gymnasium.make_vec("Hopper-v5", num_envs=B, vectorization_mode="sync")
        rp = max(rate(pe, B, nstep, 0) for _ in range(2))
        rg = max(rate(ge, B, nstep, 0) for _ in range(2))
        ra = float("nan")
        if B <= 16:
            ga = gymnasium.make_vec("Hopper-v5", num_envs=B, vectorization_mode="async")
            ra = rate(ga, B, nstep, 0)
            ga.close()
        pe.close()
        ge.close()
        best = np.nanmax([rg, ra])
        rows.append((B, nstep, rp, rg, ra, rp / best))
        print(f"  (e) B={B}: pbsim {rp:.3g} env steps/s, gymnasium sync {rg:.3g}, async {ra:.3g}", flush=True)
        if time.perf_counter() - t_start > budget:
            break
        B *= 4
    table = md(
        ["B", "steps timed", "pbsim vector env", "gymnasium sync", "gymnasium async", "pbsim / best gymnasium"],
        [(B, n, f"{p:.3g}", f"{g:.3g}", "-" if np.isnan(a) else f"{a:.3g}", f"{r:.2f}") for B, n, p, g, a, r in rows],
    )
    return "env steps/s (x4 physics steps each), random actions, autoreset\n\n" + table, rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="abcde")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--max-batch", type=int, default=4096)
    ap.add_argument(
        "--budget",
        type=float,
        default=20.0,
        help="(c): stop growing B once a size took this long; (d): skip a run estimated longer than 3x this",
    )
    ap.add_argument("--T", type=float, default=2.0, help="(d): simulated seconds")
    ap.add_argument("--png", default=str(ROOT / "docs" / "img" / "bench_throughput.png"))
    ap.add_argument("--json", default=None, help="also write the table rows here")
    args = ap.parse_args(argv)
    print(
        f"# bench_throughput {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, "
        f"load {os.getloadavg()[0]:.2f}, numba threads {numba.get_num_threads()}, pbsim {pbsim.__version__}, "
        f"MuJoCo {mujoco.__version__}, numba {numba.__version__}",
        flush=True,
    )
    res, text = {}, []
    parts = {
        "a": lambda: part_a(args.repeat),
        "b": lambda: part_b(args.repeat),
        "c": lambda: part_c(args.max_batch, args.budget),
        "d": lambda: part_d(args.T, 3 * args.budget),
        "e": lambda: part_e(args.max_batch, args.budget),
    }
    for p in args.parts:
        s, rows = parts[p]()
        res[p] = rows
        text.append(f"### ({p})\n\n{s}")
        print(text[-1] + "\n", flush=True)
    print(f"load after: {os.getloadavg()[0]:.2f}")
    if args.json:  # the rows, to redraw the figure without rerunning
        import json

        with open(args.json, "w") as f:
            json.dump(res, f, default=float)
    if set(res) & set("abcd"):  # (e) is a table only
        plot(res, args.png)
        print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
