import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from planetrl.config import EnvConfig
from planetrl.envs import registry
from planetrl.envs.make import decisions_per_episode, make_batch_env, make_env
from planetrl.envs.mock import MockEnv


@pytest.mark.parametrize(
    "task, size",
    [("mock", 16), ("cartpole-swingup", 64), ("gym:CartPole-v1", 32), ("gym:Pendulum-v1", 64)],
)
def test_gymnasium_checker_passes(task, size):
    env = make_env(EnvConfig(task=task, image_size=size), seed=0)
    try:
        check_env(env, skip_render_check=True)
        obs, _ = env.reset(seed=0)
        assert obs["image"].shape == (size, size, 3) and obs["image"].dtype == np.uint8
        assert obs["image"].std() > 0  # a real picture, not a blank frame
    finally:
        env.close()


def test_paper_action_repeats_and_episode_lengths():
    expected = {"cartpole-swingup": 8, "reacher-easy": 4, "cheetah-run": 4, "finger-spin": 2,
                "cup-catch": 4, "walker-walk": 2, "cartpole-balance": 8}
    for name, repeat in expected.items():
        spec = registry.resolve(name)
        assert spec.action_repeat == repeat and spec.episode_steps == 1000
        assert decisions_per_episode(EnvConfig(task=name)) == 1000 // repeat


def test_dmc_episode_ends_truncated_after_1000_env_steps():
    env = make_env(EnvConfig(task="cartpole-swingup", image_size=16, fast_render=True))
    env.reset(seed=0)
    steps, done = 0, False
    while not done:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        steps += 1
        done = terminated or truncated
    assert steps == 125 and truncated and not terminated
    env.close()


def test_discrete_gym_task_keeps_a_discrete_space():
    env = make_env(EnvConfig(task="gym:CartPole-v1", image_size=32))
    assert isinstance(env.action_space, gym.spaces.Discrete)
    env.close()


def test_unknown_task_suggests_close_names():
    with pytest.raises(ValueError, match="Did you mean: cartpole-swingup"):
        registry.resolve("cartpole-swingpu")
    with pytest.raises(ValueError, match="unknown Gymnasium id"):
        registry.resolve("gym:NoSuchEnv-v0")


def make_custom(size, seed, fast_render):
    return MockEnv(durations=(7,), image_size=size)


def test_custom_task_registers_and_runs_in_processes():
    registry.register(registry.TaskSpec("custom-seven", make_custom, action_repeat=1, episode_steps=0),
                      overwrite=True)
    with pytest.raises(ValueError, match="already registered"):
        registry.register(registry.TaskSpec("custom-seven", make_custom))
    with pytest.raises(ValueError, match="'custom-bad': action_repeat must be at least 1, got 0"):
        registry.register(registry.TaskSpec("custom-bad", make_custom, action_repeat=0))
    with pytest.raises(ValueError, match=r"'custom-bad': episode_steps must be at least 0 .*got -5"):
        registry.register(registry.TaskSpec("custom-bad", make_custom, episode_steps=-5))
    with pytest.raises(ValueError, match="unknown task 'custom-bad'"):
        registry.resolve("custom-bad")  # refused specs are not registered
    batch = make_batch_env(EnvConfig(task="custom-seven", image_size=24, processes=2), 2)
    try:
        obs = batch.reset()
        assert obs["image"].shape == (2, 24, 24, 3)
    finally:
        batch.close()


def test_fast_render_changes_the_look_but_not_the_state():
    slow = make_env(EnvConfig(task="cartpole-swingup", image_size=64, fast_render=False))
    fast = make_env(EnvConfig(task="cartpole-swingup", image_size=64, fast_render=True))
    a, _ = slow.reset(seed=1)
    b, _ = fast.reset(seed=1)
    np.testing.assert_array_equal(a["state"], b["state"])
    difference = np.abs(a["image"].astype(int) - b["image"].astype(int)).mean()
    assert 0 < difference < 20  # shadows and anti-aliasing differ; the scene is the same
    slow.close()
    fast.close()
