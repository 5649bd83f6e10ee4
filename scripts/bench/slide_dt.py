"""A sliding box against dt: is a method's friction the same at every step size?

A 1 kg box (10 cm cube, 8 corner points through ``pbsim.default_scene``, mu 0.8) settles on a plane
for 0.5 s, then starts sliding at 1 m/s along x; per method and dt the table holds the distance
it slides in 1 s (Coulomb friction stops it in ``v^2 / (2 mu g)`` = 6.4 cm) and the largest rise
of its centre over the rest height while sliding (the box tips onto its leading edge as friction
acts below its centre; a hop would show here too).  Issue 30's rest-height bar needs a friction law that is the same at 1 ms and at 50 ms.

    NUMBA_NUM_THREADS=1 python scripts/bench/slide_dt.py [--methods pbad,pbad:friction=coulomb,pbfd,nmdp] [--dts 1,5,20,50]
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this tree's pbsim
import pbsim  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_equality import load  # noqa: E402  (an MJCF string through a temporary file)
from bench_large_dt import method_options  # noqa: E402

BOX = """<mujoco><worldbody><geom type="plane" size="5 5 0.1" friction="{mu} 0.005 0.0001"/>
<body name="box" pos="0 0 0.05"><freejoint/><geom type="box" size="0.05 0.05 0.05" mass="1"
friction="{mu} 0.005 0.0001"/></body></worldbody></mujoco>"""
V0, G = 1.0, 9.81


def box_model(mu=0.8):
    return load(BOX.format(mu=mu))


def slide(m, sc, method, dt):
    """(distance slid in 1 s [m], largest rise over the rest height [m]); ``method``: a name or
    ``name:key=value...`` (e.g. ``pbad:friction=coulomb``)."""
    method, opts = method_options(method)
    q0 = np.array(m.default_configuration(), float)
    tr = pbsim.rollout(m, method, dt=dt, steps=int(round(0.5 / dt)), q0=q0, scene=sc, on_nan="stop", **opts)
    q0 = np.asarray(tr.q)[-1]
    v0 = np.zeros(m.nv)
    v0[0] = V0
    tr = pbsim.rollout(m, method, dt=dt, steps=int(round(1.0 / dt)), q0=q0, v0=v0, scene=sc, on_nan="stop", **opts)
    q = np.asarray(tr.q)
    return float(q[-1, 0] - q0[0]), float(q[:, 2].max() - q0[2])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--methods", default="pbad,pbfd,nmdp,nmdp_zo,pbd_nmdp")
    ap.add_argument("--dts", default="1,5,20,50", help="ms")
    ap.add_argument("--mu", type=float, default=0.8, help="friction coefficient (above 0.5 the box tips onto its edge)")
    a = ap.parse_args(argv)
    m = box_model(a.mu)
    sc = pbsim.default_scene(m, mu=a.mu)  # the environment's friction is the scene's (one number)
    dts = [float(x) * 1e-3 for x in a.dts.split(",") if x]
    print(f"box at {V0} m/s, mu {sc.mu:g}: Coulomb stops it in {100 * V0**2 / (2 * a.mu * G):.1f} cm")
    print("| method | " + " | ".join(f"{d * 1e3:g} ms: slid [cm] / rise [mm]" for d in dts) + " |")
    print("|---|" + "---|" * len(dts))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for meth in [x for x in a.methods.split(",") if x]:
            cells = [slide(m, sc, meth, d) for d in dts]
            print(f"| {meth} | " + " | ".join(f"{s * 100:.1f} / {h * 1e3:.1f}" for s, h in cells) + " |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
