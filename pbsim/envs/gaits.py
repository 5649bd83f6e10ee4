"""Open-loop periodic controllers and their batched evaluation, for controller optimization
(paper 000 Fig. 5: CMA-ES on the swimmer and the spider).

:class:`SineGait`: per actuated joint ``a_j(t) = offset_j + amp_j sin(2 pi f t + phase_j)``, the
action of a ready task (its SPD joint targets); parameters ``[f, amp (n), phase (n), offset (n)]``.
:func:`gait_objective` evaluates a whole population in one batched rollout of the native vector
environment (one :class:`~pbsim.backends.cpu.CpuBatch` call per step for all P controllers).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pbsim.envs.core import RobotVectorEnv
from pbsim.envs.tasks import TASKS


@dataclass
class SineGait:
    """``n`` joints, one shared frequency; actions clipped to ``[-limit, limit]``."""

    n: int
    limit: float = 1.5

    @property
    def size(self) -> int:
        return 1 + 3 * self.n

    def params(self, freq, amp, phase, offset=0.0) -> np.ndarray:
        """The parameter vector of a gait (scalars broadcast over the joints)."""
        b = [np.broadcast_to(np.asarray(x, float), (self.n,)) for x in (amp, phase, offset)]
        return np.concatenate([[float(freq)], *b])

    def bounds(self, freq=(0.1, 3.0), amp: float = 1.0, offset: float = 1.0) -> list:
        """``[lower, upper]`` of the parameters for :func:`pbsim.optim.cmaes.cmaes` (phases free)."""
        n, big = self.n, 1e3
        lo = np.concatenate([[freq[0]], np.full(n, -amp), np.full(n, -big), np.full(n, -offset)])
        hi = np.concatenate([[freq[1]], np.full(n, amp), np.full(n, big), np.full(n, offset)])
        return [lo, hi]

    def actions(self, P, t: float) -> np.ndarray:
        """(B, n) actions of the parameter rows ``P`` (B, size) at time ``t``."""
        P = np.atleast_2d(P)
        n = self.n
        f = np.clip(P[:, :1], 0.0, 5.0)
        a = P[:, 1 + 2 * n :] + P[:, 1 : 1 + n] * np.sin(2 * np.pi * f * t + P[:, 1 + n : 1 + 2 * n])
        return np.clip(a, -self.limit, self.limit)


def gait_rollout(task: str, gait: SineGait, P, steps: int, seed: int = 0, env=None, **env_kwargs) -> dict:
    """Run the gaits ``P`` (B, size) on ``B`` copies of ready task ``task`` for ``steps`` steps
    (an episode ends at termination; nothing after it counts), every row from the start that
    ``seed`` draws (so controllers are compared on the same initial state).  Returns per row ``return``,
    ``distance`` (forward x travelled while alive: the sum of ``x_velocity * dt``), ``alive_s``,
    ``diverged``, and ``path`` ((steps + 1, B) x of the root, for plots)."""
    P = np.atleast_2d(np.asarray(P, np.float64))
    B = P.shape[0]
    if env is None or env.num_envs != B:
        env = RobotVectorEnv(B, **TASKS[task](**env_kwargs))
    env.reset(seed=[seed] * B)  # every controller from the same start (the reset noise of seed)
    dt = env.dt
    ret = np.zeros(B)
    dist = np.zeros(B)
    alive = np.ones(B, bool)
    alive_s = np.zeros(B)
    div = np.zeros(B, bool)
    path = [env.core.q[:, 0].copy()]
    for k in range(int(steps)):
        a = gait.actions(P, (k + 1) * dt).astype(np.float32)
        _, r, term, trunc, info = env.step(a)
        ret += np.where(alive, r, 0.0)
        dist += np.where(alive, info["x_velocity"] * dt, 0.0)
        alive_s += alive * dt
        div |= alive & info["diverged"]
        alive &= ~(term | trunc)
        path.append(np.where(alive, env.core.q[:, 0], np.nan))
        if not alive.any():
            break
    return dict(returns=ret, distance=dist, alive_s=alive_s, diverged=div, path=np.array(path), env=env)


def gait_objective(task: str, gait: SineGait, steps: int, metric: str = "distance", seed: int = 0, **env_kwargs):
    """``objective(P) -> (P,)`` for :func:`pbsim.optim.cmaes.cmaes` (``maximize=True``): each
    population is one batched rollout; ``metric`` "distance" (forward metres) or "return" (the
    task's reward summed over the episode times dt).  A diverged rollout scores NaN (the optimizer
    discards it)."""
    if metric not in ("distance", "return"):
        raise ValueError(f"metric must be 'distance' or 'return', got {metric!r}")
    cache = {}

    def objective(P):
        r = gait_rollout(task, gait, P, steps, seed=seed, env=cache.get("env"), **env_kwargs)
        cache["env"] = r["env"]
        val = r["distance"] if metric == "distance" else r["returns"] * r["env"].dt
        return np.where(r["diverged"], np.nan, val)

    return objective


def task_gait(task: str, **env_kwargs) -> SineGait:
    """A :class:`SineGait` over the actuated joints of ready task ``task``."""
    env = RobotVectorEnv(1, **TASKS[task](**env_kwargs))
    return SineGait(int(env.single_action_space.shape[0]))


# the initial controllers of the examples: a weak travelling wave (swimmer), standing still (spider)
def initial_params(task: str, gait: SineGait) -> np.ndarray:
    if task == "Swimmer":
        return gait.params(0.5, 0.3, np.arange(gait.n) * np.pi / 4)
    return gait.params(1.0, 0.0, 0.0)


# the examples' search boxes: a gentle spider gait (the paper's trot: 1 Hz, 0.35 rad)
GAIT_LIMITS = {"Spider": dict(freq=(0.3, 1.5), amp=0.6, offset=0.5), "Swimmer": dict(freq=(0.1, 2.0), amp=1.2)}


def train_gait(
    task: str,
    generations: int = 30,
    popsize: int = 16,
    sigma0: float = 0.3,
    steps: int = 200,
    seed: int = 0,
    metric: str = "distance",
    x0=None,
    callback=None,
    **env_kwargs,
) -> dict:
    """CMA-ES (:func:`pbsim.optim.cmaes.cmaes`) on a :class:`SineGait` of ready task ``task``,
    each generation one batched rollout of ``popsize`` controllers for ``steps`` steps.  Returns
    ``result`` (the CmaResult), ``gait``, ``x0``, and ``initial`` / ``best``: the
    :func:`gait_rollout` summaries (distance, return, alive time) of the initial and the best
    controller."""
    from pbsim.optim.cmaes import cmaes

    gait = task_gait(task, **env_kwargs)
    x0 = initial_params(task, gait) if x0 is None else np.asarray(x0, float)
    obj = gait_objective(task, gait, steps, metric=metric, seed=seed, **env_kwargs)
    lim = GAIT_LIMITS.get(task, {})
    res = cmaes(
        obj,
        x0,
        sigma0=sigma0,
        generations=generations,
        popsize=popsize,
        seed=seed,
        maximize=True,
        callback=callback,
        bounds=gait.bounds(**lim),
    )
    both = gait_rollout(task, gait, np.stack([x0, res.x]), steps, seed=seed, **env_kwargs)
    summary = [{k: float(both[k][i]) for k in ("distance", "returns", "alive_s")} for i in range(2)]
    return dict(result=res, gait=gait, x0=x0, initial=summary[0], best=summary[1], path=both["path"], dt=both["env"].dt)


def progress_printer():
    """A :func:`train_gait` ``callback`` that prints one line per generation (rollouts so far,
    the generation's best and median, the best so far, sigma, failed rollouts, wall time)."""
    import time

    t0 = time.perf_counter()

    def progress(g, res):
        h = res.history
        print(
            f"gen {g:3d}  rollouts {h['evaluations'][-1]:5d}  best {h['best'][-1]:+.4g}  median "
            f"{h['median'][-1]:+.4g}  best so far {h['best_so_far'][-1]:+.4g}  sigma {h['sigma'][-1]:.3g}  "
            f"failed {h['failed'][-1]}  {time.perf_counter() - t0:.1f} s",
            flush=True,
        )

    return progress


def plot_training(out, task: str, run: dict, title: str = "") -> None:
    """Learning curve (best / median of each generation, best so far) and the x path of the initial
    and the best controller, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    h = run["result"].history
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    ax[0].plot(h["evaluations"], h["best_so_far"], label="best so far")
    ax[0].plot(h["evaluations"], h["best"], ".", label="generation best")
    ax[0].plot(h["evaluations"], h["median"], label="generation median")
    ax[0].axhline(run["initial"]["distance"], color="gray", ls="--", label="initial controller")
    ax[0].set_xlabel("rollouts")
    ax[0].set_ylabel("objective")
    ax[0].legend()
    ax[0].set_title(title or f"{task}: CMA-ES learning curve")
    t = np.arange(run["path"].shape[0]) * run["dt"]
    ax[1].plot(t, run["path"][:, 0] - run["path"][0, 0], label="initial")
    ax[1].plot(t, run["path"][:, 1] - run["path"][0, 1], label="best")
    ax[1].set_xlabel("t [s]")
    ax[1].set_ylabel("root x [m]")
    ax[1].legend()
    ax[1].set_title("forward progress")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
