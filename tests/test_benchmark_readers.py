"""The facts the episode readers in benchmarks/ rest on, checked against the simulator."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from cheetah_flips import flipped_share, pitch_column


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
