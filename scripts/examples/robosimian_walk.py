"""Robosimian standing, then walking with an SPD crawl gait on the DRC rough terrain: pbfd at dt
0.05 next to pbad at the same dt and euler at the largest dt it survives (a few tried).

Robot: ``../shared/robots/robosimian/robosimian_caesar_new.urdf`` (floating base, nv = 34, 100 kg).
Terrain: ``../shared/robots/robosimian/terrains/drc_rough_terrain.stl`` (z up), the part x in
[1.5, 9] m turned into pbsim's signed-distance grid (``MeshTerrain``, 2 cm); the robot starts over
the point 20 % along the terrain (x = 3.66 m, the viewer's default: ramps 15 cm high, 1.2 m apart
along the walking direction), its lowest contact point 1 cm above the highest terrain under its
footprint, in the standing pose of ``pbsim_models.poses``.  Contact points: the four feet
(``limbN_link7``, 16 points each) and the torso (32): 96 points; after each run the recorded
states are also checked against all 672 points of every link (``--all-links-pen``: the deepest
point of links without simulated contact, e.g. shins on a ramp).

Control: stable PD (``Control(mode="spd")`` through a :class:`pbsim.Reference`) on every limb
joint, kp = 30 M = 3000 N m/rad, kd = 1 M = 100 N m s/rad (the viewer's gains), free root
passive.  Targets: the standing pose for ``--stand`` (1 s), then blended over 1 s into a crawl
(a statically stable 4-beat walk: swing order left hind, left front, right hind, right front;
period 2 s, duty factor 0.75, stride 0.20 m, foot lift 0.10 m, lateral body sway 0.08 m away
from the swinging side).  The gait is designed in the torso frame as foot positions around the
standing feet and turned into joint targets by damped least-squares IK on each limb
(regularised toward the standing pose), tabulated over one period and interpolated.

Reported per method: finite, deepest penetration of the contact points (max over all steps;
must be <= 2 cm for pbfd) and of all links, torso height above the terrain start level (min /
mean / max after landing), heading (torso yaw) drift, distance walked (torso x from the start
of walking to the end, and the straight-line distance), wall time (after a warm-up step; the
Python loop included: one ``Integrator.step`` and one Reference evaluation per step), solver
statistics.  Writes docs/benchmarks/robosimian_walk.png (torso height, heading, x over time).

    python scripts/examples/robosimian_walk.py [--T 10] [--methods pbfd,pbad,euler] [--euler-dts 0.005,0.002,0.001]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "models")]

import pbsim  # noqa: E402
from pbsim.contact import Scene, sample_contact_points  # noqa: E402
from pbsim.contact.environment import MeshTerrain  # noqa: E402
from pbsim.control.targets import Reference  # noqa: E402
from pbsim.integrators import State, make  # noqa: E402
from pbsim_models.poses import standing_pose  # noqa: E402

SHARED = Path(os.environ.get("PBSIM_SHARED", ROOT.parent / "shared"))
URDF = SHARED / "robots" / "robosimian" / "robosimian_caesar_new.urdf"
TERRAIN = SHARED / "robots" / "robosimian" / "terrains" / "drc_rough_terrain.stl"
CROP_X = (1.5, 9.0)  # m: the part of the terrain turned into the SDF grid
MU = 0.8
KP_PER_KG, KD_PER_KG = 30.0, 1.0
PERIOD, DUTY, STRIDE, LIFT, SWAY = 2.0, 0.75, 0.20, 0.10, 0.08
PHASE = {3: 0.0, 4: 0.25, 2: 0.5, 1: 0.75}  # crawl order: LH (limb 3), LF (4), RH (2), RF (1)
PEN_MAX = 0.02


# ---------------------------------------------------------------- robot, terrain, placement
def load_robot():
    return pbsim.load(str(URDF), floating_base=True)


def terrain_mesh():
    import trimesh

    m = trimesh.load(str(TERRAIN), force="mesh")
    x = np.asarray(m.vertices)[np.asarray(m.faces), 0]  # (F, 3): the faces overlapping CROP_X in x
    keep = (x.max(axis=1) >= CROP_X[0]) & (x.min(axis=1) <= CROP_X[1])
    return trimesh.Trimesh(m.vertices, np.asarray(m.faces)[keep], process=True)


def terrain_top(tris, x0, x1, y0, y1) -> float:
    """Highest z of the triangles whose x-y bounds overlap the rectangle (as the viewer's)."""
    lo, hi = tris.min(axis=1), tris.max(axis=1)
    sel = (hi[:, 0] >= x0) & (lo[:, 0] <= x1) & (hi[:, 1] >= y0) & (lo[:, 1] <= y1)
    return float(tris[sel][:, :, 2].max()) if sel.any() else 0.0


def make_world(model, spacing=0.02):
    """(scene with feet + torso points, scene with every link's points, start q, terrain top under
    the start footprint)."""
    mesh = terrain_mesh()
    terr = MeshTerrain.from_mesh(mesh, spacing=spacing, source=str(TERRAIN))
    feet = [f"limb{k}_link7" for k in range(1, 5)]
    pts = sample_contact_points(model, bodies=["torso"] + feet)
    scene = Scene(environment=[terr], points=pts, mu=MU)
    every = Scene(environment=[terr], points=sample_contact_points(model), mu=MU)
    tris = np.asarray(mesh.vertices)[np.asarray(mesh.faces)]
    q0 = standing_pose(model)
    lo, hi = tris.reshape(-1, 3).min(0), tris.reshape(-1, 3).max(0)
    q0[0] = 3.66  # 20 % along the whole terrain (x 0 .. 18.3 m), the viewer's default
    q0[1] = 0.5 * (lo[1] + hi[1])
    q0[2] = 0.0
    X = pbsim.contact_query(model, scene, q0)["X"][0]
    X[:, 2] -= scene.contact_points().radius
    top = terrain_top(tris, X[:, 0].min(), X[:, 0].max(), X[:, 1].min(), X[:, 1].max())
    q0[2] = top + 0.01 - float(X[:, 2].min())
    return scene, every, q0, top


# ---------------------------------------------------------------- the gait
def limb_dofs(model, limb):
    """(q indices, v indices) of limb ``limb``'s hinge joints."""
    names = [n for n in model.joint_names if n.startswith(f"limb{limb}_")]
    iq = np.array([int(model.iq[model.joint_index(n)]) for n in names])
    iv = np.array([int(model.iv[model.joint_index(n)]) for n in names])
    return iq, iv


def foot_offsets(tau):
    """(4, 3) foot displacement from the standing foot position, torso frame, at gait phase tau."""
    out = np.zeros((4, 3))
    dy = SWAY * np.cos(2 * np.pi * tau)  # feet toward +y = body toward -y while left legs swing
    for limb in range(1, 5):
        ph = (tau - PHASE[limb]) % 1.0
        if ph < DUTY:  # stance: the foot moves back under the torso
            x = STRIDE * (0.5 - ph / DUTY)
            z = 0.0
        else:  # swing: forward and up
            s = (ph - DUTY) / (1.0 - DUTY)
            x = STRIDE * (-0.5 + (0.5 - 0.5 * np.cos(np.pi * s)))
            z = LIFT * np.sin(np.pi * s)
        out[limb - 1] = [x, dy, z]
    return out


def solve_ik(model, q_stand, targets, q_init, iters=30, lam=1e-2, reg=1e-2):
    """Joint targets putting every foot body's origin at ``targets`` (4, 3) (torso at the origin):
    damped least squares per limb, regularised toward the standing pose."""
    q = q_init.copy()
    for limb in range(1, 5):
        body = model.body_names.index(f"limb{limb}_link7")
        iq, iv = limb_dofs(model, limb)
        for _ in range(iters):
            T = pbsim.forward_kinematics(model, q)
            e = targets[limb - 1] - T[body, :3, 3]
            J = pbsim.point_jacobian(model, q, body)[3:, iv]
            r = q[iq] - q_stand[iq]
            A = J.T @ J + (lam + reg) * np.eye(len(iv))
            dq = np.linalg.solve(A, J.T @ e - reg * r)
            q[iq] += dq
            if np.abs(dq).max() < 1e-9:
                break
    return q


def gait_table(model, q_stand, n=80):
    """Joint targets over one period (n samples) and the IK's worst foot error [m]."""
    qb = q_stand.copy()
    qb[:3] = 0.0
    qb[3:7] = [1.0, 0.0, 0.0, 0.0]
    T = pbsim.forward_kinematics(model, qb)
    feet0 = np.array([T[model.body_names.index(f"limb{k}_link7"), :3, 3] for k in range(1, 5)])
    table, q, err = [], qb.copy(), 0.0
    for tau in np.arange(n) / n:
        tgt = feet0 + foot_offsets(tau)
        q = solve_ik(model, qb, tgt, q)
        Tq = pbsim.forward_kinematics(model, q)
        err = max(
            err,
            max(np.linalg.norm(Tq[model.body_names.index(f"limb{k}_link7"), :3, 3] - tgt[k - 1]) for k in range(1, 5)),
        )
        table.append(q.copy())
    return np.array(table), err


def make_reference(model, q0, t_stand, table):
    """SPD targets: the standing pose until t_stand, blended into the crawl over one second."""
    M = float(model.total_mass)
    joints = np.concatenate([limb_dofs(model, k)[0] for k in range(1, 5)])
    n = len(table)

    def q_ref(t):
        out = q0.copy()
        if t <= t_stand:
            return out
        tau = ((t - t_stand) / PERIOD) % 1.0
        k = tau * n
        i0 = int(k) % n
        f = k - int(k)
        g = (1 - f) * table[i0] + f * table[(i0 + 1) % n]
        w = min(1.0, t - t_stand)  # blend in over 1 s
        w = 0.5 - 0.5 * np.cos(np.pi * w)
        out[joints] = (1 - w) * q0[joints] + w * g[joints]
        return out

    return Reference(model, q=q_ref, kp=KP_PER_KG * M, kd=KD_PER_KG * M, mode="spd", root="passive")


# ---------------------------------------------------------------- one run
def yaw(q):
    w, x, y, z = q[3:7]
    return float(np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))


def simulate(method, model, scene, q0, ref, dt, T, record_every=0.05, stop_on_fail=True, **opts):
    I = make(method, model, scene, **opts)
    s = State.make(model, q0)
    I.step(State.make(model, q0), ref(0.0, s), dt)  # warm-up (compile / load)
    n = int(round(T / dt))
    rec = max(1, int(round(record_every / dt)))
    t, P, Y, pen, its, conv, Q = [], [], [], [], [], [], []
    ok = True
    t0 = time.perf_counter()
    for k in range(n):
        s, d = I.step(s, ref(s.t, s), dt)
        if d.nan[0] or not np.isfinite(s.q).all():
            ok = False
            break
        t.append(s.t)
        P.append(s.q[0, :3].copy())
        Y.append(yaw(s.q[0]))
        pen.append(float(d.penetration[0]))
        its.append(float(d.iterations[0]) if d.iterations is not None else 0.0)
        conv.append(bool(d.converged[0]) if d.converged is not None else True)
        if k % rec == rec - 1:
            Q.append(s.q[0].copy())
        if stop_on_fail and (pen[-1] > 0.5 or s.q[0, 2] < q0[2] - 1.0):
            ok = False
            break
    wall = time.perf_counter() - t0
    return dict(
        method=method,
        dt=dt,
        finite=ok,
        t=np.array(t),
        p=np.array(P).reshape(-1, 3),
        yaw=np.unwrap(np.array(Y)),
        pen=np.array(pen),
        its=np.array(its),
        conv=np.array(conv),
        Q=np.array(Q).reshape(-1, model.nq),
        wall=wall,
        steps=len(t),
        n=n,
    )


def summary(r, model, every, q0, t_stand, ground):
    """One row of numbers for run r."""
    out = dict(method=r["method"], dt=r["dt"], finite=r["finite"] and r["steps"] == r["n"], wall=r["wall"])
    out["sim"] = r["t"][-1] if len(r["t"]) else 0.0
    out["pen"] = float(r["pen"].max()) if len(r["pen"]) else np.nan
    if len(r["Q"]):
        d = pbsim.contact_query(model, every, r["Q"])["d"]
        sim_bodies = [model.body_index("torso")] + [model.body_index(f"limb{k}_link7") for k in range(1, 5)]
        other = ~np.isin(every.contact_points().body, sim_bodies)
        out["pen_all"] = float(d[:, other].max())
    else:
        out["pen_all"] = np.nan
    after = r["t"] > 0.5  # after landing
    h = r["p"][after, 2] - ground if after.any() else np.array([np.nan])
    out["h_min"], out["h_mean"], out["h_max"] = float(np.min(h)), float(np.mean(h)), float(np.max(h))
    walk = r["t"] >= t_stand
    if walk.any():
        p0 = r["p"][np.argmax(walk)]
        p1 = r["p"][-1]
        out["dx"] = float(p1[0] - p0[0])
        out["dist"] = float(np.linalg.norm(p1[:2] - p0[:2]))
        out["dyaw"] = float(np.degrees(r["yaw"][-1] - r["yaw"][np.argmax(walk)]))
    else:
        out["dx"] = out["dist"] = out["dyaw"] = np.nan
    out["yaw_max"] = float(np.degrees(np.abs(r["yaw"] - r["yaw"][0]).max())) if len(r["yaw"]) else np.nan
    out["its"] = float(r["its"].mean()) if len(r["its"]) else np.nan
    out["conv"] = float(r["conv"].mean()) if len(r["conv"]) else np.nan
    return out


HEAD = (
    "| method | dt [s] | finite (full T) | simulated [s] | max pen feet+torso [mm] | other links' depth (no contact; states every 0.05 s) [mm] | "
    "torso height min / mean / max [m] | walked x [m] | walked (straight line) [m] | heading change [deg] | "
    "max |yaw| [deg] | wall [s] | wall / sim s | its/step | conv [%] |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def row(o):
    return (
        f"| {o['method']} | {o['dt']:g} | {'yes' if o['finite'] else 'NO'} | {o['sim']:.2f} | {o['pen'] * 1e3:.1f} | "
        f"{o['pen_all'] * 1e3:.1f} | {o['h_min']:.3f} / {o['h_mean']:.3f} / {o['h_max']:.3f} | {o['dx']:.3f} | "
        f"{o['dist']:.3f} | {o['dyaw']:+.1f} | {o['yaw_max']:.1f} | {o['wall']:.1f} | "
        f"{o['wall'] / max(o['sim'], 1e-9):.2f} | {o['its']:.2f} | {o['conv'] * 100:.1f} |"
    )


def plot(runs, t_stand, ground, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(14, 3.8))
    for r in runs:
        lab = f"{r['method']} dt {r['dt']:g}"
        ax[0].plot(r["t"], r["p"][:, 2] - ground, label=lab)
        ax[1].plot(r["t"], np.degrees(r["yaw"] - r["yaw"][0]), label=lab)
        ax[2].plot(r["t"], r["p"][:, 0] - r["p"][0, 0], label=lab)
    for a, yl in zip(ax, ("torso height above start terrain [m]", "heading change [deg]", "torso x - x0 [m]")):
        a.axvline(t_stand, color="k", lw=0.7, ls=":")
        a.set_xlabel("t [s]")
        a.set_ylabel(yl)
        a.grid(True, alpha=0.3)
    ax[0].legend(fontsize=8)
    fig.suptitle("Robosimian on drc_rough_terrain: stand, then SPD crawl (dotted: start of walking)")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print(f"wrote {out.relative_to(ROOT)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--T", type=float, default=10.0, help="simulated seconds")
    ap.add_argument("--stand", type=float, default=1.0, help="seconds of standing before the gait")
    ap.add_argument("--dt", type=float, default=0.05, help="pbfd's and pbad's dt")
    ap.add_argument("--methods", default="pbfd,pbad,euler")
    ap.add_argument("--euler-dts", default="0.05,0.02,0.01,0.005,0.002,0.001", help="tried largest first, each for T")
    args = ap.parse_args()
    if not URDF.is_file():
        sys.exit(f"Robosimian not found at {URDF} (set PBSIM_SHARED)")
    model = load_robot()
    t0 = time.perf_counter()
    scene, every, q0, ground = make_world(model)
    table, ik_err = gait_table(model, q0)
    ref = make_reference(model, q0, args.stand, table)
    print(
        f"Robosimian {URDF.name}: nv = {model.nv}, M = {model.total_mass:.1f} kg; terrain grid "
        f"{np.prod(scene.environment[0].phi.shape) / 1e6:.1f} M nodes; {len(scene.contact_points().body)} contact "
        f"points (feet + torso), {len(every.contact_points().body)} on all links; start x = {q0[0]:.2f}, "
        f"z = {q0[2]:.3f}; gait IK worst foot error {ik_err * 1e3:.2f} mm; setup {time.perf_counter() - t0:.1f} s"
    )
    runs, rows = [], []
    methods = args.methods.split(",")
    for meth in methods:
        if meth == "euler":
            # the largest dt euler survives: finite for all of T, contact points <= 2 cm deep, torso
            # above 0.5 m over the terrain (it stands); dts tried largest first, the first survivor kept
            for dt in [float(x) for x in args.euler_dts.split(",")]:
                r = simulate("euler", model, scene, q0, ref, dt, args.T)
                o = summary(r, model, every, q0, args.stand, ground)
                survived = o["finite"] and o["pen"] <= PEN_MAX and o["h_min"] > 0.5
                print(
                    f"euler dt {dt:g}: ran {o['sim']:.2f} s of {args.T:g} (stops at a NaN, a point 0.5 m deep or the torso 1 m "
                    f"down), max pen {o['pen'] * 1e3:.1f} mm, "
                    f"torso min height {o['h_min']:.3f} m -> {'survives' if survived else 'fails'}"
                )
                sys.stdout.flush()
                if survived:
                    break
            else:
                continue
        else:
            r = simulate(meth, model, scene, q0, ref, args.dt, args.T)
            o = summary(r, model, every, q0, args.stand, ground)
        runs.append(r)
        rows.append(o)
        print(row(o))
        sys.stdout.flush()
    print(f"\n{HEAD}")
    for o in rows:
        print(row(o))
    plot(runs, args.stand, ground, ROOT / "docs" / "benchmarks" / "robosimian_walk.png")


if __name__ == "__main__":
    main()
