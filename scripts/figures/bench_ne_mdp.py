"""NE-MDP (paper 002's baseline, ``ne_mdp``) on notes/pbfd_nmdp.md's B-T3 incline: a 1 kg box
(0.4 x 0.4 x 0.1 m) with mu = 0.5 and V_x = 4 directions aligned with the slope, on a plane tilted by
20 deg (static: tan 20 = 0.36 < mu) and 35 deg (sliding at g (sin 35 - 0.5 cos 35) = 1.61 m/s^2), at
several time steps.  Prints, per dt: the 20 deg creep over 2 s after 0.5 s of settling, the 35 deg
mean acceleration along the slope (least-squares fit of x(t) over 0.5 .. 1.5 s) and its error, the
largest normal separation (skimming, notes B5 item 6), the deepest penetration, the QP iterations
and whether every QP converged.

    python scripts/figures/bench_ne_mdp.py [--dt 5 10 20 50] [--vx 4] [--tol 1e-6]
    python scripts/figures/bench_ne_mdp.py --robosimian [--dt 5 10 50] [--tol 1e-6]

``--robosimian``: instead, the Robosimian (../shared/robots/robosimian) standing on a plane under
stable PD (kp 2000, kd 200) holding its standing pose for 3 s: torso sinking, tilt, QP iterations,
convergence and time per step.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench_nmdp_incline import HALF, MU, G, box  # noqa: F401  (the same box and incline)
from bench_nmdp_incline import run as _run
from pbsim.integrators import State, make


def run(deg, dt, T, **options):
    """:func:`bench_nmdp_incline.run` with ``ne_mdp`` (its per-step QP iterations) less the
    smallest alpha: times, positions, iterations, converged flags, penetrations, normal, down-slope
    direction, q0."""
    t, P, its, conv, pen, _amin, n, down, q0 = _run("ne_mdp", deg, dt, T, **options)
    return t, P, its, conv, pen, n, down, q0


def stick(dt, settle=0.5, hold=2.0, **options):
    """20 deg: displacement along the slope during ``hold`` seconds after ``settle`` [m]."""
    t, P, its, conv, pen, n, down, q0 = run(20.0, dt, settle + hold, **options)
    i0 = int(round(settle / dt))
    if len(P) <= i0:
        return dict(creep=np.nan, its=its, conv=conv, pen=pen, lift=np.nan)
    x = (P - q0[:3]) @ down
    return dict(creep=float(np.abs(x[i0:] - x[i0]).max()), its=its, conv=conv, pen=pen,
                lift=float(((P - q0[:3]) @ n).max()))  # fmt: skip


def slide(dt, t0=0.5, t1=1.5, **options):
    """35 deg: mean acceleration along the slope, fit of x(t) = a t^2 / 2 + b t + c over [t0, t1]."""
    t, P, its, conv, pen, n, down, q0 = run(35.0, dt, t1, **options)
    x = (P - q0[:3]) @ down
    sel = (t >= t0 - 1e-12) & (t <= t1 + 1e-12)
    acc = 2 * np.polyfit(t[sel], x[sel], 2)[0] if sel.sum() >= 3 else np.nan
    return dict(acc=float(acc), its=its, conv=conv, pen=pen, lift=float(((P - q0[:3]) @ n).max()))


def robosimian_stance(dt, T=3.0, kp=2000.0, **options):
    """Robosimian holding its standing pose on a plane: dict of torso drop [m], max tilt [deg],
    QP iterations, all converged, finite, wall time per step [s]."""
    import warnings
    from pathlib import Path

    import pbsim
    from pbsim.contact import contact_query, make_scene
    from pbsim.control import Control
    from pbsim_models.poses import standing_pose

    urdf = Path(__file__).resolve().parents[3] / "shared/robots/robosimian/robosimian_caesar_new_all_active.urdf"
    m = pbsim.load(str(urdf), floating_base=True)
    q0 = standing_pose(m)
    sc = make_scene(m, ground="plane", mu=0.8)
    X = contact_query(m, sc, q0)["X"][0]
    q0[2] -= (X[:, 2] - sc.points.radius).min()  # the lowest point on the plane
    ctl = Control(mode="spd", kp=kp, kd=0.1 * kp, q_ref=q0.copy())
    integ = make("ne_mdp", m, sc, on_fail="ignore", **options)
    s = State.make(m, q0)
    z, tilt, its, conv, ok = [], [], [], [], True
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(int(round(T / dt))):
            s, d = integ.step(s, ctl, dt)
            if d.nan.any():
                ok = False
                break
            z.append(s.q[0, 2])
            tilt.append(np.degrees(2 * np.arcsin(min(1.0, np.linalg.norm(s.q[0, 4:6])))))
            its.append(int(d.iterations[0]))
            conv.append(bool(d.converged[0]))
    wall = (time.perf_counter() - t0) / max(len(z), 1)
    return dict(drop=q0[2] - min(z) if z else np.nan, tilt=max(tilt) if tilt else np.nan, its=np.array(its),
                conv=all(conv), finite=ok, wall=wall, cand=int(d.extra["active_contacts"][0]))  # fmt: skip


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dt", type=float, nargs="+", default=[5.0, 10.0, 20.0, 50.0], help="time steps [ms]")
    ap.add_argument("--vx", type=int, default=4)
    ap.add_argument("--tol", type=float, default=None, help="QP tolerance (default: ne_mdp's)")
    ap.add_argument("--robosimian", action="store_true", help="the Robosimian stance instead of the incline")
    a = ap.parse_args(argv)
    opts = dict(vx=a.vx) | ({} if a.tol is None else dict(tol=a.tol))
    if a.robosimian:
        print("ne_mdp, Robosimian standing under SPD (kp 2000, kd 200) for 3 s on a plane, mu 0.8", opts)
        print(f"{'dt [ms]':>8} {'finite':>7} {'torso drop [mm]':>16} {'max tilt [deg]':>15} {'candidates':>11} "
              f"{'QP its mean/max':>16} {'all conv':>9} {'s/step':>7}")  # fmt: skip
        for dtm in a.dt:
            r = robosimian_stance(dtm * 1e-3, **opts)
            print(f"{dtm:8.1f} {str(r['finite']):>7} {1e3 * r['drop']:16.1f} {r['tilt']:15.3f} {r['cand']:11d} "
                  f"{r['its'].mean():8.0f}/{r['its'].max():<7d} {str(r['conv']):>9} {r['wall']:7.3f}")  # fmt: skip
        return
    want = G * (np.sin(np.radians(35)) - MU * np.cos(np.radians(35)))
    print(f"ne_mdp, box mu = {MU}, V_x = {a.vx} (aligned), default k = M g / (4 (5 mm)^3), zeta, margin, QP tol")
    print(f"35 deg target acceleration g (sin 35 - 0.5 cos 35) = {want:.4f} m/s^2")
    hdr = (f"{'dt [ms]':>8} {'20deg creep [mm]':>17} {'20deg lift [mm]':>16} {'35deg acc':>10} {'err %':>7} "
           f"{'35deg lift [mm]':>16} {'max pen [mm]':>13} {'QP its mean/max':>16} {'all conv':>9} {'wall s':>7}")  # fmt: skip
    print(hdr)
    for dtm in a.dt:
        dt = dtm * 1e-3
        t0 = time.perf_counter()
        st = stick(dt, **opts)
        sl = slide(dt, **opts)
        wall = time.perf_counter() - t0
        its = np.r_[st["its"], sl["its"]]
        conv = np.r_[st["conv"], sl["conv"]].all()
        pen = max(np.r_[st["pen"], 0].max(), np.r_[sl["pen"], 0].max())
        err = 100 * (sl["acc"] - want) / want
        print(f"{dtm:8.1f} {1e3 * st['creep']:17.4f} {1e3 * st['lift']:16.3f} {sl['acc']:10.4f} {err:7.2f} "
              f"{1e3 * sl['lift']:16.3f} {1e3 * pen:13.3f} {its.mean():8.1f}/{its.max():<7d} {str(conv):>9} "
              f"{wall:7.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
