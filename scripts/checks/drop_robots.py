"""Drop the DeepMimic humanoid and Robosimian on the plane and on drc_rough_terrain.stl.

Semi-implicit Euler (``euler``) at dt = 1 ms for 10 s, penalty contact with the scene's default
stiffness/damping (``pbsim.contact.scene``: k = M g / (n_ref delta_ref), n_ref = 4,
delta_ref = 5 mm).  Prints a table (no NaN, max penetration vs the documented bound, final base
height, wall time, real-time ratio) and writes ``docs/img/contact_drops.png`` (base height and
max penetration over time).

Documented penetration bound (docs/benchmarks/contact.md): the robot's centre of mass starts
``H`` above the ground top; if ONE point (stiffness k = M g / (n_ref delta_ref)) absorbed all the
potential energy released, with no damping, ``M g (H + d) = k d^2 / 2`` gives
``d_impact <= n_ref delta_ref (1 + sqrt(1 + 2 H / (n_ref delta_ref)))`` (a robot that topples
falls from its full CoM height), and at rest ``d_rest <= n_ref delta_ref = 20 mm`` (penalty
forces only push, so no point carries more than the weight).  The terrain's depth is the grid's (the same number the force uses).

    PYTHONPATH=. python scripts/checks/drop_robots.py [--seconds 10] [--dt 1e-3] [--spacing 0.02]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import pbsim  # noqa: E402
from pbsim.contact import contact_query, make_scene  # noqa: E402
from pbsim.contact.scene import DELTA_REF, N_REF  # noqa: E402
from pbsim.rollout import rollout  # noqa: E402

LIFT = 0.05  # m: gap between the lowest contact point and the ground at release


def terrain_top(path, R, xy_pts):
    """Highest terrain height (along up) under the given world points (trimesh ray casts)."""
    import trimesh

    mesh = trimesh.load(str(path), force="mesh")
    mesh.apply_transform(np.block([[R, np.zeros((3, 1))], [np.zeros((1, 3)), np.ones((1, 1))]]))
    up = R[:, 2]
    o = xy_pts - np.outer(xy_pts @ up, up) + 100.0 * up
    locs, ri, _ = mesh.ray.intersects_location(o, np.tile(-up, (len(o), 1)), multiple_hits=False)
    return float((locs @ up).max()) if len(locs) else 0.0


def place(m, sc, up, xy=None, terrain=None, R=None):
    """Neutral pose with the lowest contact point LIFT above the ground under the robot."""
    q0 = m.neutral()
    if xy is not None:
        q0[:3] += xy
    X = contact_query(m, sc, q0)["X"][0]
    rad = sc.points.radius
    low = ((X @ up) - rad).min()
    if terrain is None:
        top = 0.0
    else:  # sample a footprint grid around the robot (ray casts are exact, the grid is clamped)
        lo, hi = X.min(0), X.max(0)
        g = np.stack(np.meshgrid(*[np.linspace(lo[i] - 0.05, hi[i] + 0.05, 25) for i in range(3)]), -1).reshape(-1, 3)
        top = terrain_top(terrain, R, g)
    q0[:3] += up * (top + LIFT - low)
    return q0


def com_height(m, q, up):
    from pbsim.dynamics.api import forward_kinematics

    T = forward_kinematics(m, q)
    c = np.einsum("bij,bj->bi", T[:, :3, :3], m.com) + T[:, :3, 3]
    return float((m.mass @ c) / m.mass.sum() @ up)


def depths(m, sc, Q, chunk=256):
    """Max penetration per recorded state (batched queries in chunks)."""
    out = np.zeros(len(Q))
    for s in range(0, len(Q), chunk):
        d = contact_query(m, sc, Q[s : s + chunk])["d"]
        out[s : s + chunk] = d.max(axis=1) if d.shape[1] else 0.0
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--spacing", type=float, default=0.02, help="terrain SDF grid spacing (m)")
    ap.add_argument("--png", default=str(ROOT / "docs/img/contact_drops.png"))
    a = ap.parse_args(argv)
    from conftest import pybullet_file, robosimian_urdf, terrain_file

    from pbsim.contact import up_rotation

    steps = int(round(a.seconds / a.dt))
    drc = terrain_file("drc_rough_terrain.stl")
    hum = pbsim.load(pybullet_file("humanoid/humanoid.urdf"), floating_base=True)
    hum.gravity[:] = [0.0, -9.81, 0.0]  # DeepMimic humanoid is y-up
    rob = pbsim.load(str(robosimian_urdf()), floating_base=True)
    d_static = N_REF * DELTA_REF
    cases = []
    for name, m, xy in (("humanoid", hum, np.array([3.0, 0.0, -1.2])), ("robosimian", rob, np.array([3.0, 1.2, 0.0]))):
        R = up_rotation(m)
        up = R[:, 2]
        for ground in ("plane", "drc"):
            if ground == "plane":
                sc = make_scene(m, ground="plane", mu=0.8)
                q0 = place(m, sc, up)
            else:
                t0 = time.perf_counter()
                sc = make_scene(m, ground=None, terrain=drc, spacing=a.spacing, mu=0.8)
                tb = time.perf_counter() - t0
                print(
                    f"[{name}] drc grid {sc.environment[0].phi.shape} spacing {a.spacing} built in {tb:.1f} s",
                    flush=True,
                )
                q0 = place(m, sc, up, xy=xy, terrain=drc, R=R)
            X0 = contact_query(m, sc, q0)["X"][0]
            ground_top = (X0 @ up - sc.points.radius).min() - LIFT
            H = com_height(m, q0, up) - ground_top
            d_impact = d_static * (1 + np.sqrt(1 + 2 * H / d_static))
            rollout(m, "euler", a.dt, 2, q0=q0, scene=sc)  # compile outside the timing
            t0 = time.perf_counter()
            tr = rollout(m, "euler", a.dt, steps, q0=q0, scene=sc, record_every=1, on_nan="stop")
            wall = time.perf_counter() - t0
            Q = tr.q.reshape(len(tr.t), -1)
            ok = bool(np.isfinite(tr.q).all() and np.isfinite(tr.v).all() and not tr.diverged.any())
            dmax = depths(m, sc, Q) if ok else np.full(len(Q), np.nan)
            h = Q[:, :3] @ up
            last = int(round(1.0 / a.dt))
            cases.append(
                dict(
                    robot=name,
                    ground=ground,
                    npts=len(sc.points),
                    ok=ok,
                    dmax=dmax.max(),
                    drest=dmax[-last:].max(),
                    h0=h[0],
                    h=h[-1],
                    vb=np.abs(tr.v.reshape(len(tr.t), -1)[-last:, :6]).max(),
                    vj=np.abs(tr.v[-1]).max(),
                    H=H,
                    bound=d_impact,
                    wall=wall,
                    t=tr.t,
                    hh=h,
                    D=dmax,
                )
            )
            c = cases[-1]
            print(f"[{name} / {ground}] done: wall {wall:.1f} s, max pen {1e3 * c['dmax']:.1f} mm", flush=True)
    print(
        f"\n`PYTHONPATH=. python scripts/checks/drop_robots.py` (euler, dt = {a.dt:g} s, {a.seconds:g} s, "
        f"release {1e3 * LIFT:.0f} mm above the ground, mu 0.8, default stiffness; terrain grid {a.spacing} m)\n"
    )
    print(
        f"bounds: rest (last 1 s) d <= n_ref delta_ref = {1e3 * d_static:.1f} mm; impact d <= "
        f"n_ref delta_ref (1 + sqrt(1 + 2 H / (n_ref delta_ref))), H = initial CoM height\n"
    )
    print(
        "| robot | ground | points | no NaN | CoM H (m) | max pen. (mm) | impact bound (mm) | max pen. last 1 s (mm) | "
        "rest bound (mm) | within bounds | base height start -> end (m) | max base speed last 1 s | "
        "max abs v end | wall (s) | wall / sim time |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for c in cases:
        within = c["ok"] and c["dmax"] <= c["bound"] and c["drest"] <= d_static
        print(
            f"| {c['robot']} | {c['ground']} | {c['npts']} | {c['ok']} | {c['H']:.2f} | {1e3 * c['dmax']:.1f} | "
            f"{1e3 * c['bound']:.0f} | {1e3 * c['drest']:.1f} | {1e3 * d_static:.0f} | {within} | "
            f"{c['h0']:.3f} -> {c['h']:.3f} | {c['vb']:.2e} | {c['vj']:.2e} | {c['wall']:.1f} | "
            f"{c['wall'] / a.seconds:.2f} |"
        )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for c in cases:
        lab = f"{c['robot']} / {c['ground']}"
        ax[0].plot(c["t"], c["hh"], label=lab)
        ax[1].plot(c["t"], 1e3 * c["D"], label=lab)
    ax[1].axhline(1e3 * d_static, ls="--", c="k", lw=0.8, label="rest bound")
    ax[0].set_ylabel("base height (m)")
    ax[1].set_ylabel("max penetration (mm)")
    ax[1].set_xlabel("t (s)")
    ax[0].legend(fontsize=8)
    ax[1].legend(fontsize=8)
    fig.suptitle(f"euler dt={a.dt:g} s: robots dropped on plane and drc_rough_terrain")
    fig.tight_layout()
    Path(a.png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(a.png, dpi=100)
    print(f"\nwrote {a.png}")


if __name__ == "__main__":
    main()
