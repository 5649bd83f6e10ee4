"""Gravity compensation in every method: an arm whose bodies are all held up (``gravcomp="1"``)
under gravity against the same arm without gravity, 0.5 s from the same push at 1 and 20 ms.
Prints per method and dt the largest difference of the end configurations [rad, m] (0 to the
solvers' tolerances where the compensation enters the method where gravity does) and how far the
arm moved.

    python scripts/checks/gravcomp_methods.py [method ...]
"""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np

import pbsim

ARM = """<mujoco><option gravity="{g}"/>
<worldbody>
  <body name="upper" pos="0 0 1" {gc}><joint name="shoulder" type="hinge" axis="0 1 0" damping="0.05"/>
    <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1"/>
    <body name="fore" pos="0.3 0 0" {gc}><joint name="elbow" type="hinge" axis="0 0.6 0.8" damping="0.05"/>
      <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.025" mass="0.6"/>
      <body name="tip" pos="0.25 0 0" {gc}><joint name="slide" type="slide" axis="1 0 0" damping="0.5"/>
        <geom type="sphere" size="0.03" mass="0.2"/></body></body></body>
</worldbody></mujoco>"""


def main(argv) -> int:
    methods = argv or pbsim.integrators.available()
    with tempfile.TemporaryDirectory() as tmp:
        models = []
        for name, g, gc in (("held", "0 0 -9.81", 'gravcomp="1"'), ("free", "0 0 0", "")):
            p = os.path.join(tmp, f"{name}.xml")
            with open(p, "w") as f:
                f.write(ARM.format(g=g, gc=gc))
            models.append(pbsim.load(p))
    held, free = models
    v0 = np.array([1.0, -2.0, 0.3])
    print(f"{'method':<22} {'dt':>6} {'|held - no gravity|':>20} {'moved':>8}")
    for method in methods:
        for dt in (0.001, 0.02):
            n = int(round(0.5 / dt))
            qa, qb = (pbsim.rollout(m, method, dt=dt, steps=n, v0=v0, scene=pbsim.Scene()).q[-1] for m in (held, free))
            print(f"{method:<22} {dt:>6g} {np.abs(qa - qb).max():>20.2e} {np.abs(qb - free.neutral()).max():>8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
