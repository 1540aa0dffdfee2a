"""Offline driving from pixels: highway-env's top-down highway, continuous throttle and steering.

Runs anywhere (no simulator server), so the 128x128 path of the CARLA
variant is exercised on every machine. Rendering is headless through SDL's
`offscreen` driver (the `dummy` driver gives black frames).
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium

from planetrl.envs.wrappers import PixelObservation, ensure_runtime_dir


def make_highway(size: int, seed: int, fast_render: bool, vehicles: int = 20, duration: int = 30,
                 policy_frequency: int = 5, view_meters: float = 40.0) -> gymnasium.Env:
    """highway-v0 with continuous actions, `vehicles` other cars (50 is 10x slower), frames of size x size.

    The frame spans `view_meters` of road across at any size, the ego car 30% from its left edge: at
    40 m and 128x128 a car's body color covers about 54 pixels, at 20 m about five times as many.

    Reward is highway-env's: high speed, keeping right, minus a collision
    penalty, normalized to [0, 1] per step; a collision or leaving the road ends
    the episode, otherwise it lasts `duration` seconds at `policy_frequency` Hz.
    """
    os.environ.setdefault("SDL_VIDEODRIVER", "offscreen")
    ensure_runtime_dir()
    if os.environ["SDL_VIDEODRIVER"] == "dummy":
        raise RuntimeError("SDL_VIDEODRIVER=dummy renders black frames; use SDL_VIDEODRIVER=offscreen")
    import highway_env  # noqa: F401 - registers the highway environments

    config: dict[str, Any] = {
        # +-0.05 rad (about 3 degrees) is enough to change lanes at highway speed; highway-env's
        # default +-45 degrees sends a random policy off the road within a few steps.
        "action": {"type": "ContinuousAction", "steering_range": [-0.05, 0.05]},
        "vehicles_count": vehicles,
        "duration": duration,
        "policy_frequency": policy_frequency,
        "screen_width": size,
        "screen_height": size,
        "scaling": size / view_meters,  # pixels per meter
        "offroad_terminal": True,
    }
    env = gymnasium.make("highway-v0", render_mode="rgb_array", config=config)
    if isinstance(env, gymnasium.wrappers.TimeLimit):
        env = env.env
    return PixelObservation(env, size)
