"""Every geom type in contact (issue 29): rest heights against MuJoCo, and the sampling bounds.

    python scripts/checks/geom_contact.py

Prints, for the cases of ``tests/contact/test_geoms29.py``, MuJoCo's rest height, pbsim's (euler at
1 ms, the penalty sized for 0.2 mm of static penetration) and their difference: a free ellipsoid
and a free cylinder (upright, on its side) dropped on a plane; balls on vertical slides resting on
a horizontal world cylinder, a turned world ellipsoid, a sloped hfield (the file's data) and a
turned hfield whose data is given at run time; then the support shortfall of the ellipsoid's
inscribed spheres (:func:`pbsim.contact.points.ellipsoid_points`) for a few axis ratios.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "contact")]

import mujoco  # noqa: E402

import pbsim  # noqa: E402
from pbsim.contact import make_scene  # noqa: E402
from pbsim.contact.points import ellipsoid_points  # noqa: E402
from test_geoms29 import CYL, ELL, FREE, LATER, SLIDE  # noqa: E402


def mujoco_rest(path, steps, hfield=None):
    mj = mujoco.MjModel.from_xml_path(path)
    if hfield is not None:
        adr = mj.hfield_adr[1]
        mj.hfield_data[adr : adr + hfield.size] = hfield.reshape(-1)
    d = mujoco.MjData(mj)
    for _ in range(steps):
        mujoco.mj_step(mj, d)
    return d.qpos.copy()


def main():
    t0 = time.perf_counter()
    tmp = Path(tempfile.mkdtemp())
    rows = []
    for name, geom, euler, n in [
        ("ellipsoid 0.1x0.08x0.05 on a plane", ELL, "0 0 20", 1),
        ("cylinder r 0.05 h 0.1 upright", CYL, "0 0 0", 8),
        ("cylinder on its side", CYL, "0 90 0", 2),
    ]:
        path = tmp / "free.xml"
        path.write_text(FREE.format(pos="0 0 0.3", euler=euler, geom=geom))
        zm = mujoco_rest(str(path), 2000)[2]
        m = pbsim.load(str(path))
        sc = make_scene(m, stiffness=9.81 / (n * 2e-4), friction_eps=0.05)
        zp = pbsim.rollout(m, "euler", 1e-3, 2000, scene=sc, record_every=2000).q[-1, 2]
        rows.append((name, zm, zp))
    path = tmp / "slide.xml"
    path.write_text(SLIDE)
    qm = mujoco_rest(str(path), 3000, LATER) + 1.0
    m = pbsim.load(str(path), hfield_data={"later": LATER})
    qp = pbsim.rollout(m, "euler", 1e-3, 3000, scene=make_scene(m, stiffness=9.81 / 2e-4, mu=0.0)).q[-1] + 1.0
    for k, name in enumerate(("ball on a world cylinder", "ball on a world ellipsoid", "ball on a sloped hfield",
                              "ball on a turned run-time hfield")):  # fmt: skip
        rows.append((name, qm[k], qp[k]))
    print(f"{'case':<40} {'MuJoCo z (m)':>13} {'pbsim z (m)':>12} {'pbsim - MuJoCo (mm)':>20}")
    for name, zm, zp in rows:
        print(f"{name:<40} {zm:13.5f} {zp:12.5f} {1e3 * (zp - zm):20.3f}")
    print("\nellipsoid points: support shortfall over 200000 directions, of the largest semi-axis")
    D = np.random.default_rng(0).normal(size=(200000, 3))
    D /= np.linalg.norm(D, axis=1, keepdims=True)
    for s in [(1, 1, 1), (1, 0.3, 0.3), (1, 0.6, 0.3), (1, 1, 0.5), (1, 1, 0.1), (1, 1, 0.01)]:
        s = np.array(s, float)
        L, r = ellipsoid_points(s)
        gap = np.sqrt(((D * s) ** 2).sum(1)) - (D @ L.T + r).max(1)
        print(f"  semi-axes {s.tolist()!s:<22} {len(L):3d} spheres   worst {100 * gap.max() / s.max():5.2f} %")
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
