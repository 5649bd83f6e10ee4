"""Dynamics benchmark: microseconds per state of FK, RNEA, CRBA, ABA next to Pinocchio.

Models: the DeepMimic humanoid (pybullet_data, 34 DOF with the free base) and revolute chains
N = 10, 40, 100, 200.  pbsim is timed for a single state (public API call) and for batches of
1000 states on one thread and on all cores; Pinocchio (same model, built through its API from
ours so both use identical inertias) per call from Python.  Prints a table with ratios
(pin / pbsim: > 1 means pbsim is faster), the log-log slope of ABA time vs DOF, and writes
docs/img/bench_dynamics.png.

    python scripts/bench/bench_dynamics.py [--batch 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
sys.path[:0] = [os.path.join(ROOT, p) for p in (".", "models")]

import numba  # noqa: E402

import pbsim  # noqa: E402
import pbsim_models  # noqa: E402
from pbsim.dynamics.joints import BALL, FREE, PRISMATIC, REVOLUTE  # noqa: E402


def pin_model(model):
    """The same multibody in Pinocchio, joint by joint (q layout identical up to quaternion order)."""
    import pinocchio as pin

    pm = pin.Model()
    pm.gravity = pin.Motion(np.r_[model.gravity, 0, 0, 0])
    ids = []
    for i in range(model.nb):
        par = 0 if model.parent[i] < 0 else ids[model.parent[i]]
        t = model.jtype[i]
        jm = {
            REVOLUTE: lambda: pin.JointModelRevoluteUnaligned(model.axis[i]),
            PRISMATIC: lambda: pin.JointModelPrismaticUnaligned(model.axis[i]),
            BALL: pin.JointModelSpherical,
            FREE: pin.JointModelFreeFlyer,
        }[t]()
        jid = pm.addJoint(par, jm, pin.SE3(model.tree_R[i], model.tree_p[i]), model.joint_names[i])
        pm.appendBodyToJoint(jid, pin.Inertia(model.mass[i], model.com[i], model.inertia_com[i]), pin.SE3.Identity())
        ids.append(jid)
    pm.armature = model.armature.copy()
    return pm


def to_pin_q(model, q):
    qp = q.copy()
    for i in range(model.nb):
        k = model.iq[i]
        if model.jtype[i] == BALL:
            qp[k : k + 4] = np.roll(q[k : k + 4], -1)
        elif model.jtype[i] == FREE:
            qp[k + 3 : k + 7] = np.roll(q[k + 3 : k + 7], -1)
    return qp


def best_of(fn, repeat, number, clock=time.process_time):
    """Best mean time per call.  One-thread numbers use process CPU time, which other
    processes on a shared machine disturb far less than wall time; the all-core numbers must use
    wall time (process time adds up every thread)."""
    best = np.inf
    for _ in range(repeat):
        t = clock()
        for _ in range(number):
            fn()
        best = min(best, (clock() - t) / number)
    return best


def humanoid():
    import pybullet_data

    return pbsim.load(os.path.join(pybullet_data.getDataPath(), "humanoid", "humanoid.urdf"), floating_base=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--png", default=os.path.join(ROOT, "docs", "img", "bench_dynamics.png"))
    args = ap.parse_args(argv)
    import pinocchio as pin

    models = [("humanoid", humanoid())] + [(f"chain{n}", pbsim_models.chain(n)) for n in (10, 40, 100, 200)]
    all_threads = numba.get_num_threads()
    rng = np.random.default_rng(0)
    rows = []
    for name, m in models:
        B = args.batch
        Q = np.array([m.random_configuration(rng) for _ in range(B)])
        V = rng.normal(size=(B, m.nv))
        T = rng.normal(size=(B, m.nv))
        A = rng.normal(size=(B, m.nv))
        pm = pin_model(m)
        pd = pm.createData()
        qp = to_pin_q(m, Q[0])
        algos = {
            "FK": (lambda X: pbsim.forward_kinematics(m, X[0]), lambda: pin.forwardKinematics(pm, pd, qp)),
            "RNEA": (lambda X: pbsim.rnea(m, X[0], X[1], X[3]), lambda: pin.rnea(pm, pd, qp, V[0], A[0])),
            "CRBA": (lambda X: pbsim.crba(m, X[0]), lambda: pin.crba(pm, pd, qp)),
            "ABA": (lambda X: pbsim.aba(m, X[0], X[1], X[2]), lambda: pin.aba(pm, pd, qp, V[0], T[0])),
        }
        for algo, (ours, theirs) in algos.items():
            ours((Q, V, T, A))  # compile / warm
            single = best_of(lambda: ours((Q[0], V[0], T[0], A[0])), args.repeat, 200)
            numba.set_num_threads(1)
            ours((Q, V, T, A))
            b1 = best_of(lambda: ours((Q, V, T, A)), args.repeat, 3) / B
            numba.set_num_threads(all_threads)
            ours((Q, V, T, A))
            ball = best_of(lambda: ours((Q, V, T, A)), args.repeat, 3, clock=time.perf_counter) / B
            tp = best_of(theirs, args.repeat, 500)
            rows.append(
                dict(
                    model=name,
                    nv=m.nv,
                    algo=algo,
                    single=single * 1e6,
                    batch1=b1 * 1e6,
                    batchall=ball * 1e6,
                    pin=tp * 1e6,
                )
            )
    hdr = (
        f"{'model':<10}{'nv':>5} {'algo':<5}{'single us':>11}{'batch/1thr':>12}{f'batch/{all_threads}thr':>12}"
        f"{'pin us':>9}{'pin/batch1':>12}"
    )
    print(
        f"pbsim {pbsim.__version__}, numba {numba.__version__}, pinocchio {pin.__version__}, batch {args.batch}, "
        f"{all_threads} threads; microseconds per state (best of {args.repeat}; CPU time except the "
        f"all-core column, which is wall time)"
    )
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        print(
            f"{r['model']:<10}{r['nv']:>5} {r['algo']:<5}{r['single']:>11.2f}{r['batch1']:>12.2f}"
            f"{r['batchall']:>12.2f}{r['pin']:>9.2f}{r['pin'] / r['batch1']:>12.2f}"
        )
    chains = [r for r in rows if r["model"].startswith("chain")]
    slopes = {}
    for algo in ("ABA", "RNEA", "CRBA"):
        x = np.log([r["nv"] for r in chains if r["algo"] == algo])
        y = np.log([r["batch1"] for r in chains if r["algo"] == algo])
        slopes[algo] = np.polyfit(x, y, 1)[0]
    print(
        "log-log slope of time vs DOF (chains 10-200, batch, one thread): "
        + ", ".join(f"{a} {s:.3f}" for a, s in slopes.items())
        + "  (CRBA is O(n^2) by nature)"
    )
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        for algo, c in zip(("FK", "RNEA", "CRBA", "ABA"), ("C0", "C1", "C2", "C3")):
            n = [r["nv"] for r in chains if r["algo"] == algo]
            ax.loglog(n, [r["batch1"] for r in chains if r["algo"] == algo], "o-", color=c, label=f"pbsim {algo}")
            ax.loglog(n, [r["pin"] for r in chains if r["algo"] == algo], "x--", color=c, label=f"pin {algo}")
        ax.set_xlabel("DOF (revolute chain)")
        ax.set_ylabel("us per state (1 thread)")
        ax.legend(fontsize=7, ncol=2)
        ax.set_title("pbsim batched kernels vs Pinocchio")
        fig.tight_layout()
        os.makedirs(os.path.dirname(os.path.abspath(args.png)), exist_ok=True)
        fig.savefig(args.png, dpi=110)
        print(f"wrote {os.path.normpath(args.png)}")
    except ImportError:
        pass


if __name__ == "__main__":
    main()
