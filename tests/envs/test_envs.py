"""pbsim.envs: gymnasium's check_env on every registered environment, the native vector env
against single environments stepped one by one (bit-identical, autoreset and truncation
included), the generic RobotEnv's control modes and errors."""

import warnings

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from pbsim.envs import ENV_IDS, RobotEnv, RobotVectorEnv  # noqa: E402
from pbsim.errors import InputError  # noqa: E402


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env(env_id):
    from gymnasium.utils.env_checker import check_env

    env = gymnasium.make(env_id)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped, skip_render_check=True)
    # unbounded Box observations are what gymnasium's own MuJoCo environments declare too
    other = [str(w.message) for w in caught if "infinity" not in str(w.message)]
    assert not other, other
    obs, _ = env.reset(seed=1)
    for _ in range(3):
        obs, r, term, trunc, info = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs) and np.isfinite(r)


def _compare(env_id, B, steps, seed, scale, **kw):
    single = gymnasium.vector.SyncVectorEnv([lambda: gymnasium.make(env_id, **kw) for _ in range(B)])
    vec = gymnasium.make_vec(env_id, num_envs=B, vectorization_mode="vector_entry_point", **kw)
    assert isinstance(vec.unwrapped, RobotVectorEnv)
    o1, _ = single.reset(seed=seed)
    o2, _ = vec.reset(seed=seed)
    np.testing.assert_array_equal(o1, o2)
    rng = np.random.default_rng(seed)
    ends = 0
    for _ in range(steps):
        a = (scale * rng.uniform(-1, 1, (B,) + single.single_action_space.shape)).astype(np.float32)
        r1 = single.step(a)
        r2 = vec.step(a)
        for x, y in zip(r1[:4], r2[:4]):
            np.testing.assert_array_equal(x, y)
        ends += int((r1[2] | r1[3]).sum())
    return ends


def test_vector_env_equals_single_envs_hopper():
    """Hopper under euler: 3 envs, 40 steps with strong random actions (falls -> terminations),
    a 15-step time limit (truncations); every obs, reward, terminated, truncated bit-identical."""
    ends = _compare("pbsim/Hopper-v0", 3, 40, 7, 1.0, max_episode_steps=15)
    assert ends >= 3  # the autoreset path ran


def test_vector_env_equals_single_envs_pbad_spider():
    """The spider under PBAD (LM inside the kernel): 2 envs, 6 steps, time limit 4."""
    ends = _compare("pbsim/Spider-v0", 2, 6, 3, 0.5, max_episode_steps=4)
    assert ends >= 2


def test_robot_env_modes_and_errors():
    import pbsim_models

    m = pbsim_models.chain(3) if hasattr(pbsim_models, "chain") else pbsim_models.swimmer()
    for mode in ("torque", "spd", "pd"):
        scale = 0.01 if mode == "torque" else 0.5  # N m on 0.1 kg links / rad
        env = RobotEnv(m, "euler", 0.002, 2, mode, kp=1.0, kd=0.1, action_scale=scale)
        obs, _ = env.reset(seed=0)
        assert obs.shape == env.observation_space.shape
        obs, r, term, trunc, info = env.step(env.action_space.sample())
        assert np.isfinite(obs).all() and not info["diverged"]
    # a torque far beyond the model: the shared divergence rule ends the episode
    env = RobotEnv(m, "euler", 0.01, 2, "torque", action_scale=1e4)
    env.reset(seed=0)
    obs, r, term, trunc, info = env.step(np.ones(env.action_space.shape, np.float32))
    assert term and info["diverged"]
    with pytest.raises(InputError):
        RobotEnv(m, "euler", 0.01, 1, "ctrl")  # no actuators
    with pytest.raises(InputError):
        RobotEnv(m, "euler", 0.01, 1, "velocity")
    with pytest.raises(InputError):
        RobotEnv(m, "euler", -0.01, 1, "spd")
    with pytest.raises(InputError):
        RobotEnv(m, "euler", 0.01, 1, "spd", integrator_options={"no_such_option": 1})
    # the vector env's arguments in the wrong order, or a count that is not an integer, are named
    with pytest.raises(InputError, match="num_envs must be an integer, got Model .the model goes second"):
        RobotVectorEnv(m, 2, control="torque")
    with pytest.raises(InputError, match="num_envs must be an integer, got float"):
        RobotVectorEnv(2.0, m, control="torque")
    with pytest.raises(InputError, match="num_envs must be >= 1"):
        RobotVectorEnv(0, m, control="torque")


def test_integrator_and_dt_are_arguments():
    env = gymnasium.make("pbsim/Hopper-v0", integrator="explicit_euler", dt=0.001, frame_skip=3)
    assert env.unwrapped.core.integrator == "explicit_euler" and env.unwrapped.dt == pytest.approx(0.003)
    env.reset(seed=0)
    obs, r, *_ = env.step(np.zeros(3, np.float32))
    assert np.isfinite(obs).all()


def _step_both(make, actions):
    """Step a compiled-path and a Python-path environment (``make(fast)``) with the same actions;
    assert every output equal; return the compiled one's infos."""
    envs = [make(True), make(False)]
    assert envs[0].core.fast is not None and envs[1].core.fast is None
    for e in envs:
        e.reset(seed=5)
    infos = []
    for a in actions:
        r1, r2 = (e.step(a) for e in envs)
        for x, y in zip(r1[:4], r2[:4]):
            np.testing.assert_array_equal(x, y)
        assert set(r1[4]) == set(r2[4])
        for k in r2[4]:
            np.testing.assert_array_equal(r1[4][k], r2[4][k], err_msg=k)
        infos.append(r1[4])
    return infos


def test_compiled_env_step_equals_python_path():
    """pbsim.envs.step (one compiled call per environment step) against the Python path around
    CpuBatch: hopper's motors with autoreset and truncation (vector env, 3 rows), plain torques
    and stable-PD targets (single env), and a torque far beyond the model, where both flag the
    divergence and end the episode."""
    from pbsim.envs.tasks import hopper

    rng = np.random.default_rng(2)
    acts = rng.uniform(-1, 1, (40, 3, 3))
    infos = _step_both(lambda f: RobotVectorEnv(3, max_episode_steps=12, **hopper(fast=f)), acts)
    assert any(i["reward_survive"].min() == 0 for i in infos)  # falls happened
    d = hopper()
    for mode, scale, kw in (("torque", 20.0, {}), ("spd", 0.5, dict(kp=200.0, kd=5.0))):
        d.update(control=mode, action_scale=scale, **kw)
        _step_both(lambda f: RobotEnv(**{**d, "fast": f}), acts[:15, 0])
    d.update(control="torque", action_scale=1e7)
    infos = _step_both(lambda f: RobotEnv(**{**d, "fast": f}), [np.ones(3)])
    assert infos[0]["diverged"]


def test_compiled_env_step_refuses_bad_actions():
    env = gymnasium.make_vec("pbsim/Hopper-v0", num_envs=2, vectorization_mode="vector_entry_point")
    assert env.unwrapped.core.fast is not None
    env.reset(seed=0)
    with pytest.raises(InputError, match="shape"):
        env.step(np.zeros((2, 4)))
    with pytest.raises(InputError, match="NaN"):
        env.step(np.full((2, 3), np.nan))
