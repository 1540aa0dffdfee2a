"""Uniform random actions, for seed episodes and baselines."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np


class RandomAgent:
    """Samples uniformly from a Box (within its bounds) or a Discrete action space."""

    def __init__(self, action_space: gym.Space, num_envs: int, seed: int = 0) -> None:
        if not isinstance(action_space, (gym.spaces.Box, gym.spaces.Discrete)):
            raise TypeError(f"RandomAgent supports Box and Discrete action spaces, got {action_space}")
        self._space = action_space
        self._num_envs = num_envs
        self._rng = np.random.default_rng(seed)

    def reset(self, indices: Sequence[int]) -> None:
        """Random actions carry no state."""

    def act(self, obs: dict[str, np.ndarray], explore: bool = True) -> np.ndarray:
        if isinstance(self._space, gym.spaces.Discrete):
            return self._rng.integers(0, self._space.n, size=self._num_envs)
        low, high = self._space.low, self._space.high
        shape = (self._num_envs, *self._space.shape)
        return self._rng.uniform(low, high, size=shape).astype(self._space.dtype)

    def observe(self, transition: dict[str, Any]) -> None:
        """Random actions do not learn."""
