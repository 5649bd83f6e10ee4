"""Spider (paper 000 Sec. 6.2): free torso, 4 legs (2-DOF hip + knee), penalty contact of Eq. 9
with the ground plane (normal D1, tangential D2), a diagonal-trot SPD gait, PBAD2 at dt = 0.05.

Contact sample points: the 4 feet (shin tips, spheres of the shin radius), the 4 knees and the
8 torso corners (``pbsim_models.creatures.spider_contact_points``); the spider starts standing at
rest with its feet on the ground (``spider_standing``).  Prints a table (converged steps, LM
iterations, torso displacement and height) for PBAD2 at dt = 0.05 and, as the peer, the same
gait with PBAD2 at dt = 0.01; writes docs/img/demo_spider.png.

Choice of D1, D2.  Eq. 9's normal force is 2 D1 d and its tangential force 2 D2 d^2 u / dt
(u: sliding speed), so the friction grows with the square of the depth d.  The D2 term also
pushes a sliding point out (normal stiffness 2 D2 |u|^2): at the static depth d = F_n / (2 D1)
the effective friction coefficient peaks, at u* = sqrt(D1 / (3 D2)), at
mu_max ~ 0.325 F_n sqrt(D2 / D1) / (2 dt D1).  With D1 = 2e4 (the previous value) a 20 N foot
load sinks 0.5 mm and mu_max ~ 0.2 (D2 = 1e8): the feet skate.  D1 = 2e3 (k = 4e3 N/m, 5 mm
under a 20 N foot load, 2.5 mm standing on 4 feet) gives mu_max ~ 7 with D2 = 1e8, and a
stuck foot sees a damping 2 D2 d^2 / dt ~ 1e5 N s/m: the stance feet grip.  Since the friction
force carries 1/dt, the same (D1, D2) gives more grip at dt = 0.01 (the peer row is the same
gait, not the same friction).

    python scripts/examples/demo_spider.py          # the table + PNG
    python scripts/examples/demo_spider.py -v       # also per-step diagnostics of the first 60 steps
    python scripts/examples/demo_spider.py --dt 0.1 # one row at another dt"""

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "models")]
import pbsim  # noqa: E402
import pbsim_models  # noqa: E402
from pbsim_models.creatures import spider_contact_points, spider_standing, spider_trot  # noqa: E402
from pbsim.integrators import State, make  # noqa: E402

VERBOSE = "-v" in sys.argv
D1, D2 = 2e3, 1e8  # Eq. 9 penalties; see the module docstring
KP, KD = 150.0, 3.0  # SPD gains of the leg joints
GAIT = dict(freq=1.0, sweep=0.35, lift=0.35, knee=0.6)


def walk(dt=0.05, T=10.0, D1=D1, D2=D2, gtol=1e-6, maxit=150, verbose=False, gait=None, **opts):
    """Simulate the trot; returns dict(path (n+1, 3), conv, its, res, depth, q)."""
    model = pbsim_models.spider()
    pts = spider_contact_points(model)
    pts.update(contact=True, D1=D1, D2=D2)
    integ = make("pbad", model, points=pts, gtol=gtol, max_iterations=maxit, **opts)
    s = State.make(model, spider_standing(model))
    kp = np.zeros(model.nv)
    kd = np.zeros(model.nv)
    kp[6:], kd[6:] = KP, KD
    body, local, rad = pts["points_body"], pts["points_local"], pts["points_radius"]
    torso = body == model.body_index("torso")
    path, conv, its, res, lowest = [s.q[0, :3].copy()], [], [], [], []
    for step in range(int(round(T / dt))):
        ctrl = pbsim.Control(mode="spd", kp=kp, kd=kd, q_ref=spider_trot(model, s.q[0], s.t + dt, **(gait or GAIT)))
        s, d = integ.step(s, ctrl, dt)
        Tw = pbsim.forward_kinematics(model, s.q[0])
        z = np.array([Tw[b][2, :3] @ p + Tw[b][2, 3] - r for b, p, r in zip(body, local, rad)])
        conv.append(bool(d.converged[0]))
        its.append(int(d.iterations[0]))
        res.append(float(d.residual[0]))
        lowest.append(z[torso].min())
        path.append(s.q[0, :3].copy())
        if verbose and step < 60:
            print(
                f"{step:3d} conv {int(d.converged[0])} its {int(d.iterations[0]):3d} |g| {d.residual[0]:.1e} "
                f"torso {s.q[0, :3].round(3)} point z min {z.min():+.4f} feet {z[~torso][::2].round(4)}"
            )
    return dict(
        path=np.array(path),
        conv=np.array(conv),
        its=np.array(its),
        res=np.array(res),
        lowest=np.array(lowest),
        q=s.q[0].copy(),
        dt=dt,
        T=T,
    )


def row(name, r, wall):
    p = r["path"]
    disp = p[-1] - p[0]
    return (
        f"| {name} | {len(r['conv'])} | {r['conv'].mean() * 100:.1f}% | {r['its'].mean():.1f} | {r['its'].max()} | "
        f"{disp[0]:+.3f} | {disp[1]:+.3f} | {disp[0] / 0.3:.2f} | {p[-1, 2]:.3f} | {p[:, 2].min():.3f} | "
        f"{r['lowest'].min():+.3f} | {np.isfinite(r['q']).all()} | {wall:.1f} |"
    )


def main():
    rs = {}
    print(
        "| run | steps | converged | mean its | max its | dx [m] | dy [m] | dx / torso length | final torso z [m] "
        "| min torso z [m] | min torso-point z [m] | finite | wall [s] |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for dt in (0.05, 0.01):
        t0 = time.perf_counter()
        rs[dt] = walk(dt=dt, verbose=VERBOSE and dt == 0.05)
        print(row(f"PBAD2 dt={dt}", rs[dt], time.perf_counter() - t0), flush=True)
    a, b = rs[0.05]["path"], rs[0.01]["path"]
    print(f"forward displacement ratio dt=0.05 / dt=0.01: {(a[-1, 0] - a[0, 0]) / (b[-1, 0] - b[0, 0]):.2f}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(13, 4))
    for dt, r in rs.items():
        p = r["path"]
        tt = np.arange(len(p)) * dt
        ax[0].plot(p[:, 0], p[:, 1], label=f"dt={dt}")
        ax[1].plot(tt, p[:, 0], label=f"dt={dt}")
        ax[2].plot(tt, p[:, 2], label=f"dt={dt}")
    ax[0].set_aspect("equal")
    ax[0].set_title("torso path (x, y) [m]")
    ax[1].set_title("torso x [m] vs t [s]")
    ax[2].set_title("torso height [m] vs t [s]")
    for x in ax:
        x.legend()
    fig.suptitle("spider, PBAD2, Eq. 9 penalty contact, diagonal trot")
    fig.tight_layout()
    out = ROOT / "docs" / "img" / "demo_spider.png"
    fig.savefig(out, dpi=100)
    print("wrote", out)


if __name__ == "__main__":
    if "--dt" in sys.argv:
        dt = float(sys.argv[sys.argv.index("--dt") + 1])
        t0 = time.perf_counter()
        print(row(f"PBAD2 dt={dt}", walk(dt=dt, verbose=VERBOSE), time.perf_counter() - t0))
    else:
        main()
