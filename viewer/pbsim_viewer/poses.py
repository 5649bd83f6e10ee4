"""Default poses and gains for the viewer (no GL).

``standing_pose(model)``: the configuration the viewer's SPD holds and starts from.  The file's
own default (:meth:`Model.default_configuration`) except for robots whose neutral pose cannot
stand:

- Robosimian (joints ``limb{1..4}_joint{0..7}``): the neutral pose has all four limbs stretched
  out flat.  The standing pose bends joint2 / joint4 / joint6 by 0.4 / 0.8 / 0.5 rad, with the
  sign + for limbs 2 and 4 and - for limbs 1 and 3 (limbs 1 and 3 are mounted turned by 180
  degrees, so the same angles would lift them).  Each foot (``limbN_link7``) then sits 0.78 m
  below the torso, right under its shoulder (x = +-0.64 m, y = +-0.56 m): a symmetric four-legged
  crouch.  (``pbsim.control.motions.robosimian_gait`` at t = 0 uses + on every limb and so
  lifts limbs 1 and 3 into the air.)

``default_gains(model)``: SPD kp, kd scaled with the robot's total mass M: ``kp = 30 M``
(N m/rad), ``kd = M`` (N m s/rad); Robosimian (M = 100 kg) gets kp = 3000, kd = 100 and holds the
standing pose within 0.01 rad RMS on flat ground and on drc_rough_terrain (euler, dt = 1-2 ms).
"""

from __future__ import annotations

import numpy as np

ROBOSIMIAN_STANCE = {"joint2": 0.4, "joint4": 0.8, "joint6": 0.5}
KP_PER_KG = 30.0
KD_PER_KG = 1.0


def is_robosimian(model) -> bool:
    names = set(model.joint_names)
    return all(f"limb{k}_{j}" in names for k in range(1, 5) for j in ROBOSIMIAN_STANCE)


def standing_pose(model) -> np.ndarray:
    q = np.array(model.default_configuration(), dtype=float)
    if is_robosimian(model):
        for limb in range(1, 5):
            sign = 1.0 if limb in (2, 4) else -1.0
            for jn, a in ROBOSIMIAN_STANCE.items():
                q[int(model.iq[model.joint_index(f"limb{limb}_{jn}")])] = sign * a
    return q


def default_gains(model) -> tuple[float, float]:
    """(kp, kd) for the viewer's SPD hold, proportional to the total mass (at least 1 kg)."""
    M = max(float(model.total_mass), 1.0)
    return KP_PER_KG * M, KD_PER_KG * M


def detect_up(model) -> str:
    """ "y" or "z": the axis the robot is tallest along in its default pose (a guess for files
    that do not say; the DeepMimic humanoid stands along +y)."""
    import pbsim

    T = pbsim.forward_kinematics(model, model.default_configuration())
    pts = T[:, :3, 3]
    if len(pts) < 3:
        return "z"
    ext = np.ptp(pts, axis=0)
    return "y" if ext[1] > 1.5 * max(ext[2], 1e-9) and ext[1] >= ext[0] else "z"
