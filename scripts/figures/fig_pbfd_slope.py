"""Fig. 6 of paper 003 (PBFD): wall time to compute 10 s of a 10-link chain sliding off a 30 deg slope.

Scene (ours; the paper gives no constants): a free-floating 10-link chain (capsules 0.1 m long,
radius 1 cm, 0.1 kg each, the papers' 2-DOF universal joints, nv = 24; ``capsule_points`` contact
spheres per link, 3 by default = 30 points) starts at rest lying down the fall line of a 30 deg
slope (a box whose top face is 2.4 m long and descends 1.2 m), whose foot meets a flat floor
(a plane at z = 0).  It slides down and on over the floor for ``T`` = 10 s.

Methods: ``pbfd`` (JTJ-LM on Eq. 13; alpha 2, beta = gamma = 1; C_perp = pbfd's default
M g / (4 delta_ref^2) for the 1x points; C_par = ``friction_for_mu(mu, dt, v_ref=1 m/s)``, the
drag that brakes like Coulomb mu at 1 m/s) and ``ne_dry`` (Newton-Euler, semi-implicit Euler,
Stewart-Trinkle LCP by Lemke, Coulomb mu).  mu = 0.3 unless swept.

Wall time: the 10 s trajectory through ``CpuBatch(batch=1)`` on one numba thread, the step kernel
alone (``advance(n, dt)`` in one call, after a warm-up that compiles / loads it).  The same run
is also stepped through ``Integrator.step`` for its Diagnostics (and that wall time is printed
too: it adds the per-step Python, which penalises small dt): finite, deepest penetration,
energy, pbfd's convergence (A-T3: the fraction of steps ending with |r|_inf <= 1e-6 x M g x 1 m
and not stalled; pbfd's own tolerance is 1e-9 x that), LM iterations, sub-stepped steps.

Stable (the criterion for ne_dry's largest stable dt, applied to both): every state finite, no
contact point deeper than 2 cm at any step, and the energy (kinetic + gravity, the Diagnostics'
energy) never above its initial value by more than 1 % of M g x 1 m (no energy blow-up).

Panels: (b) time vs dt; (c) time vs contact points per link (1x, 2x, 4x: capsule_points 3, 6, 12;
C_perp and C_par divided by 2 and 4 so the total stiffness and drag stay the same, note A5.6;
pbfd at dt 0.1, ne_dry at 1 ms and at its largest stable dt); (d) time vs friction (mu for
ne_dry, C_par for pbfd, from the same mu list).  Prints markdown tables and the issue's speed
bars (pbfd at dt 0.1 vs ne_dry at its largest stable dt: >= 2x; vs ne_dry at 1 ms: >= 4x) and
writes docs/benchmarks/fig_pbfd_slope.png.

    python scripts/figures/fig_pbfd_slope.py [--full] [--T 10]

Default run ~4-5 min on a 2-core machine; ``--full`` adds pbfd at dt 1 ms and the larger
contact-count / friction sweeps.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "models")]

import numba  # noqa: E402

from pbsim.backends.cpu import CpuBatch  # noqa: E402
from pbsim.contact import Scene, sample_contact_points  # noqa: E402
from pbsim.contact.environment import Box, Plane  # noqa: E402
from pbsim.integrators import State, make  # noqa: E402
from pbsim.integrators.pbfd import friction_for_mu  # noqa: E402
from pbsim_models.parts import floating_chain  # noqa: E402

SLOPE = np.radians(30.0)
SLOPE_LEN = 2.4  # m, top face from its upper edge to the floor
START = 0.2  # m below the upper edge: where the chain's first link starts
MU = 0.3
V_REF = 1.0  # m/s: pbfd's C_par brakes like Coulomb mu at this sliding speed
PEN_MAX = 0.02  # m
E_TOL = 0.01  # of M g x 1 m
RTOL_AT3 = 1e-6  # A-T3: |r|_inf <= 1e-6 x M g x 1 m
N_LINKS, LINK_LEN, LINK_MASS, RADIUS = 10, 0.1, 0.1, 0.01


def chain():
    return floating_chain(N_LINKS, LINK_LEN, LINK_MASS, RADIUS)


def slope_geometry(scene="box"):
    """(environment, start position, down-slope unit vector, slope normal); ``scene``: "box" (the
    slope box and the floor) or "plane" (the tilted plane alone: no corner)."""
    a = SLOPE
    Ry = np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])  # +x local -> down-slope
    down, n = Ry[:, 0], Ry[:, 2]
    H = SLOPE_LEN * np.sin(a)
    top = np.array([0.0, 0.0, H])  # upper edge of the top face; the face meets the floor at s = SLOPE_LEN
    half = np.array([SLOPE_LEN / 2 + 0.3, 1.0, 0.5])  # 0.3 m more at each end (the lower end goes under the floor)
    centre = top + (SLOPE_LEN / 2) * down - half[2] * n
    env = [Box(half, Ry, centre), Plane([0.0, 0.0, 1.0], 0.0)] if scene == "box" else [Plane(n, float(n @ top))]
    start = top + START * down + (RADIUS + 1e-4) * n
    return env, start, down, n


def setup(points_per_link=3, mu=MU, scene="box"):
    m = chain()
    env, start, down, n = slope_geometry(scene)
    pts = sample_contact_points(m, capsule_points=points_per_link)
    sc = Scene(environment=env, points=pts, mu=mu)
    q0 = m.neutral()
    q0[:3] = start
    a = SLOPE
    q0[3:7] = [np.cos(a / 2), 0.0, np.sin(a / 2), 0.0]  # body x along the fall line
    return m, sc, q0


def options(method, m, sc, dt, scale=1.0, mu=MU):
    """Integrator options: pbfd's C_perp, C_par divided by ``scale`` (the points multiplier)."""
    if method == "pbfd":
        cn = make("pbfd", m, sc).c_normal / scale
        return dict(c_normal=cn, c_friction=friction_for_mu(mu, dt, c_normal=cn, v_ref=V_REF))
    return dict(mu=mu)


def time_kernel(method, m, sc, q0, opts, dt, n):
    """Wall seconds of n steps through CpuBatch(batch=1) in one call (warm)."""
    cb = CpuBatch(m, method, scene=sc, batch=1, **opts)
    cb.set_state(q0)
    cb.advance(1, dt)  # warm-up
    cb.set_state(q0)
    t0 = time.perf_counter()
    cb.advance(n, dt)
    return time.perf_counter() - t0


def time_once(method, dt, T, scene="box"):
    """(kernel, Integrator.step) wall seconds of the T-second run, the step loop bare (no diagnostics read)."""
    m, sc, q0 = setup(3, MU, scene)
    opts = options(method, m, sc, dt, 1.0, MU)
    n = int(round(T / dt))
    tk = time_kernel(method, m, sc, q0, opts, dt, n)
    I = make(method, m, sc, **opts)
    s = State.make(m, q0)
    I.step(s, None, dt)
    t0 = time.perf_counter()
    for _ in range(n):
        s, _d = I.step(s, None, dt)
    return tk, time.perf_counter() - t0


def run(method, dt, T, points_per_link=3, mu=MU, timing=True, scene="box", reps=1):
    """One T-second run: Diagnostics through Integrator.step, wall time through CpuBatch."""
    m, sc, q0 = setup(points_per_link, mu, scene)
    opts = options(method, m, sc, dt, points_per_link / 3.0, mu)
    n = int(round(T / dt))
    scale = float(m.total_mass) * 9.81
    I = make(method, m, sc, **opts)
    s = State.make(m, q0)
    I.step(s, None, dt)  # warm-up
    e0, emax, pen, ok, finite = None, -np.inf, 0.0, 0, True
    its, sub, active, first, steps_done = 0, 0, 0.0, 0, 0
    t0 = time.perf_counter()
    for _ in range(n):
        s, d = I.step(s, None, dt)
        steps_done += 1
        if d.nan[0] or not np.isfinite(s.q).all():
            finite = False
            break
        if e0 is None:  # energy after the first step (q0 is a touch above the surface)
            e0 = float(d.energy[0])
        emax = max(emax, float(d.energy[0]))
        pen = max(pen, float(d.penetration[0]))
        its += int(d.iterations[0])
        if method == "pbfd":
            ok += int(bool(d.converged[0]) and float(d.residual[0]) <= RTOL_AT3 * scale)
            first += int(not bool(d.extra["stalled"][0]))
            sub += int(d.extra["substeps"][0] > 1)
        else:
            ok += int(d.converged[0])
            active += float(d.extra["active_contacts"][0])
        if pen > 1.0 or np.abs(s.v).max() > 1e4:  # diverged: stop early
            break
    wall_step = time.perf_counter() - t0
    stable = finite and steps_done == n and pen <= PEN_MAX and emax <= e0 + E_TOL * scale
    wall = min(time_kernel(method, m, sc, q0, opts, dt, n) for _ in range(reps)) if timing and stable else np.nan
    x = s.q[0, :3]
    return dict(
        scene=scene,
        method=method,
        dt=dt,
        pts=points_per_link,
        npts=len(sc.contact_points().body),
        mu=mu,
        c_par=opts.get("c_friction", np.nan),
        steps=n,
        finite=finite,
        stable=stable,
        pen=pen,
        de=emax - (e0 if e0 is not None else np.nan),
        conv=ok / max(steps_done, 1),
        first=first / max(steps_done, 1),
        its=its / max(steps_done, 1),
        sub=sub,
        active=active / max(steps_done, 1),
        wall=wall,
        wall_step=wall_step,
        x=float(x[0]),
        z=float(x[2]),
    )


def row(r):
    return (
        f"| {r['method']} | {r['dt']:g} | {r['npts']} | {r['mu']:g} | "
        f"{'-' if np.isnan(r['c_par']) else format(r['c_par'], '.3g')} | {r['steps']} | "
        f"{'yes' if r['stable'] else 'NO'} | {r['pen'] * 1e3:.2f} | {r['de']:+.3f} | "
        f"{r['wall']:.3f} | {r['wall_step']:.2f} | {r['its']:.2f} | {r['conv'] * 100:.2f} | {r['first'] * 100:.1f} | {r['sub']} | "
        f"{r['x']:.2f}, {r['z']:.2f} |"
    )


HEAD = (
    "| method | dt [s] | points | mu | C_par | steps | stable | max pen [mm] | max E - E0 [J] | "
    "wall kernel [s] | wall Integrator.step [s] | its/step (ne_dry: pivots) | conv [%] | no stall [%] | substepped | "
    "final x, z [m] |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def table(title, rows):
    print(f"\n### {title}\n\n{HEAD}")
    for r in rows:
        print(row(r))
    sys.stdout.flush()


def largest_stable(rows):
    """The largest dt up to which every tested dt of ne_dry is stable (None: not even the smallest)."""
    largest = None
    for r in sorted(rows, key=lambda r: r["dt"]):
        if not r["stable"]:
            break
        largest = r["dt"]
    return largest


def dt_sweep(scene, T, full, reps=2):
    ne_dts = [0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1]
    pb_dts = ([0.001] if full else []) + [0.0025, 0.005, 0.01, 0.02, 0.05, 0.1]
    if scene == "plane":
        pb_dts = [0.01, 0.05, 0.1]
    rb = [run("ne_dry", dt, T, scene=scene) for dt in ne_dts] + [run("pbfd", dt, T, scene=scene) for dt in pb_dts]
    what = "slope box + floor" if scene == "box" else "tilted plane alone (no corner)"
    table(f"(b) wall time vs dt: {what}", rb)
    ne = [r for r in rb if r["method"] == "ne_dry"]
    largest = largest_stable(ne)
    print(
        f"\nne_dry ({scene}) stable at dt = {[r['dt'] for r in ne if r['stable']]}, unstable at "
        f"{[r['dt'] for r in ne if not r['stable']]}; largest stable (all smaller stable too): {largest}"
    )
    peers = ([(f"ne_dry at its largest stable dt ({largest:g})", largest, 2.0, 3.0)] if largest else []) + [
        ("ne_dry at dt 0.0025 (the paper's NE limit)", 0.0025, 2.0, 3.0),
        ("ne_dry at dt 0.001", 0.001, 4.0, 5.0),
    ]
    peers = [p for i, p in enumerate(peers) if p[1] not in [q[1] for q in peers[:i]]]
    # re-timed: pbfd and each peer alternated `reps` times, the minimum of each (the machine is shared)
    tk = {("pbfd", 0.1): [], **{("ne_dry", p[1]): [] for p in peers}}
    ts = {k: [] for k in tk}
    for _ in range(reps):
        for key in tk:
            a, b = time_once(key[0], key[1], T, scene)
            tk[key].append(a)
            ts[key].append(b)
    pk, ps = min(tk["pbfd", 0.1]), min(ts["pbfd", 0.1])
    print(f"\n#### speed bars ({scene}): pbfd at dt 0.1 vs ne_dry; minimum of {reps} alternated timings each\n")
    print(
        "| peer | peer kernel [s] | pbfd kernel [s] | speed-up (kernel) | peer Integrator.step [s] | "
        "pbfd Integrator.step [s] | speed-up (step) | issue bar | paper |\n|---|---|---|---|---|---|---|---|---|"
    )
    bars = []
    for name, dtp, bar, paper in peers:
        wk, ws = min(tk["ne_dry", dtp]), min(ts["ne_dry", dtp])
        sk, ss = wk / pk, ws / ps
        bars.append((name, sk, ss, bar))
        verdict = (
            "met"
            if min(sk, ss) >= bar
            else ("NOT met" if max(sk, ss) < bar else ("met by kernel only" if sk >= bar else "met by step only"))
        )
        print(
            f"| {name} | {wk:.3f} | {pk:.3f} | {sk:.1f}x | {ws:.2f} | {ps:.2f} | {ss:.1f}x | >= {bar:g}x: {verdict} "
            f"| {paper:g}x |"
        )
    sys.stdout.flush()
    return rb, largest, bars


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="pbfd at 1 ms, more contact counts and mu values")
    ap.add_argument("--T", type=float, default=10.0)
    args = ap.parse_args()
    numba.set_num_threads(1)
    T = args.T
    t_start = time.perf_counter()
    m, sc, _ = setup()
    print(
        f"10-link chain, M = {m.total_mass:g} kg, nv = {m.nv}, 30 deg slope (top face {SLOPE_LEN} m) then floor, "
        f"T = {T:g} s, mu = {MU}, pbfd C_perp = {make('pbfd', m, sc).c_normal:.4g} N/m^2, C_par = "
        f"friction_for_mu(mu, dt, v_ref={V_REF} m/s); one numba thread"
    )

    # (b) time vs dt, on the slope box + floor, then on the tilted plane alone
    rb, largest, bars = dt_sweep("box", T, args.full)
    rp, largest_p, bars_p = dt_sweep("plane", T, False)

    # (c) time vs contact points per link
    mult = [3, 6, 12] + ([24] if args.full else [])
    rc = []
    for p in mult:
        rc.append(run("pbfd", 0.1, T, p, reps=2))
        rc.append(run("pbfd", 0.01, T, p, reps=2))
        if largest is not None and largest != 0.001:
            rc.append(run("ne_dry", largest, T, p, reps=2))
        if args.full:
            rc.append(run("ne_dry", 0.0025, T, p))
    table("(c) wall time vs contact points (C_perp, C_par / multiplier); kernel: minimum of 2", rc)
    print("\ngrowth of the kernel wall time from 1x points:")
    for key in sorted({(r["method"], r["dt"]) for r in rc}):
        w = {r["pts"]: r["wall"] for r in rc if (r["method"], r["dt"]) == key}
        print(f"  {key[0]} dt {key[1]:g}: " + ", ".join(f"{p // 3}x {w[p] / w[3]:.2f}" for p in mult if p in w))

    # (d) time vs friction
    mus = [0.1, 0.2, 0.3, 0.5, 0.8] + ([1.2, 2.0] if args.full else [])
    rd = []
    for mu in mus:
        rd.append(run("pbfd", 0.1, T, mu=mu))
        if largest is not None:
            rd.append(run("ne_dry", largest, T, mu=mu))
        if args.full and largest != 0.0025:
            rd.append(run("ne_dry", 0.0025, T, mu=mu))
    table("(d) wall time vs friction (ne_dry: mu; pbfd: C_par = friction_for_mu(mu, dt, v_ref 1 m/s))", rd)
    for key in sorted({(r["method"], r["dt"]) for r in rd}):
        w = np.array([r["wall"] for r in rd if (r["method"], r["dt"]) == key])
        print(
            f"  {key[0]} dt {key[1]:g}: wall min {np.nanmin(w):.3f} max {np.nanmax(w):.3f} s, "
            f"max/min {np.nanmax(w) / np.nanmin(w):.2f}"
        )

    uniq = {(r["scene"], r["dt"], r["pts"], r["mu"]): r for r in rb + rp + rc + rd if r["method"] == "pbfd"}
    allp = list(uniq.values())  # each distinct pbfd run once
    steps = sum(r["steps"] for r in allp)
    conv = sum(r["conv"] * r["steps"] for r in allp) / steps
    first = sum(r["first"] * r["steps"] for r in allp) / steps
    print(
        f"\nA-T3 (pbfd, {len(allp)} distinct runs): {conv * 100:.2f} % of {steps} steps end with |r|_inf <= "
        f"{RTOL_AT3:g} M g x 1 m (after sub-steps; {first * 100:.2f} % without a stall); "
        f"sub-stepped steps: {sum(r['sub'] for r in allp)}; by scene and dt:"
    )
    for scn in ("box", "plane"):
        for dt in sorted({r["dt"] for r in allp if r["scene"] == scn}):
            rr = [r for r in allp if r["scene"] == scn and r["dt"] == dt]
            n_ = sum(r["steps"] for r in rr)
            c_ = sum(r["conv"] * r["steps"] for r in rr) / n_
            f_ = sum(r["first"] * r["steps"] for r in rr) / n_
            w_ = min(r["conv"] for r in rr)
            print(
                f"  {scn} dt {dt:g}: {len(rr)} runs, {n_} steps: converged {c_ * 100:.2f} % (worst run "
                f"{w_ * 100:.1f} %), without a stall {f_ * 100:.2f} % -> A-T3 (>= 99 %) {'met' if c_ >= 0.99 else 'NOT met'}"
            )
    plot(rb, rp, rc, rd, largest)
    print(f"total script time {time.perf_counter() - t_start:.0f} s")


def plot(rb, rp, rc, rd, largest):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(14, 4))
    col = {"pbfd": "tab:red", "ne_dry": "tab:blue"}
    wmin = np.nanmin([r["wall"] for r in rb + rp])
    for rows, ls, what in ((rb, "o-", "box+floor"), (rp, "s:", "plane")):
        for meth in ("ne_dry", "pbfd"):
            rr = [r for r in rows if r["method"] == meth]
            dts = np.array([r["dt"] for r in rr])
            w = np.array([r["wall"] for r in rr])
            st = np.array([r["stable"] for r in rr])
            ax[0].loglog(dts[st], w[st], ls, color=col[meth], label=f"{meth}, {what}")
            if (~st).any():
                ax[0].plot(
                    dts[~st], np.full((~st).sum(), wmin), "x", color=col[meth], ms=9, label=f"{meth}, {what}: unstable"
                )
    ax[0].set_xlabel("dt [s]")
    ax[0].set_ylabel("wall time for 10 s [s]")
    ax[0].set_title("(b) time vs dt")
    ax[0].legend(fontsize=8)
    for key in sorted({(r["method"], r["dt"]) for r in rc}):
        rr = [r for r in rc if (r["method"], r["dt"]) == key]
        ax[1].semilogy(
            [r["npts"] for r in rr],
            [r["wall"] for r in rr],
            "o-",
            color=col[key[0]],
            alpha=1.0 if key[1] in (0.1, largest) else 0.5,
            label=f"{key[0]} dt {key[1]:g}",
        )
    ax[1].set_xlabel("contact points (C_perp, C_par rescaled)")
    ax[1].set_title("(c) time vs contact points")
    ax[1].legend(fontsize=8)
    for key in sorted({(r["method"], r["dt"]) for r in rd}):
        rr = [r for r in rd if (r["method"], r["dt"]) == key]
        ax[2].semilogy(
            [r["mu"] for r in rr],
            [r["wall"] for r in rr],
            "o-",
            color=col[key[0]],
            alpha=1.0 if key[1] in (0.1, largest) else 0.5,
            label=f"{key[0]} dt {key[1]:g}",
        )
    ax[2].set_xlabel("mu (pbfd: C_par = friction_for_mu(mu, dt, 1 m/s))")
    ax[2].set_title("(d) time vs friction")
    ax[2].legend(fontsize=8)
    for a in ax:
        a.grid(True, which="both", alpha=0.3)
    fig.suptitle("10-link chain sliding off a 30 deg slope, 10 s (paper 003 Fig. 6), one thread, kernel time")
    fig.tight_layout()
    out = ROOT / "docs" / "benchmarks" / "fig_pbfd_slope.png"
    fig.savefig(out, dpi=100)
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
