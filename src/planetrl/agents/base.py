"""The Agent protocol shared by every agent and the driver."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np


class Agent(Protocol):
    """Acts for a batch of environments, one row per env."""

    def reset(self, indices: Sequence[int]) -> None:
        """Forget the state of the given envs; their episodes start anew."""

    def act(self, obs: dict[str, np.ndarray], explore: bool) -> np.ndarray:
        """Actions for every env of the batch, from stacked observations."""

    def observe(self, transition: dict[str, Any]) -> None:
        """See the batch of transitions that followed the last actions.

        Keys: `obs` (the next observations), `action`, `reward`, `is_last` (the episode ended, by time
        limit or otherwise), `is_terminal` (it ended for real) and `indices` (the envs these rows belong
        to): the same step vocabulary as the driver's callbacks and the episode files.
        """
