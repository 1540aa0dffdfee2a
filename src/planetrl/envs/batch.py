"""BatchEnv: many environments stepped together, results stacked."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def stack_observations(observations: Sequence[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Stack a list of observation dicts into a dict of arrays."""
    return {key: np.stack([obs[key] for obs in observations]) for key in observations[0]}


class BatchEnv:
    """Step N envs in parallel: all sends first, then all receives.

    Envs that end an episode are not reset automatically; the caller resets
    exactly those indices, so per-env episode ends stay explicit.
    """

    def __init__(self, envs: Sequence[Any]) -> None:
        if not envs:
            raise ValueError("BatchEnv needs at least one environment")
        self.envs = list(envs)
        self.observation_space = self.envs[0].observation_space
        self.action_space = self.envs[0].action_space
        for index, env in enumerate(self.envs[1:], 1):
            if env.observation_space != self.observation_space or env.action_space != self.action_space:
                raise ValueError(f"environment {index} has different spaces from environment 0")

    def __len__(self) -> int:
        return len(self.envs)

    def reset(
        self, indices: Sequence[int] | None = None, seeds: Sequence[int | None] | None = None
    ) -> dict[str, np.ndarray]:
        """Reset the given envs (all by default); returns their stacked observations."""
        indices = list(range(len(self.envs))) if indices is None else list(indices)
        seeds = [None] * len(indices) if seeds is None else list(seeds)
        if len(seeds) != len(indices):
            raise ValueError(f"got {len(seeds)} seeds for {len(indices)} environments")
        observations = [self.envs[i].reset(seed=s)[0] for i, s in zip(indices, seeds, strict=False)]
        return stack_observations(observations)

    def step(
        self, actions: np.ndarray | Sequence[Any], indices: Sequence[int] | None = None
    ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        """Step the given envs (all by default), one action each.

        Returns stacked observations, rewards, terminated, truncated and infos,
        in the order of `indices`.
        """
        indices = list(range(len(self.envs))) if indices is None else list(indices)
        if len(actions) != len(indices):
            raise ValueError(f"got {len(actions)} actions for {len(indices)} environments")
        envs = [self.envs[i] for i in indices]
        for env, action in zip(envs, actions, strict=False):
            if hasattr(env, "step_async"):
                env.step_async(action)
        results = [
            env.step_wait() if hasattr(env, "step_async") else env.step(action)
            for env, action in zip(envs, actions, strict=False)
        ]
        observations, rewards, terminated, truncated, infos = zip(*results, strict=False)
        return (
            stack_observations(observations),
            np.asarray(rewards, np.float32),
            np.asarray(terminated, bool),
            np.asarray(truncated, bool),
            list(infos),
        )

    def close(self) -> None:
        """Close every env, even when some of them fail to close."""
        errors = []
        for env in self.envs:
            try:
                env.close()
            except Exception as error:  # noqa: BLE001
                errors.append(error)
        if errors:
            raise errors[0]
