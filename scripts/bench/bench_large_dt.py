"""Issue 30, "NMDP at large dt": 2 s drops of one trajectory on one thread, every implicit contact
method at 20 and 50 ms against its own 1 ms reference.

Cases (each from rest unless said, no control, the model's own floor through
``pbsim.default_scene``, bodies touching each other as the file says):

- ``humanoid``: gymnasium's humanoid.xml from qpos0 (it falls onto its floor and lies there);
- ``humanoid_rand``: the same with random joint velocities of 0.01 rad/s
  (``0.01 * default_rng(0).standard_normal``, the joints only, the free base at rest);
- ``quad18``: ``models/heldout/quad18.xml``, a small 18-DOF quadruped with spring-loaded joints
  written for this benchmark and not tuned to any method ("held-out"), lifted so that its lowest
  contact point is 1 cm above the plane.

Per run (``pbsim.rollout``, the compiled loop a user gets, ``on_nan="stop"``; a 2-step rollout
compiles or loads the kernels first and is not timed): wall seconds per simulated second, rest
height (the free base's z averaged over the last 0.2 s) and its difference to the same method's
rest height at 1 ms (the reference; ``--ref-cache`` keeps them between runs, keyed by case,
method and the tree's ``git describe``), deepest penetration over the run
(``info["max_penetration"]``), unconverged steps and solver iterations (``info``).

``--profile`` adds, per NMDP run, a second pass step by step through ``Integrator.step`` that
reads the step kernel's work counters (``Diagnostics.extra``: sub-steps of Algorithm 2, outer PGM
iterations, projection failures, rejections, Newton/chord steps, evaluations, LU factorizations,
QPs and their active-set iterations) and the contact set's size (``candidates``): the means per
step are printed in a second table.

    NUMBA_NUM_THREADS=1 python scripts/bench/bench_large_dt.py [--methods nmdp,nmdp_zo] [--cases humanoid]
        [--dts 20,50] [--T 2] [--quick] [--profile] [--poses] [--no-ref] [--opt projection=chord]
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this tree's pbsim (a worktree's, not the editable install's)

import pbsim  # noqa: E402

METHODS = ("pbad", "pbad3", "pbfd", "pbd_friction", "nmdp", "nmdp_zo", "pbd_nmdp", "pbd_nmdp_zo")
NMDP = ("nmdp", "nmdp_zo", "pbd_nmdp", "pbd_nmdp_zo")
CASES = ("humanoid", "humanoid_rand", "quad18")
REST_WINDOW = 0.2  # s
LIFT = 0.01  # m: quad18's lowest contact point above the plane at release
REF_DT = 1e-3


def humanoid_path():
    import gymnasium

    return os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", "humanoid.xml")


def build(case):
    """``(model, scene, q0, v0)`` of a case."""
    if case.startswith("humanoid"):
        m = pbsim.load(humanoid_path())
    elif case == "quad18":
        m = pbsim.load(str(ROOT / "models" / "heldout" / "quad18.xml"))
    else:
        raise SystemExit(f"unknown case {case!r} (one of {', '.join(CASES)})")
    sc = pbsim.default_scene(m)
    q0 = np.array(m.default_configuration(), float)  # qpos0
    v0 = np.zeros(m.nv)
    if case == "humanoid_rand":
        v0[6:] = 0.01 * np.random.default_rng(0).standard_normal(m.nv - 6)
    if case == "quad18":
        r = pbsim.contact_query(m, sc, q0)
        low = float((r["X"][0][:, 2] - sc.points.radius).min())
        q0[2] += LIFT - low
    return m, sc, q0, v0


def method_options(token):
    """``"pbad:friction=coulomb"`` -> ``("pbad", {"friction": "coulomb"})``: a method and its options
    (numbers as floats) for a ``--methods`` entry."""
    name, *kv = token.split(":")
    opts = {}
    for item in kv:
        k, _, v = item.partition("=")
        try:
            opts[k] = float(v)
        except ValueError:
            opts[k] = v
    return name, opts


def git_describe():
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True, text=True, check=True
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run(m, sc, q0, v0, method, dt, T, **opts):
    """One timed rollout: dict of the row's numbers (``method``: a name, or ``name:key=value...``,
    :func:`method_options`)."""
    method, more = method_options(method)
    opts = {**more, **opts}
    steps = int(round(T / dt))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # compile / load the kernels first: the compiled loop's and Integrator.step's (the host path of
        # a step the loop hands back)
        pbsim.rollout(m, method, dt=dt, steps=2, q0=q0, v0=v0, scene=sc, on_nan="stop", **opts)
        from pbsim.integrators import State, make

        quiet = {"on_fail": "ignore"} if method in NMDP else {}  # the PGM's option only
        make(method, m, sc, **quiet, **opts).step(State.make(m, q0, v0), None, dt)
        t0 = time.perf_counter()
        tr = pbsim.rollout(m, method, dt=dt, steps=steps, q0=q0, v0=v0, scene=sc, on_nan="stop", **opts)
        wall = time.perf_counter() - t0
    q = np.asarray(tr.q)
    nw = max(1, int(round(REST_WINDOW / dt)))
    info = tr.info
    return dict(
        wall=wall / (steps * dt),
        rest=float(q[-nw:, 2].mean()),
        pen=float(np.max(info.get("max_penetration", np.nan))),
        unconv=int(np.sum(info.get("unconverged_steps", 0))),
        its=int(np.sum(info.get("iterations", 0))),
        steps=steps,
        diverged=bool(np.any(getattr(tr, "diverged", False))),
        finite=bool(np.isfinite(q).all()),
        joints=[float(v) for v in q[-1, 7:]],
    )


def profile(m, sc, q0, v0, method, dt, T, **opts):
    """Step by step through Integrator.step: the NMDP kernel's work counters per step (means)."""
    from pbsim.integrators import State, make

    integ = make(method, m, sc, on_fail="ignore", **opts)
    s = State.make(m, q0, v0)
    keys = (
        "substeps", "projection_failures", "rejections", "newton_iterations", "evaluations", "lu_factorizations",
        "qp_solves", "qp_iterations",
    )  # fmt: skip
    acc = {k: [] for k in keys}
    its, amin, ncand, walls = [], [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        integ.step(State.make(m, q0, v0), None, dt)  # compile / load
        for _ in range(int(round(T / dt))):
            ncand.append(len(integ.candidates(s.q[0], s.v[0], dt)))
            t0 = time.perf_counter()
            s, d = integ.step(s, None, dt)
            walls.append(time.perf_counter() - t0)
            for k in keys:
                acc[k].append(float(np.asarray(d.extra[k])[0]))
            its.append(float(d.iterations[0]))
            amin.append(float(np.asarray(d.extra["min_alpha"])[0]))
            if not np.isfinite(s.q).all():
                break
    a = {k: np.array(v) for k, v in acc.items()}
    return dict(
        wall=float(np.sum(walls)) / (len(walls) * dt),
        its=float(np.mean(its)),
        its_max=int(np.max(its)),
        sub=float(np.mean(a["substeps"])),
        substepped=float(np.mean(np.array(amin) < 1.0) * 100),
        amin=float(np.min(amin)),
        pfail=float(np.mean(a["projection_failures"])),
        rej=float(np.mean(a["rejections"])),
        newton=float(np.mean(a["newton_iterations"])),
        ev=float(np.mean(a["evaluations"])),
        lu=float(np.mean(a["lu_factorizations"])),
        qp=float(np.mean(a["qp_solves"])),
        qpit=float(np.sum(a["qp_iterations"]) / max(np.sum(a["qp_solves"]), 1.0)),
        nc=float(np.mean(ncand)),
        nc_max=int(np.max(ncand)),
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--dts", default="20,50", help="ms")
    ap.add_argument("--T", type=float, default=2.0, help="simulated seconds per run")
    ap.add_argument("--quick", action="store_true", help="50 ms only, no reference runs (cached ones are shown)")
    ap.add_argument("--no-ref", action="store_true", help="no 1 ms reference runs (cached ones are shown)")
    ap.add_argument("--ref-cache", default=str(Path(os.environ.get("TMPDIR", "/tmp")) / "bench_large_dt_ref.json"))
    ap.add_argument("--profile", action="store_true", help="NMDP runs: the step kernel's counters per step")
    ap.add_argument("--poses", action="store_true", help="print each run's final joint angles [rad] (the rest pose)")
    ap.add_argument(
        "--opt",
        action="append",
        default=[],
        metavar="KEY=V",
        help="an integrator option for every method (repeatable), e.g. projection=chord",
    )
    a = ap.parse_args(argv)
    opts = {}
    for kv in a.opt:
        k, v = kv.split("=", 1)
        for conv in (int, float):
            try:
                v = conv(v)
                break
            except ValueError:
                pass
        opts[k] = v
    methods = [x for x in a.methods.split(",") if x]
    cases = [x for x in a.cases.split(",") if x]
    dts = [float(x) * 1e-3 for x in a.dts.split(",") if x]
    if a.quick:
        dts = [0.05]
    no_ref = a.no_ref or a.quick
    tree = git_describe()
    cache = {}
    if os.path.isfile(a.ref_cache):
        try:
            cache = json.loads(Path(a.ref_cache).read_text())
        except (OSError, ValueError):
            cache = {}
    print(
        f"tree {tree} (pbsim from {Path(pbsim.__file__).parent}), NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS')}, T = {a.T:g} s"
    )
    rows, prof = [], []
    for case in cases:
        m, sc, q0, v0 = build(case)
        for meth in methods:
            key = f"{case}|{meth}|{a.T:g}|{tree}|{sorted(opts.items())}"
            ref = cache.get(key)
            if ref is None and not no_ref:
                ref = run(m, sc, q0, v0, meth, REF_DT, a.T, **opts)
                cache[key] = ref
                Path(a.ref_cache).write_text(json.dumps(cache, indent=1))
            if a.poses and ref is not None and "joints" in ref:
                print(f"  {case} {meth} 1 ms rest pose: {np.round(ref['joints'], 2)}")
            for dt in dts:
                r = run(m, sc, q0, v0, meth, dt, a.T, **opts)
                r.update(case=case, method=meth, dt=dt, ref=ref)
                rows.append(r)
                d = "-" if ref is None else f"{(r['rest'] - ref['rest']) * 1e3:+.1f}"
                print(
                    f"  {case} {meth} {dt * 1e3:g} ms: {r['wall']:.3f} s/s, rest {r['rest']:.4f} m ({d} mm vs 1 ms), "
                    f"pen {r['pen'] * 1e3:.1f} mm, unconverged {r['unconv']}",
                    flush=True,
                )
                if a.poses:
                    print(f"  {case} {meth} {dt * 1e3:g} ms rest pose: {np.round(r['joints'], 2)}")
                if a.profile and meth in NMDP:
                    p = profile(m, sc, q0, v0, meth, dt, a.T, **opts)
                    p.update(case=case, method=meth, dt=dt)
                    prof.append(p)
    print()
    print(
        "| case | method | dt [ms] | wall / sim [s/s] | rest [m] | 1 ms rest [m] | diff [mm] | max pen [mm] | "
        "unconverged steps | iterations / step | 1 ms wall / sim [s/s] |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        ref = r["ref"]
        fin = "" if r["finite"] else " (NaN)"
        print(
            f"| {r['case']} | {r['method']} | {r['dt'] * 1e3:g} | {r['wall']:.3f}{fin} | {r['rest']:.4f} | "
            + ("- | - | " if ref is None else f"{ref['rest']:.4f} | {(r['rest'] - ref['rest']) * 1e3:+.1f} | ")
            + f"{r['pen'] * 1e3:.1f} | {r['unconv']} | {r['its'] / r['steps']:.1f} | "
            + ("-" if ref is None else f"{ref['wall']:.2f}")
            + " |"
        )
    if prof:
        print()
        print(
            "| case | method | dt [ms] | wall / sim [s/s] | outer its mean / max | sub-steps | sub-stepped [%] | "
            "min alpha | proj. failures | rejections | Newton | evaluations | LU | QPs | QP its / QP | "
            "candidates mean / max |"
        )
        print("|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for p in prof:
            print(
                f"| {p['case']} | {p['method']} | {p['dt'] * 1e3:g} | {p['wall']:.3f} | {p['its']:.1f} / {p['its_max']} | "
                f"{p['sub']:.2f} | {p['substepped']:.1f} | {p['amin']:.4g} | {p['pfail']:.2f} | {p['rej']:.2f} | "
                f"{p['newton']:.1f} | {p['ev']:.1f} | {p['lu']:.1f} | {p['qp']:.1f} | {p['qpit']:.1f} | "
                f"{p['nc']:.1f} / {p['nc_max']} |"
            )
    return rows, prof


if __name__ == "__main__":
    main(sys.argv[1:])
