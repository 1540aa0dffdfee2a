import gymnasium as gym
import numpy as np
import pytest

from planetrl.envs import wrappers as W
from planetrl.envs.mock import MockEnv, SimulatorCrash


def test_action_repeat_sums_rewards():
    inner = MockEnv(durations=(10,))
    env = W.ActionRepeat(MockEnv(durations=(10,)), 3)
    inner.reset(seed=1)
    env.reset(seed=1)
    action = np.array([0.5, 0.0], np.float32)
    expected = sum(inner.step(action)[1] for _ in range(3))
    _, reward, terminated, truncated, _ = env.step(action)
    assert reward == pytest.approx(expected)
    assert not terminated and not truncated


def test_action_repeat_stops_early_on_termination():
    env = W.ActionRepeat(MockEnv(durations=(4,), terminate=True), 3)
    env.reset(seed=0)
    env.step(np.zeros(2, np.float32))
    _, _, terminated, truncated, _ = env.step(np.zeros(2, np.float32))
    assert terminated and not truncated
    assert env.unwrapped._step == 4  # one inner step, not three, after the first decision


def test_time_limit_truncates_and_never_terminates():
    env = W.TimeLimit(MockEnv(durations=(10,)), 2)
    env.reset()
    assert env.step(np.zeros(2))[2:4] == (False, False)
    assert env.step(np.zeros(2))[2:4] == (False, True)
    with pytest.raises(RuntimeError, match="before reset"):
        env.step(np.zeros(2))


def test_time_limit_keeps_a_true_termination():
    env = W.TimeLimit(MockEnv(durations=(2,), terminate=True), 2)
    env.reset()
    env.step(np.zeros(2))
    assert env.step(np.zeros(2))[2:4] == (True, False)


class _WideBox(gym.Wrapper):
    def __init__(self, env):
        super().__init__(env)
        self.action_space = gym.spaces.Box(-2.0, 4.0, (2,), np.float32)
        self.seen = None

    def step(self, action):
        self.seen = np.array(action)
        return self.env.step(np.zeros(2, np.float32))


def test_normalize_actions_maps_unit_box_to_bounds():
    inner = _WideBox(MockEnv())
    env = W.NormalizeActions(inner)
    env.reset()
    assert env.action_space == gym.spaces.Box(-1, 1, (2,), np.float32)
    env.step(np.array([-1.0, 1.0]))
    np.testing.assert_allclose(inner.seen, [-2.0, 4.0])
    env.step(np.array([0.0, 5.0]))  # out of range is clipped to the bound
    np.testing.assert_allclose(inner.seen, [1.0, 4.0])


class _NaNReward(gym.Wrapper):
    def step(self, action):
        obs, _, term, trunc, info = self.env.step(action)
        return obs, float("nan"), term, trunc, info


def test_convert_to_32bit_casts_and_rejects_nan():
    env = W.ConvertTo32Bit(MockEnv())
    obs, _ = env.reset()
    assert obs["state"].dtype == np.float32 and obs["image"].dtype == np.uint8
    bad = W.ConvertTo32Bit(_NaNReward(MockEnv()))
    bad.reset()
    with pytest.raises(ValueError, match="reward is not finite"):
        bad.step(np.zeros(2))


def test_check_spaces_rejects_a_bad_action():
    env = W.CheckSpaces(MockEnv())
    env.reset()
    with pytest.raises(ValueError, match="outside the action space"):
        env.step(np.zeros(3))


def test_restart_on_exception_counts_restarts_and_truncates():
    env = W.RestartOnException(lambda: MockEnv(durations=(5,), crash_every=7), max_restarts=10)
    lengths, infos = [], []
    for _ in range(6):
        env.reset()
        length = 0
        while True:
            _, _, terminated, truncated, info = env.step(np.zeros(2, np.float32))
            length += 1
            if terminated or truncated:
                infos.append(info)
                break
        lengths.append(length)
    # Each fresh simulator crashes on its 7th step: one full episode, then a cut one.
    assert lengths == [5, 2, 5, 2, 5, 2]
    assert env.restarts == 3
    assert [bool(i.get("env_restarted")) for i in infos] == [False, True] * 3


def test_restart_on_exception_gives_up_after_too_many_crashes():
    env = W.RestartOnException(lambda: MockEnv(crash_every=1), max_restarts=2, window=60)
    env.reset()
    env.step(np.zeros(2))
    env.reset()
    env.step(np.zeros(2))
    env.reset()
    with pytest.raises(W.TooManyCrashes, match="3 times within 60 s") as info:
        env.step(np.zeros(2))
    assert isinstance(info.value.__cause__, SimulatorCrash)


def test_restart_on_exception_retries_a_failing_reset():
    attempts = []

    def constructor():
        attempts.append(1)
        return MockEnv(crash_on_reset=len(attempts) < 3)

    env = W.RestartOnException(constructor, max_restarts=5)
    obs, _ = env.reset()
    assert obs["image"].shape == (16, 16, 3)
    assert env.restarts == 2
