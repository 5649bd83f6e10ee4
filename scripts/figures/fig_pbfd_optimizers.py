"""Fig. 4 of paper 003 (PBFD): iterations and time per step of five optimizers.

On the PBD objective (Eq. 6: PBAD's energy with friction as the energy of Eq. 11; integrator
``pbd_friction``): LM on E with its exact Hessian (``optimizer="lm"``, PBAD's solver), JTJ-LM on
``|grad E|^2 / 2`` (``"jtj"``, PBFD's QR-solved Gauss-Newton LM on the residual ``grad E``) and
LBFGS on E (``"lbfgs"``).  On PBFD's gradient-level objective GE (Eq. 13; integrator ``pbfd``):
JTJ-LM (``optimizer="lm"``) and LBFGS on GE (``"lbfgs"``).  LM on Eq. 13 (third derivatives of E)
is left out, as in the paper.  A sixth row: LM on E with a Gauss-Newton Hessian
(``pbd_friction``'s ``hessian="gn"``: inertia J^T M J / dt^2 and the points' J^T K J without the
poses' second derivatives, the implementation note's reading of "JTJ-LM on Eq. 6").  All five stop at ``|r|_inf <= 1e-9 M g x 1 m`` (``r = grad E``
for PBD, Eq. 13's residual for PBFD: the integrators' default ``rtol``).

Scenes (generated models, dt = 0.05 s; the paper gives neither dt nor the joints):
(a) a fixed-base 10-link chain (2-DOF ball joints, 20 DOF, 0.1 m / 0.1 kg capsules) released
    horizontally under gravity, no contact (Eq. 6 = Eq. 13 here);
(b) the same chain on a free base (24 DOF), released bent (in the x-z plane) and pitched 0.5 m
    above a plane, falling on it (contact: the capsules' sample points; C_perp, C_par: the integrators' defaults for
    mu = 0.5).
Time per step: wall time of the integrator's step (one trajectory, one thread; includes ~0.1 ms of
Python per step), per step the fastest of ``--repeat`` runs of each optimizer (the runs alternate;
the iterates are the same in every run).  Prints a markdown table
(mean / max iterations, mean time per step and per iteration, ratios to PBD's LM in the same run)
and writes docs/img/fig_pbfd_optimizers.png (iterations and time per step against the step index).

Usage: python scripts/figures/fig_pbfd_optimizers.py [--long] [--steps N] [--repeat R] [--dt DT]
  default: 40 steps (2 s) per scene, one run of each (about 2 CPU-minutes with the numba cache warm,
  LBFGS on Eq. 13 in scene (b) most of it; 2-5 min wall on the shared 2-core machine); --long: 200
  steps (10 s), 3 alternating runs of each (7 min wall; the numbers in docs/benchmarks/pbfd.md).
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "models"), str(ROOT / "scripts" / "figures")]
import pbsim  # noqa: E402
import pbsim_models  # noqa: E402
from pbsim.integrators import State, make  # noqa: E402
from pbsim.model import ModelBuilder  # noqa: E402
from pbsim_models.parts import add_universal, capsule_link  # noqa: E402

# (label, integrator, optimizer, objective, hessian of pbd_friction's LM)
CONFIGS = (
    ("LM", "pbd_friction", "lm", "Eq. 6 (PBD)", "exact"),
    ("JTJ-LM", "pbd_friction", "jtj", "Eq. 6 (PBD)", "exact"),
    ("LBFGS", "pbd_friction", "lbfgs", "Eq. 6 (PBD)", "exact"),
    ("JTJ-LM", "pbfd", "lm", "Eq. 13 (PBFD)", None),
    ("LBFGS", "pbfd", "lbfgs", "Eq. 13 (PBFD)", None),
    ("LM, GN Hessian", "pbd_friction", "lm", "Eq. 6 (PBD)", "gn"),
)
COLORS = ("tab:blue", "tab:green", "tab:orange", "tab:red", "tab:purple", "tab:gray")


def floating_chain(n=10, link_length=0.1, link_mass=0.1, radius=0.01):
    """:func:`pbsim_models.chain` on a free base: link0 is the free root, 2-DOF ball joints."""
    b = ModelBuilder(f"floating_chain{n}", source="")
    parent = None
    for i in range(n):
        name = f"link{i}"
        b.add_link(capsule_link(name, link_mass, link_length, radius))
        if parent is not None:
            add_universal(b, f"joint{i}", parent, name, np.array([link_length, 0, 0]))
        parent = name
    return b.build(floating_base=True)


def scenes():
    """(name, model, scene, q0) of the two benchmarks."""
    fixed = pbsim_models.chain(10, joint="ball2")
    free = floating_chain(10)
    q0 = free.neutral()
    q0[2] = 0.5  # 0.5 m above the plane: the far end lands after ~0.2 s
    dq = np.zeros(free.nv)
    dq[4] = 0.2  # pitch the root (body-frame y): the far end lands first
    # bend the in-plane hinges only (each ball2 joint: about y, then z): the chain, gravity and the
    # plane are symmetric about the x-z plane, so it falls and lies in that plane (a spin about a
    # straight chain's axis moves no contact point: a near-null direction of J_r, see the docs)
    dq[6::2] = 0.15 * np.sin(np.arange(1, (free.nv - 6) // 2 + 1))
    q0 = pbsim.integrate(free, q0, dq)
    return (
        ("(a) fixed 10-link chain, no contact", fixed, None, fixed.neutral()),
        ("(b) floating 10-link chain falling on a plane", free, pbsim.make_scene(free, ground="plane", mu=0.5), q0),
    )


def run(I, q0, dt, steps):
    """Steps from rest at q0: iterations, wall time, converged flags per step."""
    s = State.make(I.model, q0)
    its, wall, conv = np.zeros(steps, int), np.zeros(steps), np.zeros(steps, bool)
    for k in range(steps):
        t0 = time.perf_counter()
        s, d = I.step(s, None, dt)
        wall[k] = time.perf_counter() - t0
        its[k], conv[k] = int(d.iterations[0]), bool(d.converged[0]) and not bool(d.extra["stalled"][0])
    return dict(its=its, wall=wall, conv=conv, q=s.q[0].copy())


def main(steps=40, repeat=1, dt=0.05):
    results = {}
    for name, model, scene, q0 in scenes():
        integ = {}
        for cfg in CONFIGS:
            _, method, opt, _, hess = cfg
            integ[cfg] = make(method, model, scene, optimizer=opt, **({"hessian": hess} if hess else {}))
            run(integ[cfg], q0, dt, 2)  # compile / warm up
        for _ in range(repeat):  # the configurations alternate, so a slow spell of the machine is shared
            for cfg in CONFIGS:
                r = run(integ[cfg], q0, dt, steps)
                first = results.setdefault((name, cfg), r)
                # the runs are deterministic (same iterates): per step, the fastest run's time
                first["wall"] = np.minimum(first["wall"], r["wall"])
        for cfg in CONFIGS:
            its = results[name, cfg]["its"].mean()
            print(f"  {name[:3]} {cfg[1]:<12} {cfg[2]:<5} {cfg[4] or '':<5} {its:.1f} its/step", flush=True)
    table(results, steps, dt, repeat)
    claims(results)
    plot(results, dt)
    return results


def table(results, steps, dt, repeat):
    print(
        f"\ndt = {dt} s, {steps} steps per scene; time per step: per step the fastest of {repeat} runs; ratios to PBD's LM"
    )
    names = list(dict.fromkeys(n for n, _ in results))
    for name in names:
        ref = results[name, CONFIGS[0]]
        print(f"\n{name}\n")
        print(
            "| objective | optimizer | its/step mean | max | ms/step | ms/iteration | its vs LM | time vs LM | "
            "converged | max dq vs LM |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        for cfg in CONFIGS:
            label, method, opt, obj, _ = cfg
            r = results[name, cfg]
            it, ms = r["its"].mean(), 1e3 * r["wall"].mean()
            print(
                f"| {obj} | {label} | {it:.2f} | {r['its'].max()} | {ms:.3f} | {ms / max(it, 1e-9):.3f} | "
                f"{it / ref['its'].mean():.2f} | {r['wall'].mean() / ref['wall'].mean():.2f} | "
                f"{r['conv'].mean():.2f} | {np.abs(r['q'] - ref['q']).max():.1e} |"
            )


def claims(results):
    """The paper's qualitative claims (A3 E1) and the note's A-T9 bars, per scene."""
    lm, jtj, lb, fj, fl, _ = CONFIGS
    print("\nclaims (paper 003 Sec. V-B / note A-T9):")
    for name in dict.fromkeys(n for n, _ in results):
        r = {c: results[name, c] for c in CONFIGS}
        it = {c: r[c]["its"].mean() for c in CONFIGS}
        tt = {c: r[c]["wall"].sum() for c in CONFIGS}
        per = {c: tt[c] / max(r[c]["its"].sum(), 1) for c in CONFIGS}
        print(f"  {name}")
        print(
            f"    LBFGS iterations / (JTJ-)LM's: Eq. 6 {it[lb] / it[lm]:.1f}x, Eq. 13 {it[fl] / it[fj]:.1f}x "
            f"(A-T9: >= 5x)"
        )
        print(
            f"    LBFGS time / (JTJ-)LM's: Eq. 6 {tt[lb] / tt[lm]:.2f}x, Eq. 13 {tt[fl] / tt[fj]:.2f}x "
            f"(paper: LBFGS slower overall; A-T9: JTJ-LM below LBFGS)"
        )
        print(f"    Eq. 6: JTJ-LM time / LM's {tt[jtj] / tt[lm]:.2f}x (paper: JTJ-LM faster, each iteration cheaper)")
        print(
            f"    time per iteration, JTJ-LM Eq. 13 / Eq. 6: {per[fj] / per[jtj]:.2f}x "
            f"(paper: 'marginally' costlier; A-T9: <= 1.5x)"
        )


def plot(results, dt):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(n for n, _ in results))
    fig, axes = plt.subplots(2, len(names), figsize=(6.0 * len(names), 7.0), squeeze=False)
    for j, name in enumerate(names):
        for cfg, col in zip(CONFIGS, COLORS):
            r = results[name, cfg]
            lab = f"{cfg[0]}, {cfg[3]}"
            ls = "-" if cfg[1] == "pbd_friction" else "--"
            k = np.arange(1, len(r["its"]) + 1)
            axes[0][j].semilogy(k, r["its"], ls, color=col, label=lab)
            axes[1][j].semilogy(k, 1e3 * r["wall"], ls, color=col, label=lab)
        axes[0][j].set_title(name)
        axes[0][j].set_ylabel("iterations per step")
        axes[1][j].set_ylabel("time per step [ms]")
        axes[1][j].set_xlabel(f"step (dt = {dt} s)")
        for ax in axes[:, j]:
            ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Optimizers on PBD's Eq. 6 and PBFD's Eq. 13 (paper 003 Fig. 4)")
    fig.tight_layout()
    out = ROOT / "docs" / "img" / "fig_pbfd_optimizers.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    print(f"\nwrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--long", action="store_true", help="200 steps per scene, 3 repeats")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--dt", type=float, default=0.05)
    a = ap.parse_args()
    steps = a.steps or (200 if a.long else 40)
    repeat = a.repeat or (3 if a.long else 1)
    main(steps, repeat, a.dt)
