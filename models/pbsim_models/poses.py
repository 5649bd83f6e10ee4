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
