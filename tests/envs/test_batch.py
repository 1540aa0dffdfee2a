import functools

import numpy as np
import pytest

from planetrl.envs.batch import BatchEnv
from planetrl.envs.mock import MockEnv
from planetrl.envs.process import ExternalProcess


def _make(index):
    return MockEnv(durations=(3 + index, 6), action_size=2)


@pytest.mark.parametrize("processes", [False, True])
def test_batch_equals_stepping_one_by_one(processes):
    count = 3
    if processes:
        envs = [ExternalProcess(functools.partial(_make, i)) for i in range(count)]
    else:
        envs = [_make(i) for i in range(count)]
    batch = BatchEnv(envs)
    single = [_make(i) for i in range(count)]
    rng = np.random.default_rng(0)
    try:
        obs = batch.reset(seeds=[10, 11, 12])
        for i, env in enumerate(single):
            np.testing.assert_array_equal(obs["image"][i], env.reset(seed=10 + i)[0]["image"])
        for _ in range(3):
            actions = rng.uniform(-1, 1, (count, 2)).astype(np.float32)
            obs, rewards, terminated, truncated, _ = batch.step(actions)
            for i, env in enumerate(single):
                o, r, te, tr, _ = env.step(actions[i])
                np.testing.assert_array_equal(obs["image"][i], o["image"])
                np.testing.assert_array_equal(obs["state"][i], o["state"])
                assert rewards[i] == np.float32(r) and terminated[i] == te and truncated[i] == tr
        # env 0 (3 steps) has ended; the others have not: ends are per env.
        assert truncated.tolist() == [True, False, False]
        batch.reset([0], seeds=[5])
        obs, *_ = batch.step(np.zeros((2, 2), np.float32), indices=[0, 2])
        assert obs["image"].shape[0] == 2
        assert obs["state"][0, 0] == 1  # env 0 took the first step of its new episode
    finally:
        batch.close()


def test_batch_rejects_mismatched_actions():
    batch = BatchEnv([MockEnv(), MockEnv()])
    batch.reset()
    with pytest.raises(ValueError, match="got 1 actions for 2 environments"):
        batch.step(np.zeros((1, 2)))
