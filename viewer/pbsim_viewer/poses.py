"""Default poses and gains for the viewer (no GL).

``standing_pose(model)``: the configuration the viewer's SPD holds and starts from: the file's
own default, or a known robot's standing pose (:mod:`pbsim_models.poses`, e.g. Robosimian's crouch).

The viewer's SPD gains are :func:`pbsim.control.motions.default_gains` (``kp = 30 M`` N m/rad,
``kd = M`` N m s/rad, M the total mass; the defaults of ``pbsim rollout --control spd`` and
``--motion`` too): Robosimian (M = 100 kg) gets kp = 3000, kd = 100 and holds the standing pose
within 0.01 rad RMS on flat ground and on drc_rough_terrain (euler, dt = 1-2 ms).
"""

from __future__ import annotations

import numpy as np
from pbsim_models.poses import ROBOSIMIAN_STANCE, is_robosimian, standing_pose  # noqa: F401 (the viewer's names)


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
