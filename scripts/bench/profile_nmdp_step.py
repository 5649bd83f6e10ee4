"""Where an nmdp / pbd_nmdp step's time goes on the Robosimian jump (issue #18, B-T8).

Two parts:

1. **Run** (``--methods``, ``--dts``, ``--seconds``): the jump of ``scripts/figures/nmdp_robosimian.py``
   (same robot, scene, gains), per step the wall time (``Integrator.step``, Python included), the
   outer PGM iterations, sub-steps, rejections, Newton steps of the projections, LU factorizations
   and model evaluations (``extra["lu_factorizations"]`` / ``extra["evaluations"]``, where the tree
   reports them) and the candidate count.  Printed: median / mean wall per step and the means of
   the counters.
2. **Phases** (``--phases``): at states captured from the run (one every ``--every`` steps while
   the feet are loaded), each phase of an outer iteration timed alone inside a numba loop (no
   Python dispatch): the evaluation with derivatives (RNEA derivatives, CRBA, A's assembly, the
   contact terms), without derivatives (G and K only), the LU of A, the ``m = vx * candidates``
   back-solves for ``D = A^-1 B``, ``H D`` and the Gram ``D^T H D``, and the whole QP
   (``pgm_qp``: all of the above plus the active-set solve).  Multiplied by the run's counters it
   gives the step's budget.

    python scripts/bench/profile_nmdp_step.py --methods nmdp,ne_mdp --dts 10,50 --seconds 2.5 --phases
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

FIGURES = Path(__file__).resolve().parents[1] / "figures"  # nmdp_robosimian
sys.path.insert(0, str(FIGURES))

from nmdp_robosimian import build, reference  # noqa: E402

from pbsim.integrators import State, make  # noqa: E402


def run(method, model, scene, q0, dt, seconds, capture_every=0, **opts):
    """The jump for ``seconds``: per-step wall and counters; states captured every
    ``capture_every`` steps (0: none) as (q, v, control)."""
    ref = reference(model, "jump", dt)
    integ = make(method, model, scene, on_fail="ignore", **opts)
    s = State.make(model, q0)
    n = int(round(seconds / dt))
    rows, caps = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(n):
            c = ref(s.t, s)
            if capture_every and k % capture_every == 0 and k > 0:
                caps.append((s.q[0].copy(), s.v[0].copy(), c, k))
            t0 = time.perf_counter()
            s, d = integ.step(s, c, dt)
            wall = time.perf_counter() - t0
            e = d.extra
            rows.append(
                dict(
                    wall=wall,
                    its=int(d.iterations[0]) if d.iterations is not None else 0,
                    sub=int(e.get("substeps", [1])[0]),
                    rej=int(e.get("rejections", [0])[0]),
                    newton=int(e.get("newton_iterations", [0])[0]),
                    lu=int(e.get("lu_factorizations", [-1])[0]),
                    ev=int(e.get("evaluations", [-1])[0]),
                    qp=int(e.get("qp_solves", [-1])[0]),
                    qpit=int(e.get("qp_iterations", [-1])[0]),
                    amin=float(e.get("min_alpha", [1.0])[0]),
                )
            )
            if not np.isfinite(s.q).all():
                break
    return integ, rows, caps


def summary(method, dt, rows):
    w = np.array([r["wall"] for r in rows])
    its = np.array([r["its"] for r in rows])
    f = {k: np.mean([r[k] for r in rows]) for k in ("sub", "rej", "newton", "lu", "ev", "qp", "qpit")}
    sub = np.mean([r["amin"] < 1 for r in rows]) * 100
    return (
        f"| {method} | {dt * 1e3:g} | {len(rows)} | {np.median(w) * 1e3:.2f} | {w.mean() * 1e3:.2f} | "
        f"{its.mean():.1f} / {its.max()} | {f['sub']:.2f} | {sub:.1f} | {f['rej']:.1f} | {f['newton']:.1f} | "
        f"{f['lu']:.1f} | {f['ev']:.1f} | {f['qp']:.1f} | {f['qpit'] / max(f['qp'], 1e-9):.1f} |"
    )


HEAD = (
    "| method | dt [ms] | steps | median wall [ms] | mean wall [ms] | outer its mean / max | sub-steps | "
    "sub-stepped [%] | rejections | Newton steps | LU | evaluations | QPs | QP its / QP |\n"
    "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def phase_kernels():
    """numba loops timing one phase ``R`` times (compiled on first use)."""
    import numba

    from pbsim.integrators.nmdp.step import nmdp_eval
    from pbsim.integrators.pgm.qp import pgm_qp
    from pbsim.optim.linalg import gram_symmetric, lu_factor, lu_solve

    @numba.njit(cache=False)
    def t_eval(R, m, s, c, w, x, q0, v0, th, h, wts, nc, deriv, first):
        K = 0.0
        for _ in range(R):
            K += nmdp_eval(m, s, c, w, x, 0, q0, v0, th, h, wts, nc, deriv, first)
        return K

    @numba.njit(cache=False)
    def t_lu(R, A, LU, piv, n):
        ok = True
        for _ in range(R):
            ok &= lu_factor(A, LU, piv, n)
        return ok

    try:
        from pbsim.optim.linalg import lu_solve_rows
    except ImportError:  # the tree before it: one right-hand side at a time

        @numba.njit(cache=False)
        def lu_solve_rows(LU, piv, X, r0, k, n):
            for r in range(r0, r0 + k):
                lu_solve(LU, piv, X[r], n)

    @numba.njit(cache=False)
    def t_solve(R, LU, piv, Bm, D, mm, n):
        for _ in range(R):
            for r in range(mm):
                for j in range(n):
                    D[r, j] = Bm[r, j]
            lu_solve_rows(LU, piv, D, 0, mm, n)

    @numba.njit(cache=False)
    def t_gram(R, D, M, HX, QA, mm, n):
        sig = 0.0
        for _ in range(R):
            for rr in range(mm):
                for i in range(n):
                    a = 0.0
                    for j in range(n):
                        a += M[i, j] * D[rr, j]
                    HX[rr, i] = a
            sig += gram_symmetric(D, HX, mm, n, QA)
        return sig

    @numba.njit(cache=False)
    def t_qp(R, m, x, nc, h, gamma, st):
        ok = True
        for _ in range(R):
            ok &= pgm_qp(m, x, 0, nc, h, gamma, st, False)
        return ok

    return t_eval, t_lu, t_solve, t_gram, t_qp


def timeit(f, *a, R=20, rounds=5):
    f(1, *a)
    best = np.inf
    for _ in range(rounds):
        t0 = time.perf_counter()
        f(R, *a)
        best = min(best, (time.perf_counter() - t0) / R)
    return best


def phases(integ, caps, dt):
    """Per captured state: ms of each phase (best of rounds), the candidate count."""
    t_eval, t_lu, t_solve, t_gram, t_qp = phase_kernels()
    out = []
    m = integ.model.k
    for q, v, ctrl, k in caps:
        x, kc, wk, ks, q0, v0, nc = integ._prepared(q, v, dt, ctrl)
        if nc == 0:
            continue
        n = integ.model.nv
        th = q0.copy()
        # a representative point: the accepted iterate of a step from here (q0 (+) dt v0 is close)
        from pbsim.dynamics.joints import integrate_config

        integrate_config(m, q0, dt * v0, th, wk.Rj[0])
        wts = np.zeros(x.wts.shape[1])
        first = not integ.ZO
        ev = timeit(t_eval, m, ks, kc, wk, x, q0, v0, th, dt, wts, nc, True, first) * 1e3
        ev0 = timeit(t_eval, m, ks, kc, wk, x, q0, v0, th, dt, wts, nc, False, first) * 1e3
        integ.HOOKS[1](m, ks, kc, wk, x, 0, q0, v0, th, dt, wts, nc, True, first)
        A = x.A[0].copy()
        lu = timeit(t_lu, A, x.LU[0], x.piv[0], n) * 1e3
        mm = integ.vx * nc
        D = np.zeros((mm, n))
        sv = timeit(t_solve, x.LU[0], x.piv[0], x.Bm[0], D, mm, n) * 1e3
        HX = np.zeros((mm, n))
        QA = np.zeros((mm, mm))
        gr = timeit(t_gram, D, x.M[0], HX, QA, mm, n) * 1e3
        st = np.zeros(x.stats.shape[1])
        qp = timeit(t_qp, m, x, nc, dt, 1.0, st, R=5) * 1e3
        out.append(dict(step=k, nc=nc, eval=ev, eval0=ev0, lu=lu, solve=sv, gram=gr, qp=qp))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", default="nmdp")
    ap.add_argument("--dts", default="10,50", help="[ms]")
    ap.add_argument("--seconds", type=float, default=2.5)
    ap.add_argument("--phases", action="store_true", help="time the phases at captured states (nmdp only)")
    ap.add_argument("--every", type=int, default=0, help="capture a state every this many steps (0: ~8 per run)")
    ap.add_argument("--npz", help="write the per-step rows here")
    a = ap.parse_args(argv)
    model, scene, q0 = build()
    print(HEAD)
    saved = {}
    for method in a.methods.split(","):
        for dts in a.dts.split(","):
            dt = float(dts) * 1e-3
            n = int(round(a.seconds / dt))
            every = (a.every or max(n // 8, 1)) if (a.phases and method in ("nmdp", "nmdp_zo")) else 0
            integ, rows, caps = run(method, model, scene, q0, dt, a.seconds, every)
            print(summary(method, dt, rows), flush=True)
            saved[f"{method}_{dts}"] = np.array([[r[k] for k in ("wall", "its", "sub", "rej", "newton", "lu", "ev", "qp", "qpit")]
                                                 for r in rows])  # fmt: skip
            if every:
                ph = phases(integ, caps, dt)
                print(f"\nphases of {method} at {dts} ms [ms per call; best of 5 x 20 in a numba loop]:")
                print("| step | candidates | m | eval (A, B, g, H) | eval (G, K only) | LU | m back-solves | "
                      "H D + Gram | pgm_qp total | QP solve (total - LU - solves - Gram) |")  # fmt: skip
                print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
                for p in ph:
                    qs = p["qp"] - p["lu"] - p["solve"] - p["gram"]
                    print(f"| {p['step']} | {p['nc']} | {p['nc'] * integ.vx} | {p['eval']:.3f} | {p['eval0']:.3f} | "
                          f"{p['lu']:.3f} | {p['solve']:.3f} | {p['gram']:.3f} | {p['qp']:.3f} | {qs:.3f} |")  # fmt: skip
                print(flush=True)
    if a.npz:
        np.savez(a.npz, **saved)


if __name__ == "__main__":
    main()
