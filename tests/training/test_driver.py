import numpy as np

from planetrl.agents.random import RandomAgent
from planetrl.data.episodes import EpisodeWriter, list_episodes, read_episode
from planetrl.envs.batch import BatchEnv
from planetrl.envs.mock import MockEnv
from planetrl.training.driver import Driver


class _Recorder:
    def __init__(self, agent):
        self.agent = agent
        self.resets = []

    def reset(self, indices):
        self.resets.append(list(indices))

    def act(self, obs, explore):
        return self.agent.act(obs, explore)

    def observe(self, transition):
        pass


def test_driver_runs_exactly_the_requested_episodes(tmp_path):
    envs = BatchEnv([MockEnv(durations=(3,)), MockEnv(durations=(5,))])
    agent = _Recorder(RandomAgent(envs.action_space, 2, seed=0))
    writer = EpisodeWriter(tmp_path)
    results = Driver(envs, agent, [writer], seed=0).run(5)
    assert len(results) == 5
    files = list_episodes(tmp_path)
    assert len(files) == 5
    lengths = sorted(r.length for r in results)
    assert lengths == [3, 3, 3, 5, 5]
    # Only the env whose episode ended is reset.
    assert agent.resets[0] == [0, 1]
    assert all(len(r) == 1 for r in agent.resets[1:])
    for path in files:
        episode = read_episode(path)
        assert episode["is_first"][0] and episode["is_last"][-1] and episode["is_first"].sum() == 1
        np.testing.assert_array_equal(episode["action"][0], 0)  # step 0: zero action and reward
        assert episode["reward"][0] == 0
        # The image encodes the step index: the writer kept steps in order.
        np.testing.assert_array_equal(episode["image"][:, 0, 0, 0], np.arange(len(episode["reward"])))


def test_episode_return_matches_the_rewards_written(tmp_path):
    envs = BatchEnv([MockEnv(durations=(4,))])
    writer = EpisodeWriter(tmp_path)
    results = Driver(envs, RandomAgent(envs.action_space, 1, seed=3), [writer], seed=1).run(2)
    for result, path in zip(results, writer.written, strict=True):
        assert np.isclose(read_episode(path)["reward"].sum(), result.score)


class _Keeper(_Recorder):
    """Keeps every observation it is given, as a learning agent does."""

    def __init__(self, agent):
        super().__init__(agent)
        self.kept = []

    def act(self, obs, explore):
        self.kept.append(obs)
        return self.agent.act(obs, explore)


def test_observations_given_to_the_agent_are_not_changed_afterwards():
    envs = BatchEnv([MockEnv(durations=(5,))])
    agent = _Keeper(RandomAgent(envs.action_space, 1, seed=0))
    Driver(envs, agent).run(1)
    # The image's red channel is the step index: observation t must still say t.
    assert [int(o["image"][0, 0, 0, 0]) for o in agent.kept] == list(range(5))
