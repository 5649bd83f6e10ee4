"""``device="cuda"`` through the gymnasium vector environment and ``pbsim sweep`` (issue 31), under
the CUDA simulator: the same observations, rewards, resets and sweep rows as on the CPU; and a
sweep point on the GPU asks Ray for one whole GPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("numba.cuda", reason="numba-cuda is not installed (pip install 'numba-cuda>=0.30')")


def test_vector_env_and_sweep_point_on_the_device_equal_the_cpu():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "models"), env.get("PYTHONPATH", "")])
    env["NUMBA_ENABLE_CUDASIM"] = "1"
    r = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("cudasim_products.py"))],
        env=env,
        capture_output=True,
        text=True,
        timeout=float(os.environ.get("PBSIM_CUDASIM_TIMEOUT", "600")),
        cwd=ROOT,
    )
    out = r.stdout + r.stderr[-3000:]
    env_line = next((ln for ln in r.stdout.splitlines() if ln.startswith("ENV ")), None)
    assert env_line, out
    f = env_line.split()
    assert float(f[2]) <= 1e-10, env_line
    assert int(f[4]) == 10 and int(f[6]) == int(f[7]) > 0, env_line  # resets happened, the same ones
    sweep = {ln.split()[1]: ln.split() for ln in r.stdout.splitlines() if ln.startswith("SWEEP ")}
    assert set(sweep) == {"cpu", "cuda"}, out
    for dev, f in sweep.items():
        assert f[3] == "ok", f"{dev}: {' '.join(f)}"
    assert abs(float(sweep["cpu"][7]) - float(sweep["cuda"][7])) <= 1e-10


def test_a_gpu_point_asks_ray_for_one_gpu():
    from pbsim.sweep import task_options

    assert task_options({"device": "cuda"}, 2, 3) == {"num_cpus": 2, "max_retries": 3, "num_gpus": 1}
    assert "num_gpus" not in task_options({"device": "cpu"}, 1, 3)
    assert "num_gpus" not in task_options({}, 1, 3)


def test_env_device_is_checked():
    import pbsim_models
    from pbsim import InputError
    from pbsim.envs import RobotVectorEnv

    m = pbsim_models.chain(2)
    with pytest.raises(InputError, match="device"):
        RobotVectorEnv(2, m, "euler", control="torque", device="tpu")
    with pytest.raises(InputError, match="pbad3"):
        RobotVectorEnv(2, m, "pbad3", control="torque", device="cuda")
