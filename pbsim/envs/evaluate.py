"""Policy evaluation on the native vector environment: ``episodes`` episodes at once, each run
until it ends (terminated or the time limit), the policy called once per step on the batch."""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from pbsim.envs.core import RobotVectorEnv
from pbsim.envs.tasks import EPISODE_STEPS, TASKS


def evaluate_policy(
    task: str, policy: Callable, episodes: int = 4, max_steps: int | None = None, seed: int = 0, **env_kwargs
) -> dict:
    """Run ``policy(obs (B, n_obs)) -> actions (B, n_action)`` on ``episodes`` copies of ready task
    ``task`` ("Hopper" ...; ``env_kwargs``: integrator, dt, frame_skip ...) for at most
    ``max_steps`` steps (default: the task's episode length).  Returns ``returns`` and ``lengths``
    (per episode; what came after an episode's end is not counted), ``diverged`` (episodes that
    ended by a non-finite state), ``wall_s`` and ``env_steps_per_s`` (both after the first step,
    which compiles)."""
    n = int(max_steps if max_steps is not None else EPISODE_STEPS[task])
    env = RobotVectorEnv(episodes, max_episode_steps=n, **TASKS[task](**env_kwargs))
    obs, _ = env.reset(seed=seed)
    ret = np.zeros(episodes)
    length = np.zeros(episodes, np.int64)
    live = np.ones(episodes, bool)
    div = np.zeros(episodes, bool)
    t0 = time.perf_counter()
    k = 0
    while live.any() and k < n:
        if k == 1:  # the rate leaves out the first step (its compilation)
            t0 = time.perf_counter()
        a = np.asarray(policy(obs), np.float32).reshape((episodes,) + env.single_action_space.shape)
        obs, r, term, trunc, info = env.step(a)
        ret += np.where(live, r, 0.0)
        length += live
        div |= live & info["diverged"]
        live &= ~(term | trunc)
        k += 1
    wall = time.perf_counter() - t0
    rate = episodes * max(k - 1, 1) / max(wall, 1e-12)
    return dict(returns=ret, lengths=length, diverged=div, wall_s=wall, env_steps_per_s=rate)
