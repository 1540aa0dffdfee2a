"""A deterministic mock environment for tests and the `debug` preset.

The image encodes the step index, the seed and the last action, the reward is a fixed
function of both, and episodes last for configurable durations, so every
layer above it can be checked against values computed by hand. It can also be
told to crash, to exercise restart-on-exception and process-death handling.
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np


class SimulatorCrash(RuntimeError):
    """Raised by MockEnv when asked to fail, like a simulator's step error."""


class MockEnv(gym.Env):
    """Deterministic pixel env: durations cycle per episode, reward = -|a - target(t)|."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(
        self,
        durations: tuple[int, ...] = (10,),
        image_size: int = 16,
        action_size: int = 2,
        terminate: bool = False,
        crash_every: int = 0,
        crash_mode: str = "raise",
        crash_on_reset: bool = False,
        discrete: int = 0,
    ) -> None:
        if not durations or min(durations) < 1:
            raise ValueError(f"durations must be positive integers, got {durations!r}")
        if crash_mode not in ("raise", "exit"):
            raise ValueError(f"crash_mode must be 'raise' or 'exit', got {crash_mode!r}")
        self._durations = tuple(int(d) for d in durations)
        self._size = int(image_size)
        self._terminate = terminate
        self._crash_every = crash_every
        self._crash_mode = crash_mode
        self._crash_on_reset = crash_on_reset
        self._episode = -1
        self._step = 0
        self._total_steps = 0
        self._offset = 0.0
        self._last_action = np.zeros(max(action_size, 1), np.float32)
        self.render_mode = "rgb_array"
        self.observation_space = gym.spaces.Dict(
            {
                "image": gym.spaces.Box(0, 255, (self._size, self._size, 3), np.uint8),
                "state": gym.spaces.Box(-np.inf, np.inf, (2,), np.float32),
            }
        )
        if discrete:
            self.action_space = gym.spaces.Discrete(discrete)
        else:
            self.action_space = gym.spaces.Box(-1.0, 1.0, (action_size,), np.float32)

    @property
    def duration(self) -> int:
        """Length of the current episode in steps."""
        return self._durations[self._episode % len(self._durations)]

    def target(self, step: int) -> float:
        """The action that earns reward 0 at a given step (known optimum)."""
        return float(np.clip(np.sin(0.3 * step + self._offset), -1, 1))

    def _observe(self) -> dict[str, np.ndarray]:
        image = np.zeros((self._size, self._size, 3), np.uint8)
        image[..., 0] = self._step % 256
        image[..., 1] = int(self._offset * 40) % 256
        image[..., 2] = np.uint8(np.clip((self._last_action[0] + 1) * 127.5, 0, 255))
        state = np.array([self._step, self.target(self._step)], np.float32)
        return {"image": image, "state": state}

    def _maybe_crash(self) -> None:
        self._total_steps += 1
        if self._crash_every and self._total_steps % self._crash_every == 0:
            if self._crash_mode == "exit":
                os._exit(3)
            raise SimulatorCrash(f"mock simulator failed at step {self._total_steps}")

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        if self._crash_on_reset:
            raise SimulatorCrash("mock simulator failed in reset")
        if seed is not None:
            self._offset = float(np.random.default_rng(seed).uniform(0, 2 * np.pi))
        self._episode += 1
        self._step = 0
        self._last_action = np.zeros_like(self._last_action)
        return self._observe(), {}

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        self._maybe_crash()
        if isinstance(self.action_space, gym.spaces.Discrete):
            value = float(int(action)) / max(self.action_space.n - 1, 1) * 2 - 1
            action = np.array([value], np.float32)
        action = np.asarray(action, np.float32).reshape(-1)
        reward = -float(np.abs(action[0] - self.target(self._step)))
        self._last_action = action.copy()
        self._step += 1
        end = self._step >= self.duration
        terminated = end and self._terminate
        truncated = end and not self._terminate
        return self._observe(), reward, terminated, truncated, {}

    def render(self) -> np.ndarray:
        return self._observe()["image"]
