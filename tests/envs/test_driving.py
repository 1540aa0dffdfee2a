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


def test_highway_passes_the_gymnasium_checker():
    env = make_env(EnvConfig(task="highway", image_size=64), seed=0)
    try:
        check_env(env, skip_render_check=True)
    finally:
        env.close()
