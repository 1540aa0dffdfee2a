"""Any Gymnasium environment, observed through pixels from `render()`."""

from __future__ import annotations

from typing import Any

import gymnasium

from planetrl.envs.wrappers import PixelObservation, StateObservation


def make_gym(env_id: str, size: int = 64, pixels: bool = True, **kwargs: Any) -> gymnasium.Env:
    """`gymnasium.make(env_id)` observed through rendered pixels (`image`, plus `state`) or its state only."""
    try:
        env = gymnasium.make(env_id, render_mode="rgb_array" if pixels else None, **kwargs)
    except gymnasium.error.Error as error:
        raise ValueError(f"cannot make Gymnasium env '{env_id}': {error}") from error
    # The registry's TimeLimit owns episode length; gymnasium's own limit would cut first.
    if isinstance(env, gymnasium.wrappers.TimeLimit):
        env = env.env
    return PixelObservation(env, size) if pixels else StateObservation(env)
