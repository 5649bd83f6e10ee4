"""Fig. 5 of paper 003 (PBFD): sliding distance of a box against the friction parameter.

A 1 kg box (0.2 m cube, 20 contact points: corners and edge midpoints) starts at rest depth on a
plane with 1 m/s along x; the distance it has slid at T = 5 s is plotted against C_par for
``pbfd`` at three time steps, next to the PBD baselines (friction as an energy, whose gradient
holds the spurious normal force of paper 003 Eq. 12): ``pbd_friction`` (paper 003 Eq. 11, the
note's B1: ``C_par |u|^2 d^2`` with pbfd's alpha = 2 normal force ``C_perp d^3 / 3``, the same
C_perp, LM on the energy) and ``pbad`` with its Eq. 9 contact (paper 000: ``D1 d^2 + D2 d^2 |u /
dt|^2``, alpha = beta = gamma = 1; its C_par is ``D2 / dt^2``, reached through the scene's mu
since pbad's ``D2 = mu k / (2 * 0.1 m/s)``).  The C_par values are log-spaced, 1e-4 to 1e4 times
a nominal value per dt (the one with ``c v0 T = 1`` in the A-T4 recursion,
``c = 2 (C_par / C_perp) g dt^2``), the same for the three methods.  The dry-friction curve of
the paper's figure: ``ne_dry`` (Newton-Euler, Stewart-Trinkle LCP by Lemke) against mu (top axis),
starting at the plane (its contact is rigid), with the Coulomb reference ``v0^2 / (2 mu g)``.

Prints a table (distance, the A-T4 reference recursion for pbfd, deepest penetration, solver
convergence on |r| and iterations) and writes docs/img/fig_pbfd_sliding.png.
Usage: python scripts/figures/fig_pbfd_sliding.py [dts,comma,separated] [T]   (defaults 0.01,0.05,0.1  5)
"""

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "models"), str(ROOT / "scripts" / "figures")]
import pbsim  # noqa: E402
from pbsim.contact.environment import Plane  # noqa: E402
from pbsim.integrators import State, make  # noqa: E402
from pbsim.model import LinkSpec, ModelBuilder  # noqa: E402
from pbsim.model.geometry import Geometry  # noqa: E402

HALF, MASS, V0, G = 0.1, 1.0, 1.0, 9.81
FACTORS = np.logspace(-4, 4, 9)
MUS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0)  # ne_dry's Coulomb coefficients


def box_model():
    b = ModelBuilder("box")
    h = HALF
    link = LinkSpec("box", MASS, np.zeros(3), MASS / 3 * np.diag([2 * h * h] * 3))
    link.geoms.append(Geometry("box_c", "box", -1, np.eye(3), np.zeros(3), np.array([h, h, h]), "collision"))
    b.add_link(link)
    return b.build(floating_base=True)


def reference(c, dt, T, v0=V0):
    """The note's A-T4 recursion (PBFD's friction as mu_eff = 2 (C_par / C_perp) dt^2 v^2)."""
    v, x = v0, 0.0
    for _ in range(int(round(T / dt))):
        v = (np.sqrt(1 + 4 * c * dt * v) - 1) / (2 * c * dt) if c > 0 else v
        x += dt * v
    return x


def slide(I, model, dt, T, z0):
    q0 = model.neutral()
    q0[2] = z0
    s = State.make(model, q0, v=np.array([V0, 0, 0, 0, 0, 0]))
    pen, its, res, conv = 0.0, [], [], []
    t0 = time.perf_counter()
    for _ in range(int(round(T / dt))):
        s, d = I.step(s, None, dt)
        pen = max(pen, float(d.penetration[0]))
        its.append(int(d.iterations[0]))
        res.append(float(d.residual[0]))
        conv.append(bool(d.converged[0]) and not bool(d.extra.get("stalled", [False])[0]))
        if d.nan[0]:
            break
    return dict(
        x=float(s.q[0, 0] - q0[0]),
        z=float(s.q[0, 2]),
        pen=pen,
        its=np.array(its),
        res=np.array(res),
        conv=np.array(conv),
        wall=time.perf_counter() - t0,
        finite=bool(np.isfinite(s.q).all()),
    )


def main(dts=(0.01, 0.05, 0.1), T=5.0):
    model = box_model()
    rows, curves = [], {}
    for dt in dts:
        probe = make("pbfd", model, pbsim.Scene(environment=[Plane([0, 0, 1.0], 0.0)]))
        cn = probe.c_normal
        nominal = (1.0 / (V0 * T)) * cn / (2 * G * dt * dt)
        for f in FACTORS:
            cf = float(f * nominal)
            # pbfd: C_par directly; rest depth delta_ref / sqrt(2) on the 8 bottom points
            scene = pbsim.Scene(environment=[Plane([0, 0, 1.0], 0.0)], points=_points(model), mu=0.5)
            I = make("pbfd", model, scene, c_friction=cf)
            r = slide(I, model, dt, T, HALF - np.sqrt(MASS * G / (8 * I.c_normal)))
            ref = reference(2 * cf / I.c_normal * G * dt * dt, dt, T)
            ok = r["conv"] & (r["res"] <= 1e-6 * I.energy_scale)
            rows.append(("pbfd", dt, cf, r["x"], ref, r["pen"], ok.mean(), r["its"].mean(), r["its"].max(), r["wall"]))
            curves.setdefault(("pbfd", dt), []).append((cf, r["x"], ref))
            # pbd_friction (Eq. 11): the same C_perp and C_par, LM on the energy
            P = make("pbd_friction", model, scene, c_friction=cf)
            rp = slide(P, model, dt, T, HALF - np.sqrt(MASS * G / (8 * P.c_normal)))
            okp = rp["conv"] & (rp["res"] <= 1e-6 * P.energy_scale)
            rows.append(
                (
                    "pbd_friction",
                    dt,
                    cf,
                    rp["x"],
                    np.nan,
                    rp["pen"],
                    okp.mean(),
                    rp["its"].mean(),
                    rp["its"].max(),
                    rp["wall"],
                )
            )
            curves.setdefault(("pbd_friction", dt), []).append((cf, rp["x"], np.nan))
            # pbad (Eq. 9): D2 = mu k / (2 v_ref) = C_par dt^2  ->  mu = 2 v_ref C_par dt^2 / k
            k = MASS * G / (4 * 0.005)
            mu = 2 * 0.1 * cf * dt * dt / k
            scene_b = pbsim.Scene(environment=[Plane([0, 0, 1.0], 0.0)], points=_points(model), mu=mu)
            B = make("pbad", model, scene_b)
            rb = slide(B, model, dt, T, HALF - MASS * G / (8 * k))
            rows.append(
                (
                    "pbad",
                    dt,
                    cf,
                    rb["x"],
                    np.nan,
                    rb["pen"],
                    rb["conv"].mean(),
                    rb["its"].mean(),
                    rb["its"].max(),
                    rb["wall"],
                )
            )
            curves.setdefault(("pbad", dt), []).append((cf, rb["x"], np.nan))
        for mu in MUS:  # dry friction (Newton-Euler + LCP) against mu
            scene_d = pbsim.Scene(environment=[Plane([0, 0, 1.0], 0.0)], points=_points(model), mu=mu)
            rd = slide(make("ne_dry", model, scene_d), model, dt, T, HALF)
            curves.setdefault(("ne_dry", dt), []).append((mu, rd["x"], V0 * V0 / (2 * mu * G), rd["finite"]))
    print(f"box 1 kg, 0.2 m, v0 = {V0} m/s, distance at T = {T} s; pbfd C_perp = {cn:.4g} N/m^2 (default)")
    print(
        f"{'method':<12} {'dt':>5} {'C_par':>10} {'distance':>9} {'A-T4 ref':>9} {'max pen':>8} {'conv':>5} "
        f"{'its':>5} {'max':>4} {'wall s':>7}"
    )
    for m, dt, cf, x, ref, pen, conv, it, itmax, wall in rows:
        print(
            f"{m:<12} {dt:>5} {cf:>10.3g} {x:>9.4f} {ref:>9.4f} {pen * 1e3:>6.2f}mm {conv:>5.2f} {it:>5.2f} "
            f"{itmax:>4d} {wall:>7.2f}"
        )
    for m in ("pbfd", "pbd_friction", "pbad"):
        for dt in dts:
            x = np.array([c[1] for c in curves[m, dt]])
            inc = np.diff(x) / np.maximum(x[:-1], 1e-12)
            print(
                f"{m} dt {dt}: non-increasing (1e-4 m) {bool(np.all(np.diff(x) <= 1e-4))}, "
                f"largest relative increase {inc.max():+.2%}"
            )
    print(f"\nne_dry (dry friction) distance at {T} s against mu; Coulomb reference v0^2 / (2 mu g)")
    print(f"{'dt':>6} " + " ".join(f"{'mu ' + str(mu):>14}" for mu in MUS))
    for dt in dts:
        print(
            f"{dt:>6} "
            + " ".join(f"{x:>7.4f}/{ref:<6.4f}" + ("" if ok else "!") for _, x, ref, ok in curves["ne_dry", dt])
        )
    plot(curves, dts, T)
    return rows


def _points(model):
    from pbsim.contact.points import sample_contact_points

    return sample_contact_points(model)


def plot(curves, dts, T):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(dts), figsize=(4.4 * len(dts), 4.5), squeeze=False)
    tops = []
    for ax, dt in zip(axes[0], dts):
        a = np.array(curves["pbfd", dt])
        b = np.array(curves["pbad", dt])
        p = np.array(curves["pbd_friction", dt])
        ax.semilogx(a[:, 0], a[:, 1], "o-", color="tab:red", label="pbfd (Eq. 13)")
        ax.semilogx(a[:, 0], a[:, 2], "k--", lw=1, label="A-T4 recursion")
        ax.semilogx(p[:, 0], p[:, 1], "^-", color="tab:blue", label="pbd_friction (Eq. 11, PBD)")
        ax.semilogx(b[:, 0], b[:, 1], "s:", color="tab:cyan", label="pbad, Eq. 9 (PBD, alpha = 1)")
        d = np.array([c[:3] for c in curves["ne_dry", dt]])
        top = ax.twiny()
        tops.append(top)
        top.semilogx(d[:, 0], d[:, 1], "D-", color="tab:green", label="ne_dry (dry friction) vs mu")
        top.semilogx(d[:, 0], d[:, 2], ":", color="tab:green", lw=1)
        top.set_xlabel("mu (ne_dry)", color="tab:green")
        top.tick_params(axis="x", colors="tab:green")
        ax.text(0.97, 0.55, f"dt = {dt} s", transform=ax.transAxes, ha="right", fontsize=11)
        ax.set_xlabel("C_par (pbad: D2 / dt^2)")
        ax.set_ylabel(f"sliding distance at {T:g} s [m]")
        ax.grid(True, which="both", alpha=0.3)
    mid = len(dts) // 2
    h1, l1 = axes[0][mid].get_legend_handles_labels()
    h2, l2 = tops[mid].get_legend_handles_labels()
    fig.legend(h1 + h2, l1 + l2, fontsize=9, loc="lower center", ncol=5)
    fig.suptitle("Box sliding from 1 m/s (paper 003 Fig. 5)")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    out = ROOT / "docs" / "img" / "fig_pbfd_sliding.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    dts = tuple(float(x) for x in sys.argv[1].split(",")) if len(sys.argv) > 1 else (0.01, 0.05, 0.1)
    T = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    main(dts, T)
