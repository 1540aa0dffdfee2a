"""Environment wrappers: each does one thing and keeps the Gymnasium API."""

from __future__ import annotations

import collections
import logging
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import RecordConstructorArgs
from PIL import Image

log = logging.getLogger(__name__)


class EnvCrashed(RuntimeError):
    """The simulator failed or its process died; restart-on-exception handles it."""


class TooManyCrashes(RuntimeError):
    """The simulator crashed more often than allowed within the time window."""


class ActionRepeat(gym.Wrapper, RecordConstructorArgs):
    """Repeat each action `repeat` times, summing rewards, stopping at an episode end."""

    def __init__(self, env: gym.Env, repeat: int) -> None:
        if repeat < 1:
            raise ValueError(f"action repeat must be at least 1, got {repeat}")
        RecordConstructorArgs.__init__(self, repeat=repeat)
        super().__init__(env)
        self.repeat = repeat

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        total = 0.0
        for _ in range(self.repeat):
            obs, reward, terminated, truncated, info = self.env.step(action)
            total += float(reward)
            if terminated or truncated:
                break
        return obs, total, terminated, truncated, info


class TimeLimit(gym.Wrapper, RecordConstructorArgs):
    """End an episode after `duration` steps by setting `truncated`, never `terminated`."""

    def __init__(self, env: gym.Env, duration: int) -> None:
        if duration < 1:
            raise ValueError(f"time limit must be at least 1 step, got {duration}")
        RecordConstructorArgs.__init__(self, duration=duration)
        super().__init__(env)
        self.duration = duration
        self._elapsed: int | None = None

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        self._elapsed = 0
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        if self._elapsed is None:
            raise RuntimeError("step() called before reset()")
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._elapsed += 1
        if self._elapsed >= self.duration and not terminated:
            truncated = True
        if terminated or truncated:
            self._elapsed = None
        return obs, reward, terminated, truncated, info


class NormalizeActions(gym.ActionWrapper, RecordConstructorArgs):
    """Expose a [-1, 1] box for a bounded Box action space; discrete spaces pass through."""

    def __init__(self, env: gym.Env) -> None:
        RecordConstructorArgs.__init__(self)
        super().__init__(env)
        space = env.action_space
        self._normalize = isinstance(space, gym.spaces.Box)
        if self._normalize:
            finite = np.isfinite(space.low) & np.isfinite(space.high)
            self._mask = finite
            self._low = np.where(finite, space.low, -1).astype(np.float32)
            self._high = np.where(finite, space.high, 1).astype(np.float32)
            self.action_space = gym.spaces.Box(-1.0, 1.0, space.shape, np.float32)

    def action(self, action: Any) -> Any:
        if not self._normalize:
            return action
        action = np.clip(np.asarray(action, np.float32), -1.0, 1.0)
        scaled = (action + 1) / 2 * (self._high - self._low) + self._low
        return np.where(self._mask, scaled, action).astype(self.env.action_space.dtype)


def ensure_runtime_dir() -> None:
    """Give SDL (pygame rendering) an XDG_RUNTIME_DIR; without one it prints an error line at every start."""
    if not os.path.isdir(os.environ.get("XDG_RUNTIME_DIR", "")):
        os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="planetrl-xdg-")


def resize_image(image: np.ndarray, size: int) -> np.ndarray:
    if image.shape[0] == size and image.shape[1] == size:
        return image
    return np.asarray(Image.fromarray(image).resize((size, size), Image.BILINEAR))


class PixelObservation(gym.ObservationWrapper, RecordConstructorArgs):
    """Observation dict with `image` from `render()`; the original observation goes to `state`."""

    def __init__(self, env: gym.Env, size: int) -> None:
        RecordConstructorArgs.__init__(self, size=size)
        super().__init__(env)
        if env.render_mode != "rgb_array":
            raise ValueError(f"PixelObservation needs render_mode='rgb_array', got {env.render_mode!r}")
        ensure_runtime_dir()
        self._size = size
        spaces = {"image": gym.spaces.Box(0, 255, (size, size, 3), np.uint8)}
        inner = env.observation_space
        if isinstance(inner, gym.spaces.Box) and np.issubdtype(inner.dtype, np.floating):
            spaces["state"] = gym.spaces.Box(-np.inf, np.inf, (int(np.prod(inner.shape)),), np.float32)
        self._keep_state = "state" in spaces
        self.observation_space = gym.spaces.Dict(spaces)

    def observation(self, observation: Any) -> dict[str, np.ndarray]:
        frame = self.env.render()
        if frame is None:
            raise RuntimeError("render() returned None; was the env made with render_mode='rgb_array'?")
        obs = {"image": resize_image(np.asarray(frame, np.uint8)[..., :3], self._size)}
        if self._keep_state:
            obs["state"] = np.asarray(observation, np.float32).reshape(-1)
        return obs


class StateObservation(gym.ObservationWrapper, RecordConstructorArgs):
    """A Box observation as `{"state": float32 vector}`, with no rendering."""

    def __init__(self, env: gym.Env) -> None:
        RecordConstructorArgs.__init__(self)
        super().__init__(env)
        inner = env.observation_space
        if not isinstance(inner, gym.spaces.Box):
            raise ValueError(f"StateObservation needs a Box observation space, got {inner}")
        size = int(np.prod(inner.shape))
        self.observation_space = gym.spaces.Dict({"state": gym.spaces.Box(-np.inf, np.inf, (size,), np.float32)})

    def observation(self, observation: Any) -> dict[str, np.ndarray]:
        return {"state": np.asarray(observation, np.float32).reshape(-1)}


class DropImage(gym.ObservationWrapper, RecordConstructorArgs):
    """Remove the `image` entry, for tasks without a state-only constructor."""

    def __init__(self, env: gym.Env) -> None:
        RecordConstructorArgs.__init__(self)
        super().__init__(env)
        spaces = {k: v for k, v in env.observation_space.spaces.items() if k != "image"}
        if not spaces:
            raise ValueError("this task observes only an image; it has no state to keep")
        self.observation_space = gym.spaces.Dict(spaces)

    def observation(self, observation: dict) -> dict:
        return {k: v for k, v in observation.items() if k != "image"}


class ResizeImage(gym.ObservationWrapper, RecordConstructorArgs):
    """Resize the `image` entry of a dict observation to size x size."""

    def __init__(self, env: gym.Env, size: int) -> None:
        RecordConstructorArgs.__init__(self, size=size)
        super().__init__(env)
        self._size = size
        spaces = dict(env.observation_space.spaces)
        spaces["image"] = gym.spaces.Box(0, 255, (size, size, 3), np.uint8)
        self.observation_space = gym.spaces.Dict(spaces)

    def observation(self, observation: dict) -> dict:
        return {**observation, "image": resize_image(observation["image"], self._size)}


class ConvertTo32Bit(gym.Wrapper, RecordConstructorArgs):
    """Floats become float32, rewards float; NaN or inf observations or rewards raise."""

    def __init__(self, env: gym.Env) -> None:
        RecordConstructorArgs.__init__(self)
        super().__init__(env)
        spaces = dict(env.observation_space.spaces)
        for key, space in spaces.items():
            if isinstance(space, gym.spaces.Box) and np.issubdtype(space.dtype, np.floating):
                spaces[key] = gym.spaces.Box(space.low.astype(np.float32), space.high.astype(np.float32),
                                             space.shape, np.float32)
        self.observation_space = gym.spaces.Dict(spaces)

    def _convert(self, obs: dict) -> dict:
        out = {}
        for key, value in obs.items():
            value = np.asarray(value)
            if np.issubdtype(value.dtype, np.floating):
                if not np.all(np.isfinite(value)):
                    raise ValueError(f"observation '{key}' contains NaN or inf: {value}")
                value = value.astype(np.float32)
            out[key] = value
        return out

    def reset(self, **kwargs: Any) -> tuple[dict, dict]:
        obs, info = self.env.reset(**kwargs)
        return self._convert(obs), info

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if not np.isfinite(reward):
            raise ValueError(f"reward is not finite: {reward}")
        return self._convert(obs), float(reward), bool(terminated), bool(truncated), info


class CheckSpaces(gym.Wrapper, RecordConstructorArgs):
    """Raise when an action or observation falls outside its declared space."""

    def __init__(self, env: gym.Env) -> None:
        RecordConstructorArgs.__init__(self)
        super().__init__(env)

    def _check_obs(self, obs: Any, where: str) -> None:
        if not self.observation_space.contains(obs):
            shapes = {k: (np.shape(v), np.asarray(v).dtype) for k, v in obs.items()} if isinstance(obs, dict) else obs
            raise ValueError(f"observation from {where} is outside {self.observation_space}: {shapes}")

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        self._check_obs(obs, "reset")
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        space = self.action_space
        checked = np.asarray(action, space.dtype) if isinstance(space, gym.spaces.Box) else action
        if not space.contains(checked):
            raise ValueError(f"action {action!r} is outside the action space {space}")
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._check_obs(obs, "step")
        return obs, reward, terminated, truncated, info


class RestartOnException:
    """Rebuild the environment when it fails, ending the episode as truncated.

    A failure in `step` returns the last observation with zero reward,
    `truncated=True` and `info["env_restarted"]=True`; a failure in `reset`
    rebuilds and retries. More than `max_restarts` failures within `window`
    seconds raise `TooManyCrashes`. Works around in-process envs and
    `ExternalProcess` alike (including its async step interface).
    """

    def __init__(
        self,
        constructor: Callable[[], Any],
        max_restarts: int = 5,
        window: float = 600.0,
        errors: tuple[type[BaseException], ...] = (Exception,),
    ) -> None:
        self._constructor = constructor
        self._max_restarts = max_restarts
        self._window = window
        self._errors = errors
        self._crash_times: collections.deque[float] = collections.deque()
        self.restarts = 0
        self._env = constructor()
        self._last_obs: Any = None
        self._pending_error: BaseException | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._env, name)

    def _restart(self, error: BaseException) -> None:
        now = time.monotonic()
        self._crash_times.append(now)
        while self._crash_times and now - self._crash_times[0] > self._window:
            self._crash_times.popleft()
        if len(self._crash_times) > self._max_restarts:
            raise TooManyCrashes(
                f"environment crashed {len(self._crash_times)} times within {self._window:.0f} s "
                f"(allowed: {self._max_restarts}); last error: {type(error).__name__}: {error}"
            ) from error
        self.restarts += 1
        log.warning("environment crashed (%s: %s); restarting (restart %d)", type(error).__name__, error,
                    self.restarts)
        try:
            self._env.close()
        except Exception:  # noqa: BLE001 - the broken env may fail to close; it is discarded anyway
            pass
        self._env = self._constructor()

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        while True:
            try:
                obs, info = self._env.reset(**kwargs)
                self._last_obs = obs
                return obs, info
            except self._errors as error:
                self._restart(error)

    def _crashed_step(self, error: BaseException) -> tuple[Any, float, bool, bool, dict]:
        self._restart(error)
        if self._last_obs is None:
            self._last_obs, _ = self.reset()
        return self._last_obs, 0.0, False, True, {"env_restarted": True, "error": repr(error)}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        try:
            result = self._env.step(action)
        except self._errors as error:
            return self._crashed_step(error)
        self._last_obs = result[0]
        return result

    def step_async(self, action: Any) -> None:
        self._pending_error = None
        try:
            if hasattr(self._env, "step_async"):
                self._env.step_async(action)
            else:
                self._sync_result = self._env.step(action)
        except self._errors as error:
            self._pending_error = error

    def step_wait(self) -> tuple[Any, float, bool, bool, dict]:
        if self._pending_error is not None:
            error, self._pending_error = self._pending_error, None
            return self._crashed_step(error)
        try:
            result = self._env.step_wait() if hasattr(self._env, "step_wait") else self._sync_result
        except self._errors as error:
            return self._crashed_step(error)
        self._last_obs = result[0]
        return result

    def close(self) -> None:
        self._env.close()
