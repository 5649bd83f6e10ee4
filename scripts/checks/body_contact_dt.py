"""How each method's contact between bodies behaves across dt (issue 28's "dt behaviour table"):
stacking and friction, against MuJoCo and Coulomb's law.

    python scripts/checks/body_contact_dt.py [--methods euler,pbad,pbfd,nmdp,pbd_nmdp] [--dts 5,20,50]

Columns (each a 2 s run from rest; models of tests/contact/_body_models.py and the stack3 scene):
- stack: the worst rest-height error of the three boxes of ``stack3`` against MuJoCo (mm) and
  the largest height change over the last 0.5 s (mm: "jitter" or creep);
- slide 35 deg: a box on a tilted box (mu = 0.5) -- its acceleration over Coulomb's g (sin - mu cos);
- stick 15 deg: its speed down the slope after 1 s (mm/s; Coulomb: 0);
- grip 1.6 / 0.4: how far the box rises (of the base's 0.1 m, cm) when two fingers squeeze it
  with 2 mu F = 1.6 m g (Coulomb: holds) and 0.4 m g (slips).
euler runs at 1 ms (explicit; larger steps are not stable for these stiffnesses) whatever --dts says.
Prints a markdown table.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

import pbsim
from pbsim.contact import make_scene

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "contact"))
from _body_models import BOX_MASS, gripper, gripper_lift, ramp, slide_along  # noqa: E402


def mujoco_heights(xml: str, T=2.0):
    import mujoco

    mj = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(mj)
    while d.time < T:
        mujoco.mj_step(mj, d)
    return np.array(d.qpos[2:21:7])


def run(method, dt, tmp):
    import pbsim_models
    from pbsim_models.scenes import STACK3

    out = {}
    m = pbsim_models.by_name("stack3")
    tr = pbsim.rollout(
        m, method, dt=dt, steps=int(round(2 / dt)), q0=m.default_configuration(), scene=make_scene(m), on_nan="stop"
    )
    z = tr.q[:, 2:21:7]
    out["stack"] = (
        1e3 * np.abs(z[-1] - mujoco_heights(STACK3)).max(),
        1e3 * np.ptp(z[int(round(1.5 / dt)) :], 0).max(),
    )
    for deg in (35.0, 15.0):
        path, _, down = ramp(tmp, deg, mu=0.5)
        mr = pbsim.load(path)
        tr = pbsim.rollout(
            mr,
            method,
            dt=dt,
            steps=int(round(1.0 / dt)),
            q0=mr.default_configuration(),
            scene=make_scene(mr, mu=0.5),
            on_nan="stop",
        )
        s, t = slide_along(tr, down), tr.t
        th = np.radians(deg)
        if deg > 30:
            k = len(t) // 3
            a = 2.0 * np.polyfit(t[k:], s[k:], 2)[0]
            out["slide"] = a / (9.81 * (np.sin(th) - 0.5 * np.cos(th)))
        else:
            k = max(1, int(round(0.1 / dt)))
            out["stick"] = 1e3 * (s[-1] - s[-1 - k]) / (t[-1] - t[-1 - k])
    mg = pbsim.load(gripper(tmp, mu=0.5))
    rises = []
    for ratio in (1.6, 0.4):
        F = ratio * BOX_MASS * 9.81 / (2 * 0.5)
        _, box, _, _ = gripper_lift(mg, method, dt, F, scene=make_scene(mg, mu=0.5), on_nan="stop")
        rises.append(100 * box)
    out["grip"] = rises
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", default="euler,pbad,pbfd,nmdp,pbd_nmdp")
    ap.add_argument("--dts", default="5,20,50", help="ms")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    print(
        "| method | dt (ms) | stack: height error / last-0.5 s change (mm) | slide 35 deg: a / Coulomb's | "
        "stick 15 deg (mm/s) | grip 1.6 / 0.4: box rise (cm of 10) |"
    )
    print("|---|---|---|---|---|---|")
    for method in a.methods.split(","):
        dts = [1.0] if method == "euler" else [float(x) for x in a.dts.split(",")]
        for dtm in dts:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    r = run(method, dtm * 1e-3, tmp)
                except Exception as e:  # noqa: BLE001 - a row says why
                    print(f"| {method} | {dtm:g} | {type(e).__name__}: {str(e)[:80]} | | | |")
                    continue
            st, gr = r["stack"], r["grip"]
            print(
                f"| {method} | {dtm:g} | {st[0]:.1f} / {st[1]:.2f} | {r['slide']:.3f} | {r['stick']:.1f} | "
                f"{gr[0]:.1f} / {gr[1]:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
