"""What the rest of planetrl needs to know of an action space: its size and whether it is discrete."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


def action_size(space: gym.Space) -> int:
    """Number of choices of a Discrete space (one-hot actions), or dimensions of a Box."""
    return int(space.n) if isinstance(space, gym.spaces.Discrete) else int(np.prod(space.shape))


def discrete_choices(space: gym.Space) -> int | None:
    """Number of choices of a Discrete space, None for a continuous one."""
    return int(space.n) if isinstance(space, gym.spaces.Discrete) else None
