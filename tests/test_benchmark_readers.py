"""The facts the episode readers in benchmarks/ rest on, checked against the simulator."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from cheetah_flips import flipped_share, nose_down_share, pitch_column, speed_column


def test_cheetah_flips_reads_the_root_pitch_from_the_flattened_state():
    from dm_control import suite

    env = suite.load("cheetah", "run", task_kwargs={"random": 0})
    env.reset()
    states = []
    for pitch in (0.0, 0.5, np.pi, -2.0):
        with env.physics.reset_context():
            env.physics.named.data.qpos["rooty"] = pitch
        observation = env.task.get_observation(env.physics)
        states.append(np.concatenate([np.asarray(v).reshape(-1) for v in observation.values()]))
    states = np.array(states)
    np.testing.assert_allclose(states[:, pitch_column()], [0.0, 0.5, np.pi, -2.0])
    assert flipped_share({"state": states}, pitch_column()) == 0.5  # pi and -2 rad are on its back
    assert nose_down_share({"state": states}, pitch_column()) == 0.0  # 0.5 rad is under 45 degrees


def test_cheetah_flips_reads_the_forward_speed_and_which_pitch_lowers_the_front():
    from dm_control import suite

    env = suite.load("cheetah", "run", task_kwargs={"random": 0})
    env.reset()
    physics = env.physics
    with physics.reset_context():
        physics.named.data.qpos["rooty"] = 1.0
        physics.named.data.qvel["rootx"] = 2.5
    front, back = physics.named.data.xpos["fthigh"][2], physics.named.data.xpos["bthigh"][2]
    assert front < back  # a positive pitch tips the cheetah onto its front
    observation = env.task.get_observation(physics)
    state = np.concatenate([np.asarray(v).reshape(-1) for v in observation.values()])[None]
    assert state[0, speed_column()] == 2.5
    assert nose_down_share({"state": state}, pitch_column()) == 1.0  # 57 degrees, front down
    assert nose_down_share({"state": -state}, pitch_column()) == 0.0  # the same tilt onto its back legs


def test_cheetah_reward_by_pose_splits_level_nose_down_and_flipped_steps():
    from cheetah_flips import poses
    from cheetah_reward_by_pose import by_pose

    pitch = np.array([0.0, 1.0, -1.0, np.pi, 2.0])  # level, front down, back legs down, on its back twice
    np.testing.assert_array_equal(poses(pitch), [0, 1, 0, 2, 2])
    split = by_pose(np.array([1.0, 0.1, 0.5, 0.2, 0.4]), np.array([0.8, 0.3, 0.6, 0.1, 0.1]), poses(pitch))
    assert split == {"level": {"steps": 2, "true": 0.75, "predicted": 0.7},
                     "nose_down": {"steps": 1, "true": 0.1, "predicted": 0.3},
                     "flipped": {"steps": 2, "true": 0.3, "predicted": 0.1}}
    assert set(by_pose(np.ones(2), np.ones(2), np.zeros(2, int))) == {"level"}


def _highway_episode(lateral_end: float, terminal: bool) -> dict:
    steps = 4
    state = np.zeros((steps, 5, 5), np.float32)
    state[:, 0, 3] = [0.1, 0.2, 0.3, 0.4]  # the ego car's speed after each step
    state[:, 0, 2] = 0.25
    state[-1, 0, 2] = lateral_end
    return {"state": state.reshape(steps, 25), "reward": np.array([0.0, 0.7, 0.8, 0.9], np.float32),
            "is_terminal": np.arange(steps) == steps - 1 if terminal else np.zeros(steps, bool)}


def test_highway_hazard_counts_a_collision_at_the_speed_of_the_decision_that_caused_it():
    from highway_hazard import decisions

    speed, crash, reward = decisions(_highway_episode(0.25, terminal=True))
    np.testing.assert_allclose(speed, [0.1, 0.2, 0.3])  # decision t is taken in state t-1
    np.testing.assert_array_equal(crash, [0, 0, 1])
    np.testing.assert_allclose(reward, [0.7, 0.8, 0.9])
    assert decisions(_highway_episode(0.95, terminal=True))[1].sum() == 0  # off the road: not a collision
    assert decisions(_highway_episode(0.25, terminal=False))[1].sum() == 0  # the time limit


def test_spinner_speed_reads_the_hinge_and_splits_a_mixed_run_by_its_noise(tmp_path):
    from dm_control import suite

    from planetrl import config as config_lib
    from spinner_speed import groups, hinge_column

    env = suite.load("finger", "spin", task_kwargs={"random": 0})
    env.reset()
    with env.physics.reset_context():
        env.physics.named.data.qvel["hinge"] = -17.0
    observation = env.task.get_observation(env.physics)
    assert np.concatenate([np.asarray(v).reshape(-1) for v in observation.values()])[hinge_column()] == -17.0

    episodes = [{"id": n} for n in range(9)]  # two seed episodes, then seven collected
    config_lib.save(config_lib.build(overrides=["planner.mixed_noise=1.0", "planner.mixed_every=3"]),
                    tmp_path / "config.yaml")
    split = groups(tmp_path, episodes, seeds=2)
    assert [kind for kind, _ in split] == ["seed", "planner mixed_noise 1.0", "planner exploration_noise 0.3"]
    assert [[e["id"] for e in group] for _, group in split] == [[0, 1], [2, 5, 8], [3, 4, 6, 7]]
    config_lib.save(config_lib.build(), tmp_path / "config.yaml")
    assert [len(group) for _, group in groups(tmp_path, episodes, seeds=2)] == [2, 7]
