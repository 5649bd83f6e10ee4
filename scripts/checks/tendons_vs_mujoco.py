"""Tendons and actuators against MuJoCo (issue 29): prints one row per check -- the largest error
against MuJoCo's own quantity -- on the models written in the tests (tests/dynamics/test_tendon.py,
tests/control/test_actuators_tendon.py, tests/control/test_actuators_dynamics.py).

    python scripts/checks/tendons_vs_mujoco.py [--states 50] [--seconds 1.0]

Rows: tendon length / velocity / moment arms (ten_length, ten_velocity, ten_J) at random states,
the tendons' passive force (qfrc_passive less joint damping), the actuators' force
(qfrc_actuator, with activations), and trajectories of 1 ms steps (euler vs MuJoCo's Euler, rk4
vs its RK4) from the tests' initial states.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "dynamics"), str(ROOT / "tests" / "control")]


def main(argv=None):
    import mujoco

    import pbsim
    import test_actuators_dynamics as TD
    import test_actuators_tendon as TA
    import test_tendon as TT
    from pbsim.control.actuators import act_advance, force_act
    from pbsim.dynamics.tendon import tendon_state

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--states", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=1.0)
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp())

    def load(xml, name):
        p = tmp / name
        p.write_text(xml)
        return pbsim.load(str(p)), mujoco.MjModel.from_xml_path(str(p))

    rows = []
    rng = np.random.default_rng(0)
    for label, xml, scale in (("fixed", TT.FIXED, 0.5), ("spatial", TT.SPATIAL, 1.5)):
        m, mj = load(xml, label + ".xml")
        d = mujoco.MjData(mj)
        e = np.zeros(4)
        for _ in range(args.states):
            q, v = rng.uniform(-scale, scale, m.nq), rng.normal(size=m.nv)
            d.qpos[:], d.qvel[:] = q, v
            mujoco.mj_forward(mj, d)
            L, Ld, J = tendon_state(m, q, v)
            tau = TT.tendon_torque(m, q, v)
            e = np.maximum(
                e,
                [
                    np.abs(L - d.ten_length).max(),
                    np.abs(Ld - d.ten_velocity).max(),
                    np.abs(J - TT.ten_J(mj, d)).max(),
                    np.abs(tau - d.qfrc_passive - mj.dof_damping * v).max(),
                ],
            )
        for what, x in zip(("ten_length", "ten_velocity", "ten_J", "qfrc_passive"), e):
            rows.append((f"{label} tendons", what, f"{args.states} random states", x))
    for label, xml, fn in (
        ("gripper (tendon, site)", TA.SITES, TA.actuator_torque),
        ("filter arm (act)", TD.ARM, TD.actuator_torque),
    ):
        m, mj = load(xml, "a.xml")
        d = mujoco.MjData(mj)
        e = 0.0
        for _ in range(args.states):
            q, v, u = rng.uniform(-0.05, 0.05, m.nq), rng.normal(size=m.nv), rng.uniform(-2, 2, m.nu)
            d.qpos[:], d.qvel[:], d.ctrl[:] = q, v, u
            if m.na:
                a = rng.uniform(-0.05, 0.05, m.na)
                d.act[:] = a
                mujoco.mj_forward(mj, d)
                got = fn(m, q, v, u, force_act(m, a[None], act_advance(m, a, u, mj.opt.timestep, 1))[0])
            else:
                mujoco.mj_forward(mj, d)
                got = fn(m, q, v, u)
            e = max(e, np.abs(got - d.qfrc_actuator).max())
        rows.append((label, "qfrc_actuator", f"{args.states} random states", e))
    steps = int(round(args.seconds / 1e-3))
    I = mujoco.mjtIntegrator
    cases = (
        ("fixed tendons", TT.FIXED, np.array([0.4, -0.8, 0.05]), np.array([1.0, 0.0, -0.3]), None, None),
        ("spatial tendons", TT.SPATIAL, np.array([0.3, 0.2, -0.5, 0.05]), np.array([0.5, -0.5, 1.0, 0.0]), None, None),
        (
            "tendon gripper",
            TA.GRIPPER,
            np.array([-0.01, 0.005, 0.0]),
            np.zeros(3),
            np.array([0.02, 0.0, 0.2, 0.0]),
            None,
        ),
        ("filter arm from its keyframe", TD.ARM_EXPLICIT, None, None, None, "spun"),
    )
    for label, xml, q0, v0, u, key in cases:
        for method, integ in (("euler", I.mjINT_EULER), ("rk4", I.mjINT_RK4)):
            m, mj = load(xml, "t.xml")
            mj.opt.integrator = integ
            mj.opt.timestep = 1e-3
            d = mujoco.MjData(mj)
            act0 = None
            if key is not None:
                mujoco.mj_resetDataKeyframe(mj, d, 0)
                k = m.keyframes[key]
                q0, v0, u, act0 = k.q, k.v, k.ctrl, k.act
            else:
                d.qpos[:], d.qvel[:] = q0, v0
                if u is not None:
                    d.ctrl[:] = u
            ref = [d.qpos.copy()]
            for _ in range(steps):
                mujoco.mj_step(mj, d)
                ref.append(d.qpos.copy())
            ctrl = pbsim.Control(ctrl=u) if u is not None else None
            tr = pbsim.rollout(m, method, dt=1e-3, steps=steps, q0=q0, v0=v0, control=ctrl, act0=act0)
            rows.append(
                (label, f"q, {method} vs MuJoCo", f"{args.seconds:g} s at 1 ms", np.abs(tr.q - np.array(ref)).max())
            )
    w = max(len(r[0]) for r in rows)
    print(f"{'model':<{w}}  {'quantity':<22} {'over':<20} max |pbsim - MuJoCo|")
    for a, b, c, x in rows:
        print(f"{a:<{w}}  {b:<22} {c:<20} {x:.2e}")


if __name__ == "__main__":
    main()
