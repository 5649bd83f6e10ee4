"""Gymnasium environments (needs ``gymnasium``: ``pip install 'pbsim[envs]'``).

Importing this package registers ``pbsim/Swimmer-v0``, ``pbsim/Spider-v0``, ``pbsim/Hopper-v0``,
``pbsim/Walker2d-v0`` and ``pbsim/Humanoid-v0`` with gymnasium, each with a native vector entry
point (:class:`RobotVectorEnv`: all environments in one batched call per step)::

    import gymnasium, pbsim.envs
    env = gymnasium.make("pbsim/Hopper-v0", integrator="pbfd", dt=0.008, frame_skip=1)
    envs = gymnasium.make_vec("pbsim/Hopper-v0", num_envs=64, vectorization_mode="vector_entry_point")

(``gymnasium.make("pbsim.envs:pbsim/Hopper-v0")`` imports this package itself; gymnasium 1.x has
no plugin entry points to register through.)  :class:`RobotEnv` wraps any model: docs/envs.md.
"""

from __future__ import annotations

from functools import partial

import gymnasium

from pbsim.envs.core import CONTROL_MODES, RobotEnv, RobotVectorEnv, default_observation
from pbsim.envs.tasks import EPISODE_STEPS, TASKS, com_position


def make_env(task: str, **kwargs) -> RobotEnv:
    """The single environment of a ready task (``"Hopper"`` ...) with its keyword arguments."""
    return RobotEnv(**TASKS[task](**kwargs))


def make_vec_env(task: str, num_envs: int = 1, max_episode_steps: int | None = None, **kwargs) -> RobotVectorEnv:
    """The native vector environment of a ready task."""
    return RobotVectorEnv(num_envs, max_episode_steps=max_episode_steps, **TASKS[task](**kwargs))


ENV_IDS = [f"pbsim/{name}-v0" for name in TASKS]


def register_envs() -> None:
    """Register the ready tasks with gymnasium (idempotent)."""
    for name in TASKS:
        env_id = f"pbsim/{name}-v0"
        if env_id in gymnasium.registry:
            continue
        gymnasium.register(
            id=env_id,
            entry_point=partial(make_env, name),
            vector_entry_point=partial(make_vec_env, name),
            max_episode_steps=EPISODE_STEPS[name],
        )


register_envs()

__all__ = [
    "RobotEnv",
    "RobotVectorEnv",
    "CONTROL_MODES",
    "TASKS",
    "ENV_IDS",
    "make_env",
    "make_vec_env",
    "register_envs",
    "com_position",
    "default_observation",
]
