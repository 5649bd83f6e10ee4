"""Every MJCF of the corpus run as a user would, against MuJoCo: no control given, from qpos0.

For each file of MuJoCo MJX's ``test_data`` and gymnasium's ``envs/mujoco/assets`` that both MuJoCo
and pbsim load: ``--seconds`` (0.3) of MuJoCo's semi-implicit Euler at ``--dt`` (1 ms; the file's
own integrator and step replaced, like for like) with ``ctrl = 0``, and ``pbsim.rollout(model,
"euler", ...)`` with ``control=None`` from the same qpos.  Prints per file: DOF, MuJoCo's contacts
at the end, how far MuJoCo's state moved (max |q - q0| in pbsim's tangent coordinates), the
distance between the two end states, and pbsim's notes (what it does not simulate).

Where a file has no contact the two should agree to round-off or to Euler's O(dt) split between
stable-PD and explicit servos; a large distance there is a semantic gap (the notes say which: e.g.
tendon armature, ball-joint stiffness). With contact the models differ (pbsim's
penalty contact against MuJoCo's soft constraints), and so do the states once anything touches.
This script found that ``control=None`` used to leave every actuator out where MuJoCo runs them at
``ctrl = 0`` (barkour's servos: 0.17 rad, then within its contact difference).

    python scripts/checks/mjcf_trajectories.py [--seconds 0.3] [--dt 1e-3] [--gym]
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import pbsim  # noqa: E402


def corpus(gym: bool) -> list[tuple[str, str]]:
    """(label, path) of the MJX test models (and with ``gym`` gymnasium's MuJoCo assets)."""
    from conftest import mjx_test_data

    base = Path(mjx_test_data("humanoid/humanoid.xml")).parents[1]
    out = [(os.path.relpath(f, base), f) for f in sorted(glob.glob(str(base / "**" / "*.xml"), recursive=True))]
    if gym:
        try:
            import gymnasium

            g = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets"
            out += [("gym/" + p.name, str(p)) for p in sorted(g.glob("*.xml"))]
        except ImportError:
            pass
    return out


def compare(path: str, seconds: float, dt: float):
    """``(nv, ncon, moved, distance, notes)`` or a string saying why the file was skipped."""
    import mujoco

    try:
        mm = mujoco.MjModel.from_xml_path(path)
    except Exception as e:  # noqa: BLE001 (MuJoCo refuses: not a model to compare)
        return f"MuJoCo refuses it ({str(e).splitlines()[0][:60]})"
    try:
        m = pbsim.load(path)
    except pbsim.PbsimError as e:
        return f"pbsim refuses it ({str(e)[:60]})"
    if m.nv == 0:
        return "static (no joint)"
    if m.nq != mm.nq:
        return f"nq {m.nq} against MuJoCo's {mm.nq}"
    mm.opt.integrator, mm.opt.timestep = mujoco.mjtIntegrator.mjINT_EULER, dt
    d = mujoco.MjData(mm)
    q0 = d.qpos.copy()
    n = int(round(seconds / dt))
    for _ in range(n):
        mujoco.mj_step(mm, d)
    tr = pbsim.rollout(m, "euler", dt=dt, steps=n, q0=q0, record_every=n, on_nan="stop")
    moved = float(np.abs(pbsim.difference(m, q0, d.qpos)).max())
    dist = float(np.abs(pbsim.difference(m, tr.q[-1], d.qpos)).max())
    return m.nv, int(d.ncon), moved, dist, m.notes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=0.3)
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--gym", action="store_true", help="also gymnasium's MuJoCo assets")
    a = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    print(f"{'file':45s} {'nv':>4s} {'ncon':>4s} {'moved':>8s} {'distance':>9s}  notes")
    for label, path in corpus(a.gym):
        r = compare(path, a.seconds, a.dt)
        if isinstance(r, str):
            print(f"{label:45s} {r}")
            continue
        nv, ncon, moved, dist, notes = r
        short = "; ".join(n.split(":")[0][:50] for n in notes if "welded to the world" not in n)
        print(f"{label:45s} {nv:4d} {ncon:4d} {moved:8.3g} {dist:9.3g}  {short}")


if __name__ == "__main__":
    main()
