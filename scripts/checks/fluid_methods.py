"""Fluid forces in every method: which take a medium (MJCF ``<option density viscosity>``), and
how well each holds MuJoCo's inertia-box law at 1 and 20 ms.

Two cases per method and dt:
- a 3 kg, 0.1 x 0.2 x 0.4 m box sinking face down in water, 3 s from rest: its terminal speed
  against ``v_t = sqrt(2 m g / (rho b_x b_y))`` (the quadratic drag balances the weight);
- gymnasium's swimmer, 1 s under constant motor commands: its end configuration against MuJoCo's
  RK4 at 0.1 ms (MuJoCo's own Euler at the same dt in the last column, the peer).
The methods that do not apply fluid forces refuse such a model; the table says so.

    python scripts/checks/fluid_methods.py [method ...]
"""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np

import pbsim
from pbsim.errors import InputError

SINKER = """<mujoco><option density="1000"/><worldbody>
<body name="box"><freejoint/><geom type="box" size=".05 .1 .2" mass="3"/></body>
</worldbody></mujoco>"""
CTRL = np.array([0.1, -0.1])


def swimmer_path() -> str | None:
    try:
        import gymnasium
    except ImportError:
        return None
    p = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", "swimmer.xml")
    return p if os.path.isfile(p) else None


def mujoco_swimmer(path: str, integ: str, dt: float) -> np.ndarray:
    import mujoco

    mj = mujoco.MjModel.from_xml_path(path)
    mj.opt.timestep = dt
    mj.opt.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{integ}")
    d = mujoco.MjData(mj)
    d.ctrl[:] = CTRL
    for _ in range(int(round(1.0 / dt))):
        mujoco.mj_step(mj, d)
    return d.qpos.copy()


def main(argv) -> int:
    methods = argv or pbsim.integrators.available()
    with tempfile.TemporaryDirectory() as tmp:
        p = os.path.join(tmp, "sinker.xml")
        with open(p, "w") as f:
            f.write(SINKER)
        box = pbsim.load(p)
    vt = np.sqrt(2 * 3 * 9.81 / (1000.0 * 0.1 * 0.2))
    sw_path = swimmer_path()
    swimmer = pbsim.load(sw_path) if sw_path else None
    ref = mujoco_swimmer(sw_path, "RK4", 1e-4) if sw_path else None
    peer = {dt: mujoco_swimmer(sw_path, "EULER", dt) for dt in (1e-3, 0.02)} if sw_path else {}
    print(f"terminal speed of the box: {vt:.4f} m/s; swimmer: end configuration against MuJoCo RK4 at 0.1 ms")
    print(f"{'method':<16} {'dt [ms]':>7} {'box v_end / v_t - 1':>20} {'swimmer max |dq|':>17} {'MuJoCo Euler':>13}")
    for name in methods:
        try:
            pbsim.integrators.make(name, box, pbsim.Scene())
        except InputError as e:
            print(f"{name:<16} refuses: {str(e)[:110]}")
            continue
        for dt in (1e-3, 0.02):
            tr = pbsim.rollout(box, name, dt=dt, steps=int(round(3.0 / dt)), scene=pbsim.Scene(), record_every=1)
            rel = -tr.v[-1, 2] / vt - 1.0
            sw = pe = float("nan")
            if swimmer is not None:
                q = pbsim.rollout(
                    swimmer,
                    name,
                    dt=dt,
                    steps=int(round(1.0 / dt)),
                    scene=pbsim.Scene(),
                    control=pbsim.Control(ctrl=CTRL),
                    record_every=int(round(1.0 / dt)),
                ).q[-1]
                sw = float(np.abs(q - ref).max())
                pe = float(np.abs(peer[dt] - ref).max())
            print(f"{name:<16} {dt * 1e3:>7g} {rel:>20.2e} {sw:>17.2e} {pe:>13.2e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
