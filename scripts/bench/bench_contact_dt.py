"""Contact at large dt: gymnasium's ant and humanoid dropped on their own floor and held with PD,
pbsim (euler, pbad) next to MuJoCo (Euler, implicitfast) at the same dt, in the same run.

Every run starts from the file's default configuration (qpos0: both robots fall onto the floor)
and lasts ``--T`` seconds.  The hold is a PD toward qpos0 on the joints (zero gains on the free
base), scaled with the total mass M (the viewer's defaults, ``pbsim.control.motions.default_gains``:
kp = 30 max(M, 1) N m/rad, kd = max(M, 1) N m s/rad):

- pbsim: ``Control(mode="spd", kp, kd, q_ref=qpos0)`` (stable PD, implicit in the step), contact
  from the file's floor (``pbsim.contact.default_scene``: penalty contact for euler, Eq. 9 for pbad);
- MuJoCo: the same PD applied explicitly each step through ``d.qfrc_applied`` (what a MuJoCo user
  without position actuators does), motors' ctrl = 0, nothing disabled (MuJoCo's own contact),
  with ``mjINT_EULER`` and ``mjINT_IMPLICITFAST``; and "mujoco euler (kd as damping)": kp in
  ``qfrc_applied``, kd added to ``dof_damping``, which MuJoCo's Euler integrates implicitly (this
  tells a divergence of the explicit D term on light joints apart from one of the contact).

Per run: finite (pbsim: no NaN; MuJoCo: no NaN and no bad-qacc/qpos/qvel warning, after which
MuJoCo resets the state), rest height (the free joint's z, q[2], averaged over the last 0.2 s),
max penetration (pbsim: the deepest contact point over all steps, ``pbsim.contact_query``;
MuJoCo: ``-min(d.contact.dist)`` over all steps, 0 without contact; geometric depth, so MuJoCo's
contact margin, active before the geoms touch, shows as less depth), the same over the last
0.2 s (rest penetration), a note when the torso rose 5 cm above its start, wall seconds per simulated
second (compilation and cache loading left out: a 2-step warm-up runs first), and pbad's mean
LM iterations per step.  pbsim runs step by step like ``pbsim.rollout`` (``integrators.make`` +
``Integrator.step``; the per-step Python overhead is the same), which lets a run stop at a
wall-time budget (``--budget``, default 120 s) and read the solver's iterations.  MuJoCo is
stepped from Python too (one ``mj_step`` plus the PD per step).

Prints one markdown table and writes ``docs/img/bench_contact_dt.png`` (rest height, max
penetration and wall/sim time vs dt per method, one column per robot).

    python scripts/bench/bench_contact_dt.py [--robots ant,humanoid] [--dts 0.001,0.005,0.02,0.05] [--T 2.0]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]

import mujoco  # noqa: E402

import pbsim  # noqa: E402

KP_PER_KG, KD_PER_KG = 30.0, 1.0  # pbsim.control.motions.default_gains
REST_WINDOW = 0.2  # s: rest height is the mean torso z over the run's last REST_WINDOW
_I = mujoco.mjtIntegrator
METHODS = {  # name: (simulator, integrator, MuJoCo: kd as joint damping instead of in qfrc_applied)
    "pbsim euler": ("pbsim", "euler", False),
    "pbsim pbad": ("pbsim", "pbad", False),
    "mujoco euler": ("mujoco", _I.mjINT_EULER, False),
    "mujoco implicitfast": ("mujoco", _I.mjINT_IMPLICITFAST, False),
    "mujoco euler (kd as damping)": ("mujoco", _I.mjINT_EULER, True),
}


def asset(robot: str) -> str:
    import gymnasium

    return os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", f"{robot}.xml")


def gains(total_mass: float, nv: int, nbase: int = 6):
    M = max(float(total_mass), 1.0)
    kp, kd = np.full(nv, KP_PER_KG * M), np.full(nv, KD_PER_KG * M)
    kp[:nbase] = kd[:nbase] = 0.0
    return kp, kd


def result(**kw):
    base = dict(finite=True, status="", rest_z=np.nan, pen=np.nan, rest_pen=np.nan, wall_per_s=np.nan, iters=np.nan)
    base.update(t=np.zeros(0), z=np.zeros(0))
    base.update(kw)
    return base


def notes(z, last, done, rise=0.05, still=0.01):
    """Notes on the torso height trace ``z``: it rose more than ``rise`` above its start (thrown up
    by the contact or a kick), or it moved more than ``still`` in the rest window (not settled)."""
    out = []
    if len(z) and z.max() > z[0] + rise:
        out.append(f"torso rose to z={z.max():.3g} m")
    if done and np.ptp(z[last]) > still:
        out.append(f"not settled: z moved {np.ptp(z[last]):.2g} m in the last {REST_WINDOW:g} s")
    return out


# ---------------------------------------------------------------------------------------- pbsim
def max_depth(m, scene, Q, chunk=256):
    """Deepest contact point (m) over the configurations Q (n, nq), 0 when none touches."""
    best = 0.0
    for s in range(0, len(Q), chunk):
        d = pbsim.contact_query(m, scene, Q[s : s + chunk])["d"]
        if d.size:
            best = max(best, float(d.max()))
    return best


def run_pbsim(m, scene, method, dt, T, ctrl, budget):
    steps = int(round(T / dt))
    integ = pbsim.integrators.make(method, m, scene)
    q0 = m.default_configuration()
    w = pbsim.State.make(m, q0)  # warm-up: compilation (first run) or loading the cached kernels
    for _ in range(2):
        w, _d = integ.step(w, ctrl, dt)
    state = pbsim.State.make(m, q0)
    Q = np.zeros((steps + 1, m.nq))
    Q[0] = state.q[0]
    iters = []
    n = 0
    status, finite = "", True
    t0 = time.perf_counter()
    for k in range(1, steps + 1):
        new, diag = integ.step(state, ctrl, dt)
        if diag.nan.any() or not np.isfinite(new.q).all():
            finite, status = False, f"NaN at t={k * dt:.3g}"
            break
        if diag.iterations is not None:
            iters.append(float(diag.iterations[0]))
        state = new
        Q[k] = state.q[0]
        n = k
        if time.perf_counter() - t0 > budget and k < steps:
            status = f"stopped: >{budget:g} s at t={k * dt:.3g}"
            break
    wall = time.perf_counter() - t0
    Q = Q[: n + 1]
    t = np.arange(n + 1) * dt
    last = t >= t[-1] - REST_WINDOW + 1e-12
    done = finite and n == steps
    status = "; ".join([status] * bool(status) + notes(Q[:, 2], last, done))
    return result(
        finite=finite,
        status=status,
        rest_z=float(Q[last, 2].mean()) if done else np.nan,
        pen=max_depth(m, scene, Q),
        rest_pen=max_depth(m, scene, Q[last]) if done else np.nan,
        wall_per_s=wall / max(n * dt, dt) if n else np.nan,
        iters=float(np.mean(iters)) if iters else np.nan,
        t=t,
        z=Q[:, 2].copy(),
    )


# --------------------------------------------------------------------------------------- MuJoCo
W = mujoco.mjtWarning
BAD = tuple(int(w) for w in (W.mjWARN_BADQACC, W.mjWARN_BADQPOS, W.mjWARN_BADQVEL))  # MuJoCo resets after these


def run_mujoco(path, integrator, dt, T, budget, kd_damping=False):
    mm = mujoco.MjModel.from_xml_path(path)
    mm.opt.timestep = dt
    mm.opt.integrator = integrator
    d = mujoco.MjData(mm)
    mujoco.mj_resetData(mm, d)
    one_dof = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
    hinge = [j for j in range(mm.njnt) if int(mm.jnt_type[j]) in one_dof]  # (np.int32 in (enum,): False)
    qa = mm.jnt_qposadr[hinge]
    da = mm.jnt_dofadr[hinge]
    qref = mm.qpos0[qa].copy()
    kp, kd = gains(mm.body_mass.sum(), mm.nv)
    kp, kd = kp[da], kd[da]
    if kd_damping:  # the D part as joint damping, which MuJoCo's Euler integrates implicitly
        mm.dof_damping[da] += kd
        kd = np.zeros_like(kd)
    steps = int(round(T / dt))
    Z = np.zeros(steps + 1)
    Z[0] = d.qpos[2]
    P = np.zeros(steps + 1)  # deepest penetration per step
    n = 0
    status, finite = "", True
    mujoco.mj_step(mm, mujoco.MjData(mm))  # warm-up (first call allocations)
    t0 = time.perf_counter()
    for k in range(1, steps + 1):
        d.qfrc_applied[da] = -kp * (d.qpos[qa] - qref) - kd * d.qvel[da]
        mujoco.mj_step(mm, d)
        if any(d.warning[w].number for w in BAD) or not np.isfinite(d.qpos).all():
            finite, status = False, f"diverged at t={k * dt:.3g}"
            break
        if d.ncon:
            P[k] = max(0.0, -float(d.contact.dist[: d.ncon].min()))
        Z[k] = d.qpos[2]
        n = k
        if time.perf_counter() - t0 > budget and k < steps:
            status = f"stopped: >{budget:g} s at t={k * dt:.3g}"
            break
    wall = time.perf_counter() - t0
    t = np.arange(n + 1) * dt
    last = t >= t[-1] - REST_WINDOW + 1e-12
    done = finite and n == steps
    status = "; ".join([status] * bool(status) + notes(Z[: n + 1], last, done))
    return result(
        finite=finite,
        status=status,
        rest_z=float(Z[: n + 1][last].mean()) if done else np.nan,
        pen=float(P[: n + 1].max()),
        rest_pen=float(P[: n + 1][last].max()) if done else np.nan,
        wall_per_s=wall / max(n * dt, dt) if n else np.nan,
        t=t,
        z=Z[: n + 1].copy(),
    )


# ----------------------------------------------------------------------------------------- main
def fmt(x, spec):
    return "-" if x is None or not np.isfinite(x) else format(x, spec)


def mm(x):
    """A depth in mm; over a metre it is a diverged state's, shown as such."""
    return ">1000" if np.isfinite(x) and x > 1.0 else fmt(1e3 * x, ".1f")


def table(rows):
    out = [
        "| robot | method | dt (s) | finite | rest z (m) | max pen. (mm) | rest pen. (mm) | wall/sim s | LM iters | note |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['robot']} | {r['method']} | {r['dt']:g} | {'yes' if r['finite'] else 'no'} | "
            f"{fmt(r['rest_z'], '.3f')} | {mm(r['pen'])} | {mm(r['rest_pen'])} | {fmt(r['wall_per_s'], '.3g')} | "
            f"{fmt(r['iters'], '.1f')} | {r['status']} |"
        )
    return "\n".join(out)


def plot(rows, robots, png):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    style = {
        "pbsim euler": ("C0", "o-"),
        "pbsim pbad": ("C1", "s-"),
        "mujoco euler": ("C2", "^--"),
        "mujoco implicitfast": ("C3", "v--"),
        "mujoco euler (kd as damping)": ("C4", "D:"),
    }
    # (key, label, scale to the axis unit, top of the axis: values above it are drawn on the top
    # edge with their value written next to them)
    keys = (
        ("rest_z", "rest height z (m)", 1.0, 1.6),
        ("pen", "max penetration (mm)", 1e3, 300.0),
        ("wall_per_s", "wall s / simulated s", 1.0, None),
    )
    dts_all = sorted({r["dt"] for r in rows})
    traces = sorted({dts_all[0], dts_all[-1]})  # torso z(t) at the smallest and the largest dt
    nr = len(traces) + len(keys)
    fig, ax = plt.subplots(nr, len(robots), figsize=(5.8 * len(robots), 3.0 * nr), squeeze=False)
    for j, robot in enumerate(robots):
        for i, dt in enumerate(traces):
            a = ax[i, j]
            for method in METHODS:
                for r in rows:
                    if r["robot"] == robot and r["method"] == method and r["dt"] == dt and len(r["t"]):
                        c, ls = style[method]
                        a.plot(r["t"], np.clip(r["z"], -0.1, 2.0), ls[1:], color=c, lw=1.2, label=method)
                        if not r["finite"]:
                            a.plot(r["t"][-1], np.clip(r["z"][-1], -0.1, 2.0), "x", color=c, ms=10, mew=2)
            a.set_ylim(-0.1, 2.0)
            a.set_xlabel("t (s)")
            a.set_ylabel(f"torso z (m), dt = {dt:g} s")
            a.grid(True, alpha=0.3)
        ax[0, j].set_title(f"{robot}: torso height (x: diverged, clipped at 2 m)")
        ax[len(traces), j].set_title(f"{robot} vs dt (x: diverged; above the top: off scale)", fontsize=10)
        for i in range(len(traces) + 1, nr):
            ax[i, j].sharex(ax[len(traces), j])
        for method in METHODS:
            rr = [r for r in rows if r["robot"] == robot and r["method"] == method]
            if not rr:
                continue
            c, ls = style[method]
            dts = np.array([r["dt"] for r in rr])
            for i, (key, label, scale, top) in enumerate(keys):
                a = ax[len(traces) + i, j]
                y = np.array([r[key] * scale if r["finite"] else np.nan for r in rr], float)
                if top is not None:
                    over = y > top
                    for x, v in zip(dts[over], y[over]):
                        a.annotate(
                            f"{v:.3g}", (x, top), xytext=(-34, -12), textcoords="offset points", color=c, fontsize=8
                        )
                    y = np.where(over, top, y)
                    a.set_ylim(0, top * 1.02)
                else:
                    a.set_yscale("log")
                a.plot(dts, y, ls, color=c, label=method)
                bad = dts[[not r["finite"] for r in rr]]
                if len(bad) and top is not None:  # diverged runs: an x on the dt axis
                    a.plot(bad, np.zeros(len(bad)), "x", color=c, ms=10, mew=2, clip_on=False)
                a.set_ylabel(label)
                a.set_xscale("log")
                a.grid(True, which="both", alpha=0.3)
        ax[len(traces) + 1, j].axhline(50.0, color="k", lw=0.8, ls=":")  # pbsim.Scene.max_penetration
        ax[-1, j].set_xlabel("dt (s)")
    ax[0, 0].legend(fontsize=8)
    fig.suptitle(
        "drop from qpos0 + PD hold toward it on the file's floor, 2 s: pbsim (stable PD) vs MuJoCo (PD in qfrc_applied)"
    )
    fig.tight_layout(rect=(0, 0, 1, 0.98))
    Path(png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", default="ant,humanoid")
    ap.add_argument("--dts", default="0.001,0.005,0.02,0.05")
    ap.add_argument("--T", type=float, default=2.0, help="simulated seconds per run")
    ap.add_argument("--budget", type=float, default=120.0, help="wall seconds after which a run is stopped")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--repeat", type=int, default=3, help="runs per case; the wall time is the best of them")
    ap.add_argument("--png", default=str(ROOT / "docs/img/bench_contact_dt.png"))
    a = ap.parse_args(argv)
    robots = a.robots.split(",")
    dts = [float(x) for x in a.dts.split(",")]
    methods = a.methods.split(",")
    if set(methods) - set(METHODS):
        ap.error(f"unknown method(s) {sorted(set(methods) - set(METHODS))}; choose from {list(METHODS)}")
    warnings.simplefilter("ignore", pbsim.errors.PbsimWarning)  # deep-penetration warnings: in the table
    rows = []
    t_all = time.perf_counter()
    for robot in robots:
        path = asset(robot)
        m = pbsim.load(path)
        scene = pbsim.default_scene(m)
        kp, kd = gains(m.total_mass, m.nv)
        ctrl = pbsim.Control(mode="spd", kp=kp, kd=kd, q_ref=m.default_configuration())
        print(f"[{robot}] nq {m.nq} nv {m.nv} mass {m.total_mass:.3f} kg, kp {kp[-1]:.4g} kd {kd[-1]:.4g}", flush=True)
        for method in methods:
            for dt in dts:
                t0 = time.perf_counter()
                try:
                    sim, integ, kd_damping = METHODS[method]
                    for rep in range(max(1, a.repeat)):  # deterministic: the same numbers, the best time
                        if sim == "pbsim":
                            ri = run_pbsim(m, scene, integ, dt, a.T, ctrl, a.budget)
                        else:
                            ri = run_mujoco(path, integ, dt, a.T, a.budget, kd_damping)
                        if rep == 0:
                            r = ri
                        else:
                            r["wall_per_s"] = min(r["wall_per_s"], ri["wall_per_s"])
                        if ri["status"].startswith("stopped"):
                            break
                except Exception as e:  # a failure is a table row, not the end of the benchmark
                    traceback.print_exc()
                    r = result(finite=False, status=f"error: {type(e).__name__}: {str(e)[:80]}")
                r.update(robot=robot, method=method, dt=dt)
                rows.append(r)
                print(
                    f"  {method:20s} dt {dt:<6g} finite {r['finite']!s:5s} rest z {fmt(r['rest_z'], '.3f'):>6s} "
                    f"pen {mm(r['pen']):>6s} rest {mm(r['rest_pen']):>5s} mm wall/sim {fmt(r['wall_per_s'], '.3g'):>7s} "
                    f"iters {fmt(r['iters'], '.1f'):>5s} {r['status']} ({time.perf_counter() - t0:.1f} s incl. warm-up)",
                    flush=True,
                )
    print(f"\ntotal {time.perf_counter() - t_all:.0f} s; pbsim {pbsim.__version__}, mujoco {mujoco.__version__}\n")
    print(table(rows))
    plot(rows, robots, a.png)
    print(f"\nwrote {a.png}")
    return rows


if __name__ == "__main__":
    sys.exit(0 if main() is not None else 1)
