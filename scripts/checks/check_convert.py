"""Round-trip table for pbsim's URDF/MJCF writers.

    python scripts/checks/check_convert.py

For every model the test suite uses: load -> write URDF -> load (mass matrix and ABA, relative
error at 20 random states), write MJCF -> MuJoCo compile (mj_fullM and solve(M, tau - mj_rne)
against pbsim's CRBA/ABA), Pinocchio parse of the URDF, and how many items each writer reports
as not representable.  Writes out/check_convert.png (bar chart of the errors, log scale).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "models")]

import pbsim  # noqa: E402
from pbsim.dynamics.joints import BALL  # noqa: E402
from pbsim.io.convert import convert, dynamics_error, mujoco_dynamics_error  # noqa: E402


def cases():
    import pybullet_data

    d = pybullet_data.getDataPath()
    for rel, fb in [
        ("kuka_iiwa/model.urdf", False),
        ("pendulum5.urdf", None),
        ("r2d2.urdf", None),
        ("quadruped/minitaur.urdf", None),
        ("laikago/laikago_toes_zup.urdf", None),
        ("a1/a1.urdf", None),
        ("humanoid/humanoid.urdf", True),
    ]:
        yield rel.split("/")[-1], os.path.join(d, rel), fb
    rs = ROOT.parent / "shared" / "robots" / "robosimian" / "robosimian_caesar_new_all_active.urdf"
    if rs.is_file():
        yield "robosimian", str(rs), None
    from pbsim_models.write import OUT, models

    for stem, _ in models():
        yield stem, str(OUT / f"{stem}.urdf"), None
    try:
        import gymnasium

        if __import__("importlib").util.find_spec("pbsim.io.mjcf"):
            g = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets")
            for n in ("humanoid.xml", "ant.xml"):
                yield n, os.path.join(g, n), None
    except ImportError:
        pass


def main():
    import pinocchio as pin

    rows = []
    tmp = Path(tempfile.mkdtemp())
    for name, path, fb in cases():
        t0 = time.perf_counter()
        m = pbsim.load(path, floating_base=fb)
        ns = 5 if m.nv > 100 else 20
        out_u = tmp / name / "m.urdf"
        out_x = tmp / name / "m.xml"
        ru = convert(path, out_u, floating_base=fb)
        rx = convert(path, out_x, floating_base=fb)
        back = pbsim.load(out_u, floating_base=fb)
        eu = dynamics_error(m, back, nstates=ns, ignore_armature=True)
        ex = mujoco_dynamics_error(m, out_x, nstates=ns)
        if np.any(m.jtype == BALL):
            pin_ok = "n/a (ball)"
        else:
            pm = (
                pin.buildModelFromUrdf(str(out_u), pin.JointModelFreeFlyer())
                if m.floating_base
                else pin.buildModelFromUrdf(str(out_u))
            )
            pin_ok = "ok" if pm.nv == m.nv else f"nv {pm.nv}"
        rows.append((name, m.nv, eu, ex, pin_ok, len(ru.lost), len(rx.lost), time.perf_counter() - t0))
    hdr = (
        f"| {'model':<26} | {'nv':>4} | {'URDF round trip':>15} | {'MJCF vs MuJoCo':>14} | {'pin parse':<10} "
        f"| {'lost URDF':>9} | {'lost MJCF':>9} | {'s':>5} |"
    )
    print(hdr)
    print("|" + "|".join("-" * (len(c)) for c in hdr.split("|")[1:-1]) + "|")
    for r in rows:
        print(
            f"| {r[0]:<26} | {r[1]:>4} | {r[2]:>15.2e} | {r[3]:>14.2e} | {r[4]:<10} | {r[5]:>9} | {r[6]:>9} "
            f"| {r[7]:>5.1f} |"
        )
    worst = max(max(r[2], r[3]) for r in rows)
    print(f"\nworst relative error {worst:.2e} (bar: 1e-9)")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4))
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [max(r[2], 1e-17) for r in rows], 0.4, label="URDF round trip (M, ABA)")
    ax.bar(x + 0.2, [max(r[3], 1e-17) for r in rows], 0.4, label="MJCF vs MuJoCo (M, qacc)")
    ax.axhline(1e-9, color="r", ls="--", label="bar 1e-9")
    ax.set_yscale("log")
    ax.set_xticks(x, [r[0] for r in rows], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("max relative error")
    ax.legend(fontsize=7)
    fig.tight_layout()
    (ROOT / "out").mkdir(exist_ok=True)
    fig.savefig(ROOT / "out" / "check_convert.png", dpi=100)
    return 0 if worst < 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main())
