"""The contact QPs of ``ne_mdp`` and ``nmdp`` (paper 002, Eq. 3 and 8) solved by pbsim's numba
kernels and by PyPI solvers through qpsolvers: FISTA (:func:`pbsim.optim.qp.qp_solve`), the
primal active-set method (:func:`pbsim.optim.qp.qp_solve_as`), and whichever of daqp, proxsuite
(qpsolvers' ``proxqp``), clarabel, osqp is installed (``pip install qpsolvers daqp proxsuite
clarabel osqp``).

The QPs are captured from real steps (the step kernel leaves its last QP in its scratch: ``x.A``,
``x.g`` for ne_mdp, ``x.QA``, ``x.qb`` for nmdp, scaled as the kernels scale them):

- ``robo ne_mdp``: the Robosimian (38 DOF, ../shared/robots/robosimian) standing on a plane under
  stable PD (kp 2000, kd 200), ne_mdp at 5, 10 and 50 ms (the QP of every few steps);
- ``robo nmdp``: the same robot, nmdp at 10 ms (the last proximal QP of each step);
- ``box ne_mdp`` / ``box nmdp``: B-T3's box on the 20 and 35 deg inclines (scripts/figures/bench_nmdp_incline.py).

Per set and solver: mean / max iterations, mean time per QP (after compilation), largest KKT
(natural) residual ``|x - P(x - (A x + b))|_inf`` of the returned point, largest objective gap to
the best objective any solver reached, and FISTA's time over the solver's.  FISTA and the
active-set method run at tolerance ``--tol`` from x = 0; the PyPI solvers through
``qpsolvers.solve_qp`` (dense, or CSC for osqp / clarabel; the simplex sums as rows of G, x >= 0
as bounds; its conversion overhead counted) at tight settings (``eps_abs`` 1e-9 / 1e-10; daqp
at its defaults), their solutions projected onto the feasible set before the residual is taken.

    python scripts/bench/bench_qp.py [--tol 1e-8] [--steps 60] [--dump /tmp/qps.npz] [--solvers ...]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from pbsim.optim.qp import QP_BOX, QP_SIMPLEX, qp_kkt, qp_project, qp_solve, qp_solve_as, qp_work, qp_work_as

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "figures"))  # bench_nmdp_incline (B-T3's incline)

ROBOT = Path(__file__).resolve().parents[3] / "shared/robots/robosimian/robosimian_caesar_new_all_active.urdf"


def _grab_ne_mdp(integ):
    """The last QP of the step in integ's scratch: dict(A, b, bstart, btype, cap, lo, hi)."""
    x = integ._x  # noqa: SLF001 - the step's scratch
    nc = int(x.info[0, 3])
    if nc == 0:
        return None
    n = nc * x.vx
    return dict(A=x.A[0, :n, :n].copy(), b=x.g[0, :n].copy(), bstart=x.bstart[0, : nc + 1].copy(),
                btype=x.btype[0, :nc].copy(), cap=x.bmu[0, :nc].copy(), lo=x.lo[0, :n].copy(),
                hi=x.hi[0, :n].copy())  # fmt: skip


def _grab_nmdp(integ):
    x = integ._x  # noqa: SLF001
    bs = x.bstart[0]
    nc = int(np.count_nonzero(bs >= 0)) - 1  # the sentinel -1 marks what this step did not write
    if nc <= 0:
        return None
    n = nc * x.vx
    A = x.QA[0, :n, :n].copy()
    if x.qc[0] > 0.0:  # solved in its dual form (pbsim.integrators.pgm.qp): A = c I + R^T R, never formed
        Rt = x.HX[0, :n, : x.Lq.shape[1]]
        A = x.qc[0] * np.eye(n) + Rt @ Rt.T
    return dict(A=A, b=x.qb[0, :n].copy(), bstart=bs[: nc + 1].copy(),
                btype=x.btype[0, :nc].copy(), cap=x.bmu[0, :nc].copy(), lo=x.lo[0, :n].copy(),
                hi=x.hi[0, :n].copy())  # fmt: skip


def _capture(method, m, sc, q0, ctl, dt, steps, every, **options):
    from pbsim.integrators import State, make

    integ = make(method, m, sc, on_fail="ignore", **options)
    s = State.make(m, q0)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(steps):
            marked = method == "nmdp" and getattr(integ, "_x", None) is not None
            if marked:
                integ._x.bstart[:] = -1  # noqa: SLF001
            s, d = integ.step(s, ctl, dt)
            if d.nan.any():
                break
            if k % every == 0 and (marked or method != "nmdp"):
                qp = (_grab_nmdp if method == "nmdp" else _grab_ne_mdp)(integ)
                if qp is not None and qp["A"].shape[0] > 0:
                    out.append(qp)
    return out


def robosimian():
    import pbsim
    from pbsim.contact import contact_query, make_scene
    from pbsim.control import Control
    from pbsim_models.poses import standing_pose

    m = pbsim.load(str(ROBOT), floating_base=True)
    q0 = standing_pose(m)
    sc = make_scene(m, ground="plane", mu=0.8)
    X = contact_query(m, sc, q0)["X"][0]
    q0[2] -= (X[:, 2] - sc.points.radius).min()
    ctl = Control(mode="spd", kp=2000.0, kd=200.0, q_ref=q0.copy())
    return m, sc, q0, ctl


def qp_sets(steps=60):
    """{name: [QP dicts]}: the captured problems (module docstring)."""
    from bench_nmdp_incline import incline

    sets = {}
    m, sc, q0, ctl = robosimian()
    qs = []
    for dt in (5e-3, 10e-3, 50e-3):
        qs += _capture("ne_mdp", m, sc, q0, ctl, dt, steps, max(steps // 10, 1))
    sets["robo ne_mdp"] = qs
    sets["robo nmdp"] = _capture("nmdp", m, sc, q0, ctl, 10e-3, max(steps // 6, 4), 1)
    for method in ("ne_mdp", "nmdp"):
        qs = []
        for deg in (20.0, 35.0):
            bm, integ, bq0, _n, _down = incline(method, deg)
            qs += _capture(method, bm, integ.scene, bq0, None, 10e-3, steps, max(steps // 10, 1))
        sets[f"box {method}"] = qs
    return sets


def kkt(qp, x):
    A, b = qp["A"], qp["b"]
    n = len(b)
    return qp_kkt(x, A @ x + b, qp["lo"], qp["hi"], qp["bstart"], qp["btype"], qp["cap"], np.zeros(n), n)


def solve_numba(qp, which, tol, maxit=100000, reps=3):
    A = np.ascontiguousarray(qp["A"])
    b = qp["b"]
    n = len(b)
    work = qp_work_as(n) if which == "as" else qp_work(n)
    info = np.zeros(4)
    f = qp_solve_as if which == "as" else qp_solve
    best = np.inf
    for _ in range(reps):
        x = np.zeros(n)
        t0 = time.perf_counter()
        f(A, b, n, qp["lo"], qp["hi"], qp["bstart"], qp["btype"], qp["cap"], x, maxit, tol, work, info)
        best = min(best, time.perf_counter() - t0)
    return x, int(info[0]), best


def solve_pypi(qp, solver, reps=3):
    """qpsolvers with the simplex blocks as G x <= h (x >= 0 as bounds; sum x <= cap as rows)."""
    import qpsolvers

    A, b = qp["A"], qp["b"]
    n = len(b)
    lb, ub = np.full(n, -np.inf), np.full(n, np.inf)
    rows, h = [], []
    for k, t in enumerate(qp["btype"]):
        i0, i1 = qp["bstart"][k], qp["bstart"][k + 1]
        if t == QP_SIMPLEX:
            lb[i0:i1] = 0.0
            r = np.zeros(n)
            r[i0:i1] = 1.0
            rows.append(r)
            h.append(qp["cap"][k] if qp["cap"][k] > 0 else 1.0)
        elif t == QP_BOX:
            lb[i0:i1], ub[i0:i1] = qp["lo"][i0:i1], qp["hi"][i0:i1]
    G = np.array(rows) if rows else None
    h = np.array(h) if rows else None
    P = 0.5 * (A + A.T)
    opts = dict(
        daqp=dict(),
        proxqp=dict(eps_abs=1e-10, eps_rel=0.0),
        clarabel=dict(tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10),
        osqp=dict(eps_abs=1e-9, eps_rel=1e-9, max_iter=200000, polish=True, verbose=False),
    )[solver]
    if solver in ("osqp", "clarabel"):
        import scipy.sparse as sp

        P = sp.csc_matrix(P)
        G = sp.csc_matrix(G) if G is not None else None
    best, x = np.inf, None
    for _ in range(reps):
        t0 = time.perf_counter()
        x = qpsolvers.solve_qp(P, b, G, h, lb=lb, ub=ub, solver=solver, **opts)
        best = min(best, time.perf_counter() - t0)
    if x is None:
        return np.full(n, np.nan), best
    x = x.copy()
    qp_project(x, qp["lo"], qp["hi"], qp["bstart"], qp["btype"], qp["cap"])
    return x, best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tol", type=float, default=1e-8, help="KKT tolerance of the numba solvers")
    ap.add_argument("--steps", type=int, default=60, help="steps per captured run")
    ap.add_argument("--dump", default=None, help="also save the QPs to this .npz")
    ap.add_argument(
        "--solvers",
        nargs="*",
        default=["daqp", "proxqp", "clarabel", "osqp"],
        help="qpsolvers names (proxqp: the proxsuite package)",
    )
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")  # qpsolvers' conversion warnings
    t0 = time.perf_counter()
    sets = qp_sets(a.steps)
    print(f"captured {sum(map(len, sets.values()))} QPs in {time.perf_counter() - t0:.0f} s")
    if a.dump:
        flat = {}
        for name, qs in sets.items():
            for i, qp in enumerate(qs):
                for key, val in qp.items():
                    flat[f"{name.replace(' ', '_')}/{i}/{key}"] = val
        np.savez(a.dump, **flat)
    pypi = []
    for s in a.solvers:
        try:
            import qpsolvers

            if s in qpsolvers.available_solvers:
                pypi.append(s)
            else:
                print(f"({s}: not installed)")
        except ImportError:
            print("(qpsolvers not installed)")
            break
    # compile the numba kernels once
    q = next(iter(sets.values()))[0]
    solve_numba(q, "fista", a.tol, reps=1)
    solve_numba(q, "as", a.tol, reps=1)
    print(f"numba tol {a.tol:g}, times: best of 3 per QP, mean over the set; gap: objective - best objective, max")
    print(f"{'set':<12} {'#':>3} {'n mean/max':>11} {'solver':<10} {'its mean/max':>14} {'ms/QP':>8} "
          f"{'x FISTA':>8} {'KKT max':>9} {'gap max':>9}")  # fmt: skip
    for name, qs in sets.items():
        if not qs:
            continue
        res = {}
        for s in ["fista", "as", *pypi]:
            xs, its, ts = [], [], []
            for qp in qs:
                if s in ("fista", "as"):
                    x, it, t = solve_numba(qp, s, a.tol)
                else:
                    x, t = solve_pypi(qp, s)
                    it = 0
                xs.append(x)
                its.append(it)
                ts.append(t)
            res[s] = (xs, np.array(its), np.array(ts))
        fbest = []
        for i, qp in enumerate(qs):
            fs = [0.5 * r[0][i] @ qp["A"] @ r[0][i] + qp["b"] @ r[0][i] for r in res.values()]
            fbest.append(np.nanmin(fs))
        ns = np.array([len(qp["b"]) for qp in qs])
        tf = res["fista"][2].mean()
        for s, (xs, its, ts) in res.items():
            r = max(kkt(qp, x) for qp, x in zip(qs, xs))
            gap = max(0.5 * x @ qp["A"] @ x + qp["b"] @ x - f for qp, x, f in zip(qs, xs, fbest))
            itstr = f"{its.mean():7.0f}/{its.max():<6d}" if s in ("fista", "as") else f"{'-':>14}"
            print(f"{name:<12} {len(qs):3d} {ns.mean():5.0f}/{ns.max():<5d} {s:<10} {itstr:>14} "
                  f"{1e3 * ts.mean():8.3f} {tf / ts.mean():8.2f} {r:9.1e} {gap:9.1e}")  # fmt: skip


if __name__ == "__main__":
    main()
