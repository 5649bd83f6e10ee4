"""Spider (paper 000 Sec. 6.2): free torso, 4 legs (2-DOF hip + knee), penalty contact of Eq. 9
with the ground plane (normal D1, tangential D2) at the four feet, a trotting SPD gait, PBAD2 at
dt = 0.05.  Prints the torso displacement; writes docs/img/demo_spider.png.

The contact kernel is PBAD's own (pbsim/dynamics/pbad_energy.py: point_terms); the feet are
passed as sample points (points_body / points_local, the same arrays as pbsim.contact.Scene)."""
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "models")]
import pbsim  # noqa: E402
import pbsim_models  # noqa: E402
from pbsim.integrators import State, make  # noqa: E402


VERBOSE = "-v" in sys.argv


def main(dt=0.05, T=10.0, D1=2e4, D2=1e8, gtol=1e-6):
    model = pbsim_models.spider()
    pb, pl = [], []
    for k, ang in enumerate(np.deg2rad([45, 135, 225, 315])):
        d = np.array([np.cos(ang), np.sin(ang), 0.0])
        sd = np.array([d[0] * 0.4, d[1] * 0.4, -1.0])
        pb.append(model.body_index(f"shin{k}"))
        pl.append(sd / np.linalg.norm(sd) * 0.3)
    pts = dict(points_body=pb, points_local=pl, contact=True, D1=D1, D2=D2)
    integ = make("pbad", model, points=pts, gtol=gtol)
    q0 = model.q_default.copy()
    s = State.make(model, q0)
    p0 = s.q[0, :3].copy()
    kp = np.zeros(model.nv)
    kd = np.zeros(model.nv)
    kp[6:], kd[6:] = 60.0, 2.0
    conv, its, res, path = [], [], [], [p0]
    f = 1.0
    for step in range(int(round(T / dt))):
        t = s.t + dt
        qref = s.q[0].copy()
        for k in range(4):
            ph = 2 * np.pi * f * t + (0 if k in (0, 2) else np.pi)
            lift, swing = f"hip{k}_0", f"hip{k}_1"
            sgn = 1.0 if k in (0, 3) else -1.0
            qref[model.idx_q(lift).start] = 0.3 * max(0.0, np.sin(ph))
            qref[model.idx_q(swing).start] = sgn * 0.35 * np.cos(ph)
            qref[model.idx_q(f"knee{k}").start] = 0.0
        ctrl = pbsim.Control(mode="spd", kp=kp, kd=kd, q_ref=qref)
        s, d = integ.step(s, ctrl, dt)
        conv.append(bool(d.converged[0]))
        its.append(int(d.iterations[0]))
        res.append(float(d.residual[0]))
        if VERBOSE and step < 60:
            print(step, bool(d.converged[0]), int(d.iterations[0]), "%.1e" % d.residual[0], s.q[0, :3].round(3))
        path.append(s.q[0, :3].copy())
    path = np.array(path)
    disp = path[-1] - path[0]
    print(f"spider PBAD2 dt={dt}: {len(conv)} steps, converged {np.mean(conv) * 100:.0f}%, mean its "
          f"{np.mean(its):.1f}, finite {np.isfinite(s.q).all()}, torso height {path[-1, 2]:.3f} m, "
          f"horizontal displacement after {T:g} s = {disp[:2].round(3)} (|d| = {np.linalg.norm(disp[:2]):.3f} m); "
          f"final gradient inf-norm: median {np.median(res):.2e}, 90th pct {np.percentile(res, 90):.2e}")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(9, 4))
    ax[0].plot(path[:, 0], path[:, 1])
    ax[0].set_aspect("equal")
    ax[0].set_title("torso path (x, y)")
    ax[1].plot(np.arange(len(path)) * dt, path[:, 2])
    ax[1].set_title("torso height")
    out = ROOT / "docs" / "img" / "demo_spider.png"
    fig.savefig(out, dpi=100)
    print("wrote", out)


if __name__ == "__main__":
    main()
