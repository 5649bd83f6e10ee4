"""scripts/examples/train_hopper_ppo.py in miniature: the numpy MLP's backprop against finite differences,
and two PPO updates on 4 hoppers of the native vector env writing the curve and the policy."""

import os
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("gymnasium")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ppo():
    env = dict(os.environ)
    sys.path.insert(0, str(ROOT / "scripts" / "examples"))
    try:
        import train_hopper_ppo
    finally:
        sys.path.remove(str(ROOT / "scripts" / "examples"))
        os.environ.clear()  # the script sets BLAS thread variables for its own process
        os.environ.update(env)
    return train_hopper_ppo


def test_mlp_backward_matches_finite_differences(ppo):
    rng = np.random.default_rng(0)
    m = ppo.MLP([5, 7, 6, 3], rng)
    x, w = rng.standard_normal((4, 5)), rng.standard_normal((4, 3))

    def f():
        return float((m.forward(x) * w).sum())

    f()
    grads = m.backward(w)
    for p, g in zip(m.params(), grads):
        for _ in range(3):
            i = tuple(int(rng.integers(0, s)) for s in p.shape)
            old = p[i]
            p[i] = old + 1e-6
            fp = f()
            p[i] = old - 1e-6
            fm = f()
            p[i] = old
            assert (fp - fm) / 2e-6 == pytest.approx(g[i], abs=1e-7)


def test_two_ppo_updates_write_curve_and_policy(ppo, tmp_path):
    args = ["--steps", "256", "--num-envs", "4", "--n-steps", "32", "--epochs", "2", "--minibatch", "64"]
    args += ["--eval-every", "1", "--plot", str(tmp_path / "c.png"), "--out", str(tmp_path / "p.npz")]
    hist = ppo.main(args)
    assert list(hist["env_steps"]) == [128, 256]
    assert len(hist["eval_return"]) == 3 and np.all(np.isfinite(hist["eval_return"]))
    assert (tmp_path / "c.png").stat().st_size > 0
    z = np.load(tmp_path / "p.npz")
    assert z["pi_W0"].shape == (11, 64) and z["log_std"].shape == (3,) and z["obs_mean"].shape == (11,)
