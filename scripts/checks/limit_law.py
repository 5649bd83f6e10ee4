"""MuJoCo's joint-limit law: pbsim's explicit methods (which run it, pbsim.dynamics.limits) and
pbsim's limit spring-damper (the other methods) against MuJoCo, and why no spring-damper matches it.

MuJoCo's limit is a soft unilateral constraint.  With impedance ``d`` (solimp, 0.9-0.95), the
reference acceleration ``aref = -b v - k d r`` (``b = 2 / (dmax tc)``, ``k = 1 / (dmax tc)^2``, r the
penetration) and the regularizer ``R = (1 - d) / d A`` (A = 1 / the joint's effective inertia),
the constrained acceleration of one active limit is ``a = (1 - d) a0 + d aref`` while the force
pushes (clamped at 0 when it would pull), ``a0`` the unconstrained acceleration.  Two stiffnesses
follow from it:

- dynamic (no load): ``a = -d b v - d^2 k r``: a critically damped oscillator with
  ``w = d / (dmax tc)`` = 50 rad/s at tc = 0.02 s -- a joint released from ``r0`` leaves at
  ``r0 w / e`` (the force stops at ``w t = 1``);
- static (a load ``a0`` holds the joint on its limit): ``r = (1 - d) a0 / (d^2 k)``, i.e. a
  spring of ``w_s^2 = d^2 k / (1 - d)`` = 19 times ``w^2`` -- about 220 rad/s.

pbsim's limit spring-damper (``pbsim/model/limits.py``, the methods other than euler,
explicit_euler and rk2-4) is one critically damped spring-damper, ``w = 2 pi / tc`` = 314 rad/s,
that also pulls while the joint leaves.  This prints, for a 1 kg, 0.5 m rod (Euler at 1 ms in
MuJoCo and pbsim's euler; pbad at 1 ms for the spring-damper): the sag of the rod resting on its limit under gravity, and the speed at which it
leaves the limit when released 0.3 rad inside it without gravity, with the predictions of the
law above and of a spring-damper at MuJoCo's dynamic ``w`` (the change a unilateral clamp plus
MuJoCo's ``w`` would make).

    python scripts/checks/limit_law.py
"""

from __future__ import annotations

import math
import os
import sys
import tempfile

import numpy as np

ROD = """<mujoco><compiler angle="radian"/><option timestep="0.001" integrator="Euler" gravity="0 0 {g}"/>
<worldbody><body pos="0 0 1"><joint name="j" type="hinge" axis="0 1 0" range="-0.5 0.5"/>
<geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.02" mass="1"/></body></worldbody></mujoco>"""


def _mujoco(xml, q0, seconds):
    import mujoco

    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qpos[0] = q0
    qs, vs = [], []
    for _ in range(int(round(seconds / m.opt.timestep))):
        mujoco.mj_step(m, d)
        qs.append(d.qpos[0])
        vs.append(d.qvel[0])
    return np.array(qs), np.array(vs), m


def _pbsim(xml, q0, seconds, method="euler"):
    import pbsim

    with tempfile.TemporaryDirectory() as tmp:
        p = os.path.join(tmp, "rod.xml")
        with open(p, "w") as f:
            f.write(xml)
        m = pbsim.load(p)
    tr = pbsim.rollout(m, method, dt=1e-3, steps=int(round(seconds / 1e-3)), q0=np.array([q0]))
    return tr.q[1:, 0], tr.v[1:, 0]


def main() -> int:
    tc, dmax, dmin = 0.02, 0.95, 0.9
    w = dmax / (dmax * tc)  # d^2 k with d = dmax: (dmax / (dmax tc))^2
    # static: the rod on its upper limit under gravity, 5 s
    xml = ROD.format(g=-9.81)
    qm, _, mj = _mujoco(xml, 0.45, 5.0)
    qp, _ = _pbsim(xml, 0.45, 5.0)
    qs, _ = _pbsim(xml, 0.45, 5.0, "pbad")
    a0 = 9.81 * 0.25 * math.cos(0.5) * mj.dof_invweight0[0]  # gravity torque / inertia at the limit
    k = 1.0 / (dmax * tc) ** 2
    r_m = qm[-1] - 0.5

    def d_of(r):  # solimp (0.9, 0.95, 0.001, 0.5, 2): MuJoCo's default impedance curve
        x = min(abs(r) / 0.001, 1.0)
        y = 0.5 * (x / 0.5) ** 2 if x <= 0.5 else 1 - 0.5 * ((1 - x) / 0.5) ** 2
        return dmin + y * (dmax - dmin)

    d = d_of(r_m)
    rows = [("static sag on the limit [rad]", r_m, qp[-1] - 0.5, qs[-1] - 0.5, (1 - d) * a0 / (d * d * k), a0 / w**2)]
    # dynamic: released 0.3 rad past the upper limit, no gravity; the speed once it is back inside
    xml = ROD.format(g=0)
    qm, vm, _ = _mujoco(xml, 0.8, 0.2)
    qp, vp = _pbsim(xml, 0.8, 0.2)
    qs, vs = _pbsim(xml, 0.8, 0.2, "pbad")

    def exit_speed(q, v):  # |v| when the rod is back inside its range (0 if it never gets there)
        inside = np.flatnonzero(q < 0.5)
        return abs(v[inside[0]]) if inside.size else 0.0

    rows.append(
        (
            "exit speed from 0.3 rad past it [rad/s]",
            exit_speed(qm, vm),
            exit_speed(qp, vp),
            exit_speed(qs, vs),
            0.3 * w / math.e,
            0.3 * w / math.e,
        )
    )
    print(f"{'':<42} {'MuJoCo':>10} {'euler':>10} {'pbad':>10} {'MuJoCo law':>11} {'s-d, w=50':>10}")
    for name, a, b, c, e, f in rows:
        print(f"{name:<42} {a:>10.6g} {b:>10.6g} {c:>10.3g} {e:>11.3g} {f:>10.3g}")
    print(f"(MuJoCo law: w = {w:.0f} rad/s dynamic; static sag with d({r_m:.2g}) = {d:.3f}, a0 = {a0:.3g} rad/s^2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
