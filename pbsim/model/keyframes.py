"""Keyframes: named states a robot file ships (MJCF ``<keyframe><key>``); URDF has none.

``Model.keyframes`` maps a key's name to a :class:`Keyframe` in pbsim's coordinates: ``q`` equals
MuJoCo's qpos (joint by joint), ``v`` is qvel with a free joint's linear velocity turned into its
body frame (pbsim's convention), ``ctrl`` the inputs of the actuators pbsim imported (by name; nan
for one the key does not set), ``act`` the activations of the imported actuators with dynamics
(``State.act`` order), ``time``.  ``pbsim.rollout(model, ..., q0=key.q, v0=key.v, act0=key.act)``,
``pbsim rollout/view --keyframe home``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Keyframe:
    q: np.ndarray
    v: np.ndarray
    ctrl: np.ndarray
    act: np.ndarray
    time: float = 0.0


def keyframe(model, name: str) -> Keyframe:
    """``model.keyframes[name]``, or an InputError listing the model's keyframes."""
    from pbsim.errors import InputError

    keys = getattr(model, "keyframes", None) or {}
    if name not in keys:
        have = ", ".join(repr(k) for k in keys) or "none"
        raise InputError(f"model {model.name!r} has no keyframe {name!r} (its keyframes: {have})")
    return keys[name]
