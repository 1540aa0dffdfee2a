"""The driver: runs an agent in a BatchEnv and hands every step to callbacks.

Collection is explicit here, never hidden in model code. Each env's steps
follow the episode vocabulary: the reset observation arrives with
`is_first=True`, a zero action and zero reward; the last step has
`is_last=True`, and `is_terminal=True` only for a true end (not a time limit).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from planetrl.agents.base import Agent
from planetrl.envs.batch import BatchEnv

StepCallback = Callable[[int, dict[str, Any]], Any]


class Progress(Protocol):
    """Anything with `update(n)`, such as a tqdm bar."""

    def update(self, n: int = 1) -> Any: ...


@dataclasses.dataclass
class EpisodeResult:
    """Score and length (in agent decisions) of one finished episode."""

    env: int
    score: float
    length: int
    restarts: int = 0


def _zero_action(space: gym.Space) -> np.ndarray:
    if isinstance(space, gym.spaces.Discrete):
        return np.zeros(space.n, np.float32)
    return np.zeros(space.shape, np.float32)


class Driver:
    """Step a batch of envs with an agent until a number of episodes has finished."""

    def __init__(self, env: BatchEnv, agent: Agent, callbacks: Iterable[StepCallback] = (), seed: int = 0) -> None:
        self.env = env
        self.agent = agent
        self.callbacks = list(callbacks)
        self._rng = np.random.default_rng(seed)
        self._zero = _zero_action(env.action_space)

    def _emit(self, index: int, step: dict[str, Any]) -> None:
        for callback in self.callbacks:
            callback(index, step)

    def _reset(self, indices: list[int], obs: dict[str, np.ndarray] | None) -> dict[str, np.ndarray]:
        seeds = [int(s) for s in self._rng.integers(0, 2**31 - 1, size=len(indices))]
        fresh = self.env.reset(indices, seeds)
        if obs is None:
            obs = {k: np.zeros((len(self.env), *v.shape[1:]), v.dtype) for k, v in fresh.items()}
        for row, index in enumerate(indices):
            step = {k: v[row] for k, v in fresh.items()}
            for key in obs:
                obs[key][index] = step[key]
            step.update(action=self._zero, reward=np.float32(0.0), is_first=True, is_last=False, is_terminal=False)
            self._emit(index, step)
        self.agent.reset(indices)
        return obs

    def run(self, episodes: int, explore: bool = True, progress: Progress | None = None) -> list[EpisodeResult]:
        """Run until `episodes` episodes have finished; returns them in finishing order."""
        if episodes < 1:
            raise ValueError(f"episodes must be at least 1, got {episodes}")
        active = list(range(min(len(self.env), episodes)))
        started = len(active)
        obs = self._reset(active, None)
        scores = np.zeros(len(self.env), np.float64)
        lengths = np.zeros(len(self.env), np.int64)
        restarts = np.zeros(len(self.env), np.int64)
        results: list[EpisodeResult] = []
        while active:
            # The driver updates `obs` in place; agents get arrays of their own that they may keep.
            actions = self.agent.act({key: value.copy() for key, value in obs.items()}, explore)
            chosen = [actions[i] for i in active]
            next_obs, rewards, terminated, truncated, infos = self.env.step(chosen, active)
            ended = []
            for row, index in enumerate(active):
                step = {k: v[row] for k, v in next_obs.items()}
                for key in obs:
                    obs[key][index] = step[key]
                last = bool(terminated[row] or truncated[row])
                step.update(action=chosen[row], reward=rewards[row], is_first=False, is_last=last,
                            is_terminal=bool(terminated[row]))
                self._emit(index, step)
                scores[index] += rewards[row]
                lengths[index] += 1
                restarts[index] += bool(infos[row].get("env_restarted"))
                if last:
                    ended.append(index)
                    results.append(EpisodeResult(index, float(scores[index]), int(lengths[index]),
                                                 int(restarts[index])))
                    scores[index] = lengths[index] = restarts[index] = 0
                    if progress is not None:
                        progress.update(1)
            self.agent.observe({"obs": next_obs, "action": np.asarray(chosen), "reward": rewards,
                                "is_last": np.logical_or(terminated, truncated), "is_terminal": np.asarray(terminated),
                                "indices": list(active)})
            again = ended[: max(0, episodes - started)]
            started += len(again)
            active = [i for i in active if i not in ended or i in again]
            if again:
                obs = self._reset(again, obs)
        return results
