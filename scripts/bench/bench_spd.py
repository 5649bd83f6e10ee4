"""Paper 001 Tables 2-3: simulated frames/s on one thread of the semi-implicit Euler step with SPD
by DF, SF and MABA, and the share of step time the SPD solve adds.

Each model tracks its own reference motion (humanoid gait, dog trot, snake slither; hand-of-God
root, Sec. 4.1 gains) at dt = 1/30 (dog: 1/240, as the paper).  Timing runs N steps in a compiled loop (no Python per step); the
baseline is the same step with plain PD at zero gains (control evaluated, no SPD) replayed from the states of
the MABA trajectory, and
"SPD share" = (t_solver - t_base) / t_solver, as Table 3 ("extra time required by SPD").

    python scripts/bench/bench_spd.py [--steps 400]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numba
import numpy as np

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
sys.path[:0] = [os.path.join(ROOT, "models"), ROOT]
import pbsim  # noqa: E402
import pbsim_models  # noqa: E402
from pbsim.control import motions  # noqa: E402
from pbsim.contact import Scene  # noqa: E402
from pbsim.dynamics.workspace import make_work  # noqa: E402
from pbsim.control.stepwork import make_step_work  # noqa: E402
from pbsim.integrators.explicit.step import euler_state  # noqa: E402
from pbsim_models.dog import dog as dog_model  # noqa: E402


@numba.njit(cache=False)
def run(m, s, c, w, sw, q, v, dt, Qr, Vr, qn, vn, q0, v0):
    """N steps tracking (Qr, Vr); a diverged state (|v| > 1e6 or NaN) restarts from (q0, v0) so NaN
    arithmetic never gets timed.  Returns the number of restarts (0 in every SPD row below)."""
    resets = 0
    for k in range(Qr.shape[0]):
        for j in range(Qr.shape[1]):
            c.q_ref[0, j] = Qr[k, j]
        for j in range(Vr.shape[1]):
            c.v_ref[0, j] = Vr[k, j]
        euler_state(m, s, c, w, sw, 0, q, v, dt, qn, vn)
        ok = True
        for j in range(v.shape[1]):
            if not np.isfinite(vn[0, j]) or abs(vn[0, j]) > 1e6:
                ok = False
        if not ok:
            resets += 1
        for j in range(q.shape[1]):
            q[0, j] = qn[0, j] if ok else q0[j]
        for j in range(v.shape[1]):
            v[0, j] = vn[0, j] if ok else v0[j]
    return resets


@numba.njit(cache=False)
def replay(m, s, c, w, sw, q, v, dt, Qt, Vt, qn, vn):
    """The no-SPD baseline: one step (zero-gain PD: control evaluated, no implicit term) from each
    state of the MABA trajectory (Qt, Vt), so the baseline times the same states and never diverges
    (a zero-gain free fall of these models does); the O(n) state copy matches run()'s."""
    for k in range(Qt.shape[0]):
        for j in range(Qt.shape[1]):
            q[0, j] = Qt[k, j]
        for j in range(Vt.shape[1]):
            v[0, j] = Vt[k, j]
        euler_state(m, s, c, w, sw, 0, q, v, dt, qn, vn)
    return 0


@numba.njit(cache=False)
def record(m, s, c, w, sw, q, v, dt, Qr, Vr, qn, vn, Qt, Vt):
    """The tracked trajectory's states (for the baseline replay)."""
    for k in range(Qr.shape[0]):
        for j in range(Qr.shape[1]):
            c.q_ref[0, j] = Qr[k, j]
        for j in range(Vr.shape[1]):
            c.v_ref[0, j] = Vr[k, j]
        for j in range(q.shape[1]):
            Qt[k, j] = q[0, j]
        for j in range(v.shape[1]):
            Vt[k, j] = v[0, j]
        euler_state(m, s, c, w, sw, 0, q, v, dt, qn, vn)
        for j in range(q.shape[1]):
            q[0, j] = qn[0, j]
        for j in range(v.shape[1]):
            v[0, j] = vn[0, j]


def snake_amplitude(model, body_amplitude=0.3, waves=1.5):
    """Per-hinge yaw amplitude of a serpenoid slither whose body heading swings +-``body_amplitude``
    rad whatever the segment count (joint angle = curvature x segment pitch): 0.19 rad on snake36,
    0.03 on snake195.  A fixed per-joint amplitude (0.6) coils the 195-DOF snake (15 m, heading
    swings of +-6 rad) and the explicit velocity-product terms of semi-implicit Euler blow it up
    (docs/benchmarks/spd.md)."""
    from pbsim.dynamics.joints import REVOLUTE

    n_yaw = sum(1 for i in range(model.nb) if model.jtype[i] == REVOLUTE and abs(model.axis[i, 2]) > 0.9)
    return 2 * np.pi * waves * body_amplitude / max(n_yaw, 1)


# (label, mode, solver, SPD position prediction): "linear" is the paper's Eq. 4, "exact" q (+) dt v
LABELS = (
    ("base", "pd", "maba", "linear"),
    ("MABA", "spd", "maba", "linear"),
    ("SF", "spd", "sf", "linear"),
    ("DF", "spd", "df", "linear"),
    ("MABAx", "spd", "maba", "exact"),
)


def time_model(model, ref, steps, dt, reps=7):
    """Best-of-``reps`` seconds per step for each solver; solvers interleaved inside each repetition
    so that load from other processes hits all of them alike.  Also the restarts after divergence."""
    Qr = ref.sample(np.arange(steps) * dt + dt)  # SPD targets at t + dt (Eq. 3-6)
    Vr = np.stack([ref.v_at(t) for t in np.arange(steps) * dt + dt])
    q0, v0 = ref.q_at(0.0), ref.v_at(0.0)
    ks = Scene().kernel_arrays(model)
    setup = {}
    for label, mode, solver, predict in LABELS:
        ctl = pbsim.Control(
            mode=mode,
            kp=ref.kp if mode == "spd" else 0.0,
            kd=ref.kd if mode == "spd" else 0.0,
            q_ref=Qr[0],
            spd_solver=solver,
            spd_predict=predict,
        )
        setup[label] = (
            ctl.kernel_arrays(model, 1),
            make_work(model, 1),
            make_step_work(model, 1, stages=1, dense=True),
        )
    kc, w, sw = setup["MABA"]
    q, v = q0[None].copy(), v0[None].copy()
    Qt, Vt = np.empty((steps, model.nq)), np.empty((steps, model.nv))
    record(model.k, ks, kc, w, sw, q, v, dt, Qr, Vr, np.empty_like(q), np.empty_like(v), Qt, Vt)
    best = {k[0]: np.inf for k in LABELS}
    resets = {}
    for r in range(reps + 1):
        for label, *_ in LABELS:
            kc, w, sw = setup[label]
            q, v = q0[None].copy(), v0[None].copy()
            qn, vn = np.empty_like(q), np.empty_like(v)
            n = 2 if r == 0 else steps  # r = 0 compiles
            t0 = time.process_time()  # CPU time of this (single-threaded) process: other agents' load excluded
            if label == "base":
                nres = replay(model.k, ks, kc, w, sw, q, v, dt, Qt[:n], Vt[:n], qn, vn)
            else:
                nres = run(model.k, ks, kc, w, sw, q, v, dt, Qr[:n], Vr[:n], qn, vn, q0, v0)
            el = (time.process_time() - t0) / n
            if r > 0:
                best[label] = min(best[label], el)
                resets[label] = nres
    return best, resets


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--png", default="docs/img/bench_spd.png")
    a = ap.parse_args()
    numba.set_num_threads(1)
    import pybullet_data

    kw = dict(kp=75000, kd=4000, root="hog", root_kp=20000, root_kd=2000)
    hum = pbsim.load(os.path.join(pybullet_data.getDataPath(), "humanoid/humanoid.urdf"), floating_base=True)
    dog = dog_model()
    cases = [
        ("Humanoid", hum, 1 / 30, motions.humanoid_gait(hum, dt=1 / 30, **kw)),
        ("Dog72", dog, 1 / 240, motions.dog_trot(dog, dt=1 / 240, **kw)),
    ]  # paper: dog at 1/240
    for n in (36, 72, 195):
        sn = pbsim_models.snake(n)
        amp = snake_amplitude(sn)
        cases.append(
            (f"Snake{n}", sn, 1 / 30, motions.snake_slither(sn, amplitude=amp, pitch=amp / 3, dt=1 / 30, **kw))
        )
    rows = []
    for name, m, dt, ref in cases:
        t, res = time_model(m, ref, a.steps, dt)
        rows.append((name, m.nv, dt, t))
        print(f"  {name}: restarts after divergence in {a.steps} steps: {res}", flush=True)
    print(
        f"Table 2/3 reproduction (semi-implicit Euler, one thread (process CPU time), {a.steps} steps, best of 7, interleaved)"
    )
    print(
        "| model | n | dt | FPS DF | FPS SF | FPS MABA | FPS no-SPD | DF/MABA time | SF/DF time | SPD share DF | SF | MABA "
        "| MABA, exact q (+) dt v |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, n, dt, t in rows:
        sh = {k: max(0.0, (t[k] - t["base"]) / t[k]) * 100 for k in ("DF", "SF", "MABA", "MABAx")}
        print(
            f"| {name} | {n} | 1/{round(1 / dt)} | {1 / t['DF']:,.0f} | {1 / t['SF']:,.0f} | {1 / t['MABA']:,.0f} | {1 / t['base']:,.0f} | "
            f"{t['DF'] / t['MABA']:.2f} | {t['SF'] / t['DF']:.2f} | {sh['DF']:.1f}% | {sh['SF']:.1f}% | {sh['MABA']:.1f}% | {sh['MABAx']:.1f}% |"
        )
    rows = [(name, n, t) for name, n, _, t in rows]
    sn = [(n, t["MABA"]) for name, n, t in rows if name.startswith("Snake")]
    x, y = np.log([s[0] for s in sn]), np.log([s[1] for s in sn])
    slope = np.polyfit(x, y, 1)[0]
    print(f"\nMABA step time vs DOF on the snakes (log-log slope): {slope:.3f}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    names = [r[0] for r in rows]
    for k, lab in (("DF", "DF"), ("SF", "SF"), ("MABA", "MABA")):
        ax[0].bar(
            np.arange(len(rows)) + {"DF": -0.25, "SF": 0, "MABA": 0.25}[k], [1 / r[2][k] for r in rows], 0.25, label=lab
        )
    ax[0].set_xticks(range(len(rows)), names)
    ax[0].set_yscale("log")
    ax[0].set_ylabel("simulated frames / s (1 thread)")
    ax[0].legend()
    for k in ("DF", "SF", "MABA"):
        ax[1].loglog([s[0] for s in sn], [r[2][k] * 1e6 for r in rows if r[0].startswith("Snake")], "o-", label=k)
    ax[1].set_xlabel("DOF (snakes)")
    ax[1].set_ylabel("step time (us)")
    ax[1].legend()
    fig.tight_layout()
    os.makedirs(os.path.dirname(a.png), exist_ok=True)
    fig.savefig(a.png, dpi=110)
    print(f"wrote {a.png}")


if __name__ == "__main__":
    main()
