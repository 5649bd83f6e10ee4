"""NE-NMDP (``nmdp``, first-order PGM) and NE-ZONMDP (``nmdp_zo``) of paper 002 on notes/pbfd_nmdp.md's
B-T3 incline, beside the baseline ``ne_mdp`` when it is registered: a 1 kg box (0.4 x 0.4 x 0.1 m)
with mu = 0.5 and V_x = 4 directions aligned with the slope, on a plane tilted by 20 deg (static:
tan 20 = 0.36 < mu) and 35 deg (sliding at g (sin 35 - 0.5 cos 35) = 1.61 m/s^2).  Per method and
dt: the 20 deg creep over 2 s after 0.5 s of settling, the 35 deg mean acceleration along the slope
(least-squares fit of x(t) over 0.5 .. 1.5 s) and its error, the largest normal lift (skimming,
notes B5 item 6), the deepest penetration, outer iterations per step (mean / max; ne_mdp: QP
iterations), the smallest alpha of Algorithm 2, whether every step converged and the wall time
(after compilation, which the first run pays).

    python scripts/bench_nmdp_incline.py [--dt 5 10 20 50] [--methods nmdp nmdp_zo ne_mdp]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pbsim.contact import Plane, Scene, sample_contact_points
from pbsim.integrators import State, available, make
from pbsim.model.builder import LinkSpec, ModelBuilder
from pbsim.model.geometry import Geometry

G = 9.81
MU = 0.5
HALF = (0.2, 0.2, 0.05)


def box(half=HALF, mass=1.0):
    a, b, c = 2 * np.asarray(half, float)
    I = mass / 12 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    mb = ModelBuilder("box")
    mb.add_link(LinkSpec("body", mass, np.zeros(3), I, [Geometry("g", "box", 0, np.eye(3), np.zeros(3), half)]))
    return mb.build(floating_base=True)


def incline(method, deg, mu=MU, **options):
    """(model, integrator, q0, normal, down-slope direction): the box resting on the plane
    z = x tan(deg) (uphill is +x), its bottom face on the plane."""
    m = box()
    a = np.radians(deg)
    n = np.array([-np.sin(a), 0.0, np.cos(a)])
    sc = Scene(environment=[Plane(n, 0.0)], points=sample_contact_points(m), mu=mu)
    q0 = m.neutral()
    q0[:3] = HALF[2] * n
    q0[3:7] = [np.cos(a / 2), 0.0, -np.sin(a / 2), 0.0]  # local z = n
    down = -np.array([np.cos(a), 0.0, np.sin(a)])
    return m, make(method, m, sc, **options), q0, n, down


def run(method, deg, dt, T, **options):
    """Trajectory on the incline: times, positions (steps + 1, 3), per-step iterations, converged
    flags, penetrations and smallest alpha."""
    m, integ, q0, n, down = incline(method, deg, **options)
    s = State.make(m, q0)
    steps = int(round(T / dt))
    P, its, conv, pen, amin = [q0[:3].copy()], [], [], [], []
    for _ in range(steps):
        s, d = integ.step(s, None, dt)
        if d.nan.any():
            break
        P.append(s.q[0, :3].copy())
        its.append(int(d.iterations[0]))
        conv.append(bool(d.converged[0]))
        pen.append(float(d.penetration[0]))
        amin.append(float(d.extra.get("min_alpha", np.ones(1))[0]))
    t = dt * np.arange(len(P))
    return t, np.array(P), np.array(its), np.array(conv), np.array(pen), np.array(amin), n, down, q0


def stick(method, dt, settle=0.5, hold=2.0, **options):
    """20 deg: displacement along the slope during ``hold`` seconds after ``settle`` [m]."""
    t, P, its, conv, pen, amin, n, down, q0 = run(method, 20.0, dt, settle + hold, **options)
    i0 = int(round(settle / dt))
    x = (P - q0[:3]) @ down
    creep = float(np.abs(x[i0:] - x[i0]).max()) if len(P) > i0 else np.nan
    return dict(creep=creep, its=its, conv=conv, pen=pen, amin=amin, lift=float(((P - q0[:3]) @ n).max()))


def slide(method, dt, t0=0.5, t1=1.5, **options):
    """35 deg: mean acceleration along the slope, fit of x(t) = a t^2 / 2 + b t + c over [t0, t1]."""
    t, P, its, conv, pen, amin, n, down, q0 = run(method, 35.0, dt, t1, **options)
    x = (P - q0[:3]) @ down
    sel = (t >= t0 - 1e-12) & (t <= t1 + 1e-12)
    acc = 2 * np.polyfit(t[sel], x[sel], 2)[0] if sel.sum() >= 3 else np.nan
    return dict(acc=float(acc), its=its, conv=conv, pen=pen, amin=amin, lift=float(((P - q0[:3]) @ n).max()))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dt", type=float, nargs="+", default=[5.0, 10.0, 20.0, 50.0], help="time steps [ms]")
    ap.add_argument("--methods", nargs="+", default=["nmdp", "nmdp_zo", "ne_mdp"])
    a = ap.parse_args(argv)
    methods = [mt for mt in a.methods if mt in available()]
    want = G * (np.sin(np.radians(35)) - MU * np.cos(np.radians(35)))
    print(f"box mu = {MU}, V_x = 4 (aligned), default k = M g / (4 (5 mm)^3), zeta = 1e-3 k (5 mm)^3, margin 2 cm")
    print(f"35 deg target acceleration g (sin 35 - 0.5 cos 35) = {want:.4f} m/s^2")
    hdr = (f"{'method':>8} {'dt [ms]':>7} {'20deg creep [mm]':>16} {'35deg acc':>9} {'err %':>7} "
           f"{'lift [mm]':>9} {'max pen [mm]':>12} {'its mean/max':>13} {'min alpha':>9} {'all conv':>8} "
           f"{'wall s':>7}")  # fmt: skip
    print(hdr)
    for mt in methods:
        stick(mt, 0.05, settle=0.05, hold=0.05)  # compile outside the timing
        for dtm in a.dt:
            dt = dtm * 1e-3
            t0 = time.perf_counter()
            st = stick(mt, dt)
            sl = slide(mt, dt)
            wall = time.perf_counter() - t0
            its = np.r_[st["its"], sl["its"]]
            conv = np.r_[st["conv"], sl["conv"]].all()
            pen = max(np.r_[st["pen"], 0].max(), np.r_[sl["pen"], 0].max())
            amin = min(np.r_[st["amin"], 1].min(), np.r_[sl["amin"], 1].min())
            err = 100 * (sl["acc"] - want) / want
            lift = max(st["lift"], sl["lift"])
            print(f"{mt:>8} {dtm:7.1f} {1e3 * st['creep']:16.4f} {sl['acc']:9.4f} {err:7.2f} {1e3 * lift:9.3f} "
                  f"{1e3 * pen:12.3f} {its.mean():6.1f}/{its.max():<6d} {amin:9.4f} {str(conv):>8} {wall:7.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
