"""RNEA derivatives benchmark: d tau/dq and d tau/dv (pbsim.rnea_derivatives) next to Pinocchio's
computeRNEADerivatives and next to finite differences of our own RNEA, on the same robots in one run.

Models: revolute chains (10, 40), a1 and laikago (pybullet_data, free base), the DeepMimic humanoid
(free base + ball joints), pbsim's dog (free + 20 ball joints), Robosimian (../shared, when present).
Pinocchio's model is built through its API from ours (identical inertias and joint order:
scripts/bench/bench_dynamics.py's pin_model), so its matrices are compared entry by entry.

Timing (microseconds per state, best of --repeat interleaved rounds, process CPU time, one thread):
  ours api    the public call for one state (input validation and output arrays included)
  ours hot    the kernel on one state, repeated (warm caches: like the loop of Pinocchio calls)
  ours batch  the batch kernel over --batch distinct states on one thread, per state
  pin         pin.computeRNEADerivatives per call from Python
  fd kernel   forward differences of our RNEA in a kernel (1 + 2 nv RNEA calls and nv integrates)
Accuracy (max over --states random states): relative max-abs error of d tau/dq and d tau/dv vs
Pinocchio and vs central differences of pbsim.rnea (h = 1e-6), and of dK/dq vs Pinocchio
(1/2 v^T dM/dq v from computeRNEADerivatives(q, 0, v) without gravity) and vs central differences of
the kinetic energy.

    python scripts/bench/bench_rnea_derivatives.py [--batch 64] [--repeat 5] [--states 10]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(__file__), "..", "..", p) for p in (".", "models")]

import numba  # noqa: E402
from numba import prange  # noqa: E402

import pbsim  # noqa: E402
import pbsim_models  # noqa: E402
from bench_dynamics import best_of, pin_model, to_pin_q  # noqa: E402
from pbsim.jit import kernel  # noqa: E402
from pbsim.dynamics.joints import integrate_config  # noqa: E402
from pbsim.dynamics.rnea import rnea_state  # noqa: E402
from pbsim.dynamics.rnea_derivatives import (  # noqa: E402
    rnea_derivatives_batch,
    rnea_derivatives_state,
    rnea_derivatives_work_for,
)
from pbsim.dynamics.workspace import work_for  # noqa: E402


@kernel
def fd_state(m, w, b, q, v, a, h, qp, vp, t0, t1, dq, dv):
    """Forward differences of RNEA along q (+) h e_k and v + h e_k: 1 + 2 nv RNEA calls."""
    rnea_state(m, w, b, q, v, a, t0)
    for k in range(m.nv):
        for j in range(m.nv):
            vp[j] = 0.0
        vp[k] = h
        integrate_config(m, q, vp, qp, w.Rj[b])
        rnea_state(m, w, b, qp, v, a, t1)
        for r in range(m.nv):
            dq[r, k] = (t1[r] - t0[r]) / h
        for j in range(m.nv):
            vp[j] = v[j]
        vp[k] += h
        rnea_state(m, w, b, q, vp, a, t1)
        for r in range(m.nv):
            dv[r, k] = (t1[r] - t0[r]) / h


@kernel(parallel=True)
def fd_batch(m, w, q, v, a, h, qp, vp, t0, t1, dq, dv):
    for b in prange(q.shape[0]):
        fd_state(m, w, b, q[b], v[b], a[b], h, qp[b], vp[b], t0[b], t1[b], dq[b], dv[b])


@kernel(parallel=True)
def same_state_batch(m, x, q, v, a, dq, dv):
    """The derivatives of state 0, q.shape[0] times over (warm caches, like a loop of Pinocchio calls)."""
    for _b in prange(q.shape[0]):  # one thread only: every row writes state 0's scratch
        rnea_derivatives_state(m, x, 0, q[0], v[0], a[0], dq[0], dv[0])


def _load(rel, floating=True):
    import pybullet_data

    return pbsim.load(os.path.join(pybullet_data.getDataPath(), rel), floating_base=floating)


def robots():
    out = [(f"chain{n}", lambda n=n: pbsim_models.chain(n)) for n in (10, 40)]
    out += [("a1", lambda: _load("a1/a1.urdf")), ("laikago", lambda: _load("laikago/laikago_toes_zup.urdf"))]
    out += [("humanoid", lambda: _load("humanoid/humanoid.urdf")), ("dog", pbsim_models.dog)]
    shared = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "robots", "robosimian")
    path = os.path.join(shared, "robosimian_caesar_new_all_active.urdf")
    if os.path.isfile(path):
        out.append(("robosimian", lambda: pbsim.load(path, floating_base=True)))
    return out


def rel(a, b):
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


def central_fd(m, q, v, a, h=1e-6):
    E = np.eye(m.nv) * h
    Q, V, A = (np.tile(x, (m.nv, 1)) for x in (q, v, a))
    dq = (pbsim.rnea(m, pbsim.integrate(m, Q, E), V, A) - pbsim.rnea(m, pbsim.integrate(m, Q, -E), V, A)).T / (2 * h)
    dv = (pbsim.rnea(m, Q, V + E, A) - pbsim.rnea(m, Q, V - E, A)).T / (2 * h)
    Kp = pbsim.energy(m, pbsim.integrate(m, Q, E), V)[:, 0]
    Km = pbsim.energy(m, pbsim.integrate(m, Q, -E), V)[:, 0]
    return dq, dv, (Kp - Km) / (2 * h)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--states", type=int, default=10)
    args = ap.parse_args(argv)
    import pinocchio as pin

    numba.set_num_threads(1)
    rng = np.random.default_rng(0)
    acc, tim = [], []
    for name, make in robots():
        m = make()
        B = args.batch
        Q = np.array([m.random_configuration(rng) for _ in range(B)])
        V = rng.normal(size=(B, m.nv)) * 2
        A = rng.normal(size=(B, m.nv)) * 3
        pm = pin_model(m)
        pd = pm.createData()
        PQ = np.array([to_pin_q(m, q) for q in Q])
        # accuracy
        e = dict(pin_q=0.0, pin_v=0.0, pin_k=0.0, fd_q=0.0, fd_v=0.0, fd_k=0.0)
        pm0 = pin_model(m)  # zero gravity: RNEA(q, 0, v) = M(q) v, whose dq-columns give dK/dq
        pm0.gravity.linear = np.zeros(3)
        pd0 = pm0.createData()
        DQ, DV = pbsim.rnea_derivatives(m, Q[: args.states], V[: args.states], A[: args.states])
        GK, _ = pbsim.kinetic_energy_gradient(m, Q[: args.states], V[: args.states])
        for k in range(args.states):
            pin.computeRNEADerivatives(pm, pd, PQ[k], V[k], A[k])
            e["pin_q"] = max(e["pin_q"], rel(DQ[k], pd.dtau_dq))
            e["pin_v"] = max(e["pin_v"], rel(DV[k], pd.dtau_dv))
            pin.computeRNEADerivatives(pm0, pd0, PQ[k], np.zeros(m.nv), V[k])
            e["pin_k"] = max(e["pin_k"], rel(GK[k], 0.5 * V[k] @ pd0.dtau_dq))
            if k < 3:
                fq, fv, fk = central_fd(m, Q[k], V[k], A[k])
                e["fd_q"] = max(e["fd_q"], rel(DQ[k], fq))
                e["fd_v"] = max(e["fd_v"], rel(DV[k], fv))
                e["fd_k"] = max(e["fd_k"], rel(GK[k], fk))
        acc.append(dict(model=name, nv=m.nv, **e))
        # timing
        x = rnea_derivatives_work_for(m, B)
        dq, dv = np.empty((B, m.nv, m.nv)), np.empty((B, m.nv, m.nv))
        w = work_for(m, B)
        qp, vp, t0, t1 = np.empty_like(Q), np.empty_like(V), np.empty_like(V), np.empty_like(V)
        fq, fv = np.empty_like(dq), np.empty_like(dv)
        rnea_derivatives_batch(m.k, x, Q, V, A, dq, dv)
        same_state_batch(m.k, x, Q, V, A, dq, dv)
        fd_batch(m.k, w, Q, V, A, 1e-7, qp, vp, t0, t1, fq, fv)
        q0, v0, a0, pq0 = Q[0], V[0], A[0], PQ[0]
        pbsim.rnea_derivatives(m, q0, v0, a0)
        fns = dict(
            api=(lambda: pbsim.rnea_derivatives(m, q0, v0, a0), 200, 1),
            hot=(lambda: same_state_batch(m.k, x, Q, V, A, dq, dv), 5, B),
            ker=(lambda: rnea_derivatives_batch(m.k, x, Q, V, A, dq, dv), 5, B),
            pin=(lambda: pin.computeRNEADerivatives(pm, pd, pq0, v0, a0), 200, 1),
            fd=(lambda: fd_batch(m.k, w, Q, V, A, 1e-7, qp, vp, t0, t1, fq, fv), 2, B),
        )
        best = dict.fromkeys(fns, np.inf)
        for _ in range(args.repeat):  # interleaved, so that load from other processes hits all alike
            for key, (fn, number, per) in fns.items():
                best[key] = min(best[key], best_of(fn, 1, number) / per * 1e6)
        tim.append(dict(model=name, nv=m.nv, **best))
    print(
        f"pbsim {pbsim.__version__}, numba {numba.__version__}, pinocchio {pin.__version__}; one thread; "
        f"best of {args.repeat} interleaved; process CPU time"
    )
    print("\nAccuracy (relative max-abs error; vs Pinocchio over", args.states, "states, vs central FD over 3)")
    print(
        "| model | nv | dtau/dq vs pin | dtau/dv vs pin | dK/dq vs pin | dtau/dq vs FD | dtau/dv vs FD | dK/dq vs FD |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in acc:
        print(
            f"| {r['model']} | {r['nv']} | {r['pin_q']:.1e} | {r['pin_v']:.1e} | {r['pin_k']:.1e} | {r['fd_q']:.1e} | "
            f"{r['fd_v']:.1e} | {r['fd_k']:.1e} |"
        )
    print("\nTiming (microseconds per state)")
    print("| model | nv | ours api | ours hot | ours batch | pin | pin / ours hot | fd kernel | fd / ours batch |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in tim:
        print(
            f"| {r['model']} | {r['nv']} | {r['api']:.2f} | {r['hot']:.2f} | {r['ker']:.2f} | {r['pin']:.2f} | "
            f"{r['pin'] / r['hot']:.2f} | {r['fd']:.2f} | {r['fd'] / r['ker']:.1f} |"
        )


if __name__ == "__main__":
    main()
