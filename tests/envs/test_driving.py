import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from planetrl.config import EnvConfig
from planetrl.envs.make import make_env


@pytest.mark.parametrize("size", [64, 128])
def test_highway_renders_real_frames_at_both_sizes(size):
    env = make_env(EnvConfig(task="highway", image_size=size), seed=0)
    try:
        obs, _ = env.reset(seed=0)
        assert obs["image"].shape == (size, size, 3)
        assert obs["image"].std() > 5  # lanes and cars, not a black frame
        assert env.action_space.shape == (2,)
        _, reward, *_ = env.step(np.array([0.5, 0.0], np.float32))
        assert 0.0 <= reward <= 1.0
    finally:
        env.close()


def _ego_pixels(frame: np.ndarray) -> int:
    """Pixels of highway-env's ego car color (200, 200, 0), within a small tolerance."""
    return int((np.abs(frame.astype(int) - (200, 200, 0)).max(-1) < 30).sum())


def test_a_closer_view_draws_the_cars_larger():
    counts = {}
    for meters in (40.0, 20.0):
        env = make_env(EnvConfig(task="highway", image_size=128, view_meters=meters), seed=0)
        try:
            obs, _ = env.reset(seed=0)
            counts[meters] = _ego_pixels(obs["image"])
        finally:
            env.close()
    assert counts[40.0] > 20
    assert 3.0 < counts[20.0] / counts[40.0] < 6.0  # half the span: about four times the area


def test_view_meters_on_a_task_that_is_not_driving_is_an_error():
    with pytest.raises(ValueError, match=r"view_meters=20\.0 applies to driving tasks"):
        make_env(EnvConfig(task="mock", image_size=16, view_meters=20.0), seed=0)


def test_highway_passes_the_gymnasium_checker():
    env = make_env(EnvConfig(task="highway", image_size=64), seed=0)
    try:
        check_env(env, skip_render_check=True)
    finally:
        env.close()


def _run_until_end(env, action):
    env.reset(seed=0)
    steps = 0
    while True:
        _, _, terminated, truncated, info = env.step(action if isinstance(action, int) else
                                                     np.asarray(action, np.float32))
        steps += 1
        if terminated or truncated:
            return terminated, truncated, steps, info


def test_highway_collision_is_terminal_and_the_time_limit_is_not():
    env = make_env(EnvConfig(task="highway", image_size=64, episode_steps=6), seed=0)
    try:
        terminated, truncated, steps, _ = _run_until_end(env, [0.0, 0.0])  # cruise: the 6-step limit ends it
        assert truncated and not terminated and steps == 6
    finally:
        env.close()
    env = make_env(EnvConfig(task="highway", image_size=64), seed=0)
    try:
        terminated, truncated, _, _ = _run_until_end(env, [1.0, 1.0])  # full throttle, steering off the road
        assert terminated and not truncated
        crashed = env.unwrapped.vehicle.crashed or not env.unwrapped.vehicle.on_road
        assert crashed
    finally:
        env.close()


@pytest.mark.parametrize("task, action, ends", [("gym:CartPole-v1", 1, "terminated"),
                                                 ("gym:Pendulum-v1", [0.0], "truncated")])
def test_gymnasium_terminated_and_truncated_are_kept_apart(task, action, ends):
    env = make_env(EnvConfig(task=task, image_size=32, pixels=False), seed=0)
    try:
        terminated, truncated, _, _ = _run_until_end(env, action)
        assert (terminated, truncated) == ((True, False) if ends == "terminated" else (False, True))
    finally:
        env.close()
