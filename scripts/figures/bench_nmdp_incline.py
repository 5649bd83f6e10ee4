"""NE-NMDP (``nmdp``, first-order PGM), NE-ZONMDP (``nmdp_zo``), PBD-NMDP (``pbd_nmdp``) and PBD-ZONMDP
(``pbd_nmdp_zo``) of paper 002 on notes/pbfd_nmdp.md's B-T3 incline, beside the baseline ``ne_mdp``
when it is registered: a 1 kg box (0.4 x 0.4 x 0.1 m)
with mu = 0.5 and V_x = 4 directions aligned with the slope, on a plane tilted by 20 deg (static:
tan 20 = 0.36 < mu) and 35 deg (sliding at g (sin 35 - 0.5 cos 35) = 1.61 m/s^2).  Per method and
dt: the 20 deg creep over 2 s after 0.5 s of settling, the 35 deg mean acceleration along the slope
(least-squares fit of x(t) over 0.5 .. 1.5 s) and its error, the largest normal lift (skimming,
notes B5 item 6), the deepest penetration, outer iterations per step (mean / max; ne_mdp: QP
iterations), the smallest alpha of Algorithm 2, whether every step converged and the wall time
(after compilation, which the first run pays).

    python scripts/figures/bench_nmdp_incline.py [--dt 5 10 20 50] [--methods nmdp nmdp_zo pbd_nmdp pbd_nmdp_zo ne_mdp] [--init qp zero]

(``--init``: the NMDP start, ``qp`` the default, ``zero`` the paper's w = 0; rows ``nmdp/zero``.)
``--spider``: instead, pbsim's spider standing and trotting under stable PD for 2 s per method and dt.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from pbsim.contact import Plane, Scene, sample_contact_points
from pbsim.integrators import State, available, make
from pbsim_models.parts import free_box as box

G = 9.81
MU = 0.5
HALF = (0.2, 0.2, 0.05)


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


def spider(method, dt, T=2.0, walk=False, **options):
    """pbsim's spider (free torso, 4 x 3 joints) on a plane under stable PD (kp 150, kd 3) for
    ``T`` seconds, standing at its pose or trotting (pbsim_models.creatures.spider_trot): torso
    height range after T/4, final x, deepest penetration, iterations, min alpha, convergence."""
    import pbsim
    import pbsim_models
    from pbsim.contact.points import ContactPoints
    from pbsim_models.creatures import spider_contact_points, spider_standing, spider_trot

    m = pbsim_models.spider()
    p = spider_contact_points(m)
    pts = ContactPoints(p["points_body"], p["points_local"], p["points_radius"])
    integ = make(method, m, Scene(environment=[Plane([0, 0, 1.0], 0.0)], points=pts, mu=0.8), **options)
    q0 = spider_standing(m)
    kp, kd = np.zeros(m.nv), np.zeros(m.nv)
    kp[6:], kd[6:] = 150.0, 3.0
    s = State.make(m, q0)
    z, its, conv, pen, amin = [], [], [], [], []
    for _ in range(int(round(T / dt))):
        qref = spider_trot(m, s.q[0], s.t + dt, lift=0.35, knee=0.6) if walk else q0
        s, d = integ.step(s, pbsim.Control(mode="spd", kp=kp, kd=kd, q_ref=qref), dt)
        if d.nan.any():
            break
        z.append(s.q[0, 2])
        its.append(int(d.iterations[0]))
        conv.append(bool(d.converged[0]))
        pen.append(float(d.penetration[0]))
        amin.append(float(d.extra.get("min_alpha", np.ones(1))[0]))
    z = np.array(z)
    return dict(zr=float(np.ptp(z[len(z) // 4 :])), zmin=float(z.min()), x=float(s.q[0, 0]), pen=max(pen),
                its=np.array(its), amin=min(amin), conv=all(conv), n=len(z))  # fmt: skip


def main_spider(a):
    print("spider on a plane, stable PD kp 150 kd 3, 2 s; z range after 0.5 s, min z, final x, deepest point")
    print(f"{'method':>11} {'motion':>6} {'dt [ms]':>7} {'z range [mm]':>12} {'min z [m]':>9} {'x [m]':>7} "
          f"{'max pen [mm]':>12} {'its mean/max':>13} {'min alpha':>9} {'all conv':>8} {'wall s':>7}")  # fmt: skip
    for mt in [mt for mt in a.methods if mt in available()]:
        for walk in (False, True):
            for dtm in a.dt:
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r = spider(mt, dtm * 1e-3, walk=walk)
                wall = time.perf_counter() - t0
                print(f"{mt:>11} {'trot' if walk else 'stand':>6} {dtm:7.1f} {1e3 * r['zr']:12.2f} {r['zmin']:9.3f} "
                      f"{r['x']:7.3f} {1e3 * r['pen']:12.2f} {r['its'].mean():6.1f}/{r['its'].max():<6d} "
                      f"{r['amin']:9.4f} {str(r['conv']):>8} {wall:7.1f}")  # fmt: skip


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dt", type=float, nargs="+", default=[5.0, 10.0, 20.0, 50.0], help="time steps [ms]")
    ap.add_argument("--methods", nargs="+", default=["nmdp", "nmdp_zo", "pbd_nmdp", "pbd_nmdp_zo", "ne_mdp"])
    ap.add_argument("--init", nargs="+", default=["qp"], help="nmdp starts to run (qp, zero)")
    ap.add_argument("--spider", action="store_true", help="the spider table instead of the incline")
    a = ap.parse_args(argv)
    if a.spider:
        return main_spider(a)
    methods = [mt for mt in a.methods if mt in available()]
    want = G * (np.sin(np.radians(35)) - MU * np.cos(np.radians(35)))
    print(f"box mu = {MU}, V_x = 4 (aligned), default k = M g / (4 (5 mm)^3), zeta = 1e-3 k (5 mm)^3, margin 2 cm")
    print(f"35 deg target acceleration g (sin 35 - 0.5 cos 35) = {want:.4f} m/s^2")
    hdr = (f"{'method':>16} {'dt [ms]':>7} {'20deg creep [mm]':>16} {'35deg acc':>9} {'err %':>7} "
           f"{'lift [mm]':>9} {'max pen [mm]':>12} {'its mean/max':>13} {'min alpha':>9} {'all conv':>8} "
           f"{'wall s':>7}")  # fmt: skip
    print(hdr)
    pgm = ("nmdp", "pbd_nmdp")  # the PGM methods, which take init
    runs = [(mt, dict(init=i)) for mt in methods if mt.startswith(pgm) for i in a.init]
    runs += [(mt, {}) for mt in methods if not mt.startswith(pgm)]
    for mt, opts in runs:
        stick(mt, 0.05, settle=0.05, hold=0.05, **opts)  # compile outside the timing
        label = mt + ("/" + opts["init"] if opts.get("init", "qp") != "qp" else "")
        for dtm in a.dt:
            dt = dtm * 1e-3
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # unconverged steps are counted in the table
                st = stick(mt, dt, **opts)
                sl = slide(mt, dt, **opts)
            wall = time.perf_counter() - t0
            its = np.r_[st["its"], sl["its"]]
            conv = np.r_[st["conv"], sl["conv"]].all()
            pen = max(np.r_[st["pen"], 0].max(), np.r_[sl["pen"], 0].max())
            amin = min(np.r_[st["amin"], 1].min(), np.r_[sl["amin"], 1].min())
            err = 100 * (sl["acc"] - want) / want
            lift = max(st["lift"], sl["lift"])
            print(f"{label:>16} {dtm:7.1f} {1e3 * st['creep']:16.4f} {sl['acc']:9.4f} {err:7.2f} {1e3 * lift:9.3f} "
                  f"{1e3 * pen:12.3f} {its.mean():6.1f}/{its.max():<6d} {amin:9.4f} {str(conv):>8} {wall:7.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
