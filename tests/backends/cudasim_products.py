"""The GPU path through the products that batch it, under numba's CUDA simulator: the gymnasium
vector environment (``RobotVectorEnv(..., device="cuda")``) and a sweep point
(``pbsim.sweep.run_point`` with ``device="cuda"``) against the same on the CPU.  Run as a script in a
process where ``NUMBA_ENABLE_CUDASIM=1`` was set before numba.cuda was imported; prints
``ENV max|dobs| ... max|drew| ... steps N resets R`` and ``SWEEP cpu ... cuda ...`` lines.

    NUMBA_ENABLE_CUDASIM=1 python tests/backends/cudasim_products.py
"""

import numpy as np

import pbsim_models
from pbsim.backends import cuda as pc
from pbsim.envs import RobotVectorEnv
from pbsim.sweep import DEFAULTS, run_point


def env_run(device, m):
    def reward(model, q0, v0, q1, v1, action, dt):
        return -np.abs(q1).sum(axis=1), {"speed": np.abs(v1).sum(axis=1)}

    def terminated(model, q, v):  # ends some episodes inside the run, so autoreset is exercised
        return np.abs(q[:, 0]) > 0.25

    env = RobotVectorEnv(
        3, m, "euler", dt=0.01, frame_skip=2, control="torque", reward=reward, terminated=terminated,
        reset_noise=0.05, max_episode_steps=6, device=device,
    )  # fmt: skip
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(0)
    out, resets = [obs], 0
    for _ in range(10):
        obs, rew, term, trunc, info = env.step(rng.uniform(-1, 1, (3, env.single_action_space.shape[0])))
        resets += int((term | trunc).sum())
        out.append(np.concatenate([obs, rew[:, None], info["speed"][:, None]], axis=1))
    return out, resets


def main():
    assert pc.simulated(), "set NUMBA_ENABLE_CUDASIM=1 before running this script"
    m = pbsim_models.chain(2)
    cpu, r_cpu = env_run("cpu", m)
    gpu, r_gpu = env_run("cuda", m)
    d = max(np.abs(a[:, : a.shape[1]] - b).max() for a, b in zip(cpu, gpu))
    print(f"ENV max|d| {d:.3e} steps {len(cpu) - 1} resets {r_cpu} {r_gpu}", flush=True)
    point = {**DEFAULTS, "model": "chain2", "integrator": "euler", "dt": 0.01, "steps": 20, "batch": 3,
             "noise": 0.1, "record_every": 5}  # fmt: skip
    rows = {dev: run_point(m, {**point, "device": dev}) for dev in ("cpu", "cuda")}
    for dev, r in rows.items():
        print(
            f"SWEEP {dev} status {r['status']} t_end {r.get('t_end')} energy_end {r.get('energy_end')!r} "
            f"error {r.get('error', '')!r}",
            flush=True,
        )


if __name__ == "__main__":
    main()
