"""DeepMind Control Suite tasks from pixels, rendered headless."""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np

from planetrl.config_values import did_you_mean


def ensure_headless_gl() -> None:
    """Default MuJoCo to EGL rendering when the user has not chosen a backend."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    if os.environ["MUJOCO_GL"] == "egl":
        os.environ.setdefault("PYOPENGL_PLATFORM", "egl")


def check_dmc_task(domain: str, task: str) -> None:
    """Fail with the list of known tasks unless (domain, task) is in the DeepMind Control Suite."""
    ensure_headless_gl()
    from absl import logging as absl_logging
    from dm_control import suite

    absl_logging.set_verbosity(absl_logging.ERROR)  # dm_control's INFO and deprecation lines are noise here
    if (domain, task) not in suite.ALL_TASKS:
        names = [f"{d}-{t}" for d, t in suite.ALL_TASKS]
        hint = did_you_mean(f"{domain}-{task}", names, cutoff=0.6)
        raise ValueError(f"unknown DMC task '{domain}-{task}'.{hint} Known: {', '.join(names)}")


class DMCEnv(gym.Env):
    """A dm_control suite task with a dict observation: `image` uint8 and `state` float32.

    `fast_render` turns off shadows and multisampling, which makes software
    rendering about 5x faster; images lose soft shadows and edge smoothing.
    """

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(
        self, domain: str, task: str, size: int = 64, camera: int = 0, fast_render: bool = False, seed: int = 0,
        render: bool = True,
    ) -> None:
        check_dmc_task(domain, task)
        from dm_control import suite

        self._env = suite.load(domain, task, task_kwargs={"random": seed})
        self._size = size
        self._camera = camera
        self._pixels = render
        if fast_render:
            model = self._env.physics.model
            model.vis.quality.shadowsize = 0
            model.vis.quality.offsamples = 0
            model.light_castshadow[:] = 0
        self.render_mode = "rgb_array"
        spec = self._env.action_spec()
        self.action_space = gym.spaces.Box(spec.minimum.astype(np.float32), spec.maximum.astype(np.float32),
                                           spec.shape, np.float32)
        state_size = sum(int(np.prod(s.shape)) for s in self._env.observation_spec().values())
        spaces = {"state": gym.spaces.Box(-np.inf, np.inf, (state_size,), np.float32)}
        if render:
            spaces["image"] = gym.spaces.Box(0, 255, (size, size, 3), np.uint8)
        self.observation_space = gym.spaces.Dict(spaces)

    def _observe(self, time_step: Any) -> dict[str, np.ndarray]:
        state = np.concatenate([np.asarray(v, np.float32).reshape(-1) for v in time_step.observation.values()])
        return {"image": self.render(), "state": state} if self._pixels else {"state": state}

    def render(self) -> np.ndarray:
        return self._env.physics.render(self._size, self._size, camera_id=self._camera)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self._env.task.random.seed(seed)
        return self._observe(self._env.reset()), {}

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        time_step = self._env.step(np.asarray(action, np.float64))
        reward = float(time_step.reward or 0.0)
        last = time_step.last()
        terminated = last and time_step.discount == 0
        truncated = last and not terminated
        return self._observe(time_step), reward, bool(terminated), bool(truncated), {}

    def close(self) -> None:
        self._env.close()
