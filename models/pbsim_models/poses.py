"""Named poses of known robots: the configuration a robot stands in when its file's neutral pose
cannot stand (used by the viewer and scripts; the robots' files are not ours, only the angles).

- Robosimian (joints ``limb{1..4}_joint{0..7}``): the neutral pose has all four limbs stretched
  out flat.  The standing pose bends joint2 / joint4 / joint6 by 0.4 / 0.8 / 0.5 rad, with the
  sign + for limbs 2 and 4 and - for limbs 1 and 3 (limbs 1 and 3 are mounted turned by 180
  degrees, so the same angles would lift them).  Each foot (``limbN_link7``) then sits 0.78 m
  below the torso, right under its shoulder (x = +-0.64 m, y = +-0.56 m): a symmetric four-legged
  crouch.  (``pbsim.control.motions.robosimian_gait`` at t = 0 uses + on every limb and so
  lifts limbs 1 and 3 into the air.)
"""

from __future__ import annotations

import numpy as np

ROBOSIMIAN_STANCE = {"joint2": 0.4, "joint4": 0.8, "joint6": 0.5}


def is_robosimian(model) -> bool:
    names = set(model.joint_names)
    return all(f"limb{k}_{j}" in names for k in range(1, 5) for j in ROBOSIMIAN_STANCE)


def standing_pose(model) -> np.ndarray:
    """The model's default configuration, or the standing pose of a robot named above."""
    q = np.array(model.default_configuration(), dtype=float)
    if is_robosimian(model):
        for limb in range(1, 5):
            sign = 1.0 if limb in (2, 4) else -1.0
            for jn, a in ROBOSIMIAN_STANCE.items():
                q[int(model.iq[model.joint_index(f"limb{limb}_{jn}")])] = sign * a
    return q


def symmetrize_robosimian(model) -> float:
    """Make Robosimian mirror-symmetric in place: the URDF mounts limbs 1 and 2 (``limbN_joint0``) at
    rpy ``(0, 1.5708, 3.1515926)``, a 0.01 rad typo of pi that moves their feet 4-7 mm in the standing
    pose (limbs 3 and 4 are at ``(0, 1.5708, 0)``); here they get yaw pi exactly.  Afterwards body
    masses, centres of mass and inertias mirror front-back and left-right to 1e-3 m / 4e-3 kg m^2 except
    the torso's own centre of mass (-0.8, -2.1) mm off its origin, and the 16 sampled contact points
    of each foot mirror exactly (scripts/figures/nmdp_robosimian.py, docs/benchmarks/nmdp.md).  Returns the
    largest change of a rotation-matrix entry (0.01)."""
    c, s = np.cos(1.5708), np.sin(1.5708)  # Rz(pi) Ry(1.5708): the file's 1.5708, not pi/2
    R = np.array([[-c, 0.0, -s], [0.0, -1.0, 0.0], [-s, 0.0, c]])
    d = 0.0
    for k in (1, 2):
        i = model.body_names.index(f"limb{k}_link0")
        d = max(d, float(np.abs(model.tree_R[i] - R).max()))
        model.tree_R[i] = R
    return d
