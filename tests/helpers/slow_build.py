"""An env whose build takes a while, as a simulator's import or a CARLA map load does (child processes import
it by name)."""

from __future__ import annotations

import time

from planetrl.envs.mock import MockEnv


def slow_mock(seconds: float) -> MockEnv:
    time.sleep(seconds)
    return MockEnv()
