"""Phases as data: what the PlaNet loop does next follows from its counters alone.

Counters come from durable state (updates from the checkpoint, episodes from
the files on disk), so a run killed at any moment resumes at the right phase:
an episode that was written is never collected twice, and one that was not
written is simply collected again.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

PhaseName = Literal["collect", "test", "train", "done"]


@dataclasses.dataclass(frozen=True)
class Phase:
    """One step of the loop: its name and, for training, how many updates."""

    name: PhaseName
    updates: int = 0


@dataclasses.dataclass(frozen=True)
class Schedule:
    """Train `collect_every` updates, then collect one episode; test every `test_every` updates."""

    total_updates: int
    collect_every: int
    test_every: int

    def __post_init__(self) -> None:
        if self.collect_every < 1 or self.test_every < 1:
            raise ValueError(f"collect_every and test_every must be at least 1, got "
                             f"{self.collect_every} and {self.test_every}")

    def next_phase(self, updates: int, collected: int, last_test: int) -> Phase:
        """The next phase given updates done, episodes collected after the seed episodes, and the updates at
        the last recorded test phase (0 if none).

        A test is due once a multiple of `test_every` lies beyond the last test, so the tests follow the
        recorded ones, not their count: a run whose `test_every` was changed in its config.yaml tests at
        the new multiples from where it stands.
        """
        if collected < updates // self.collect_every:
            return Phase("collect")
        if updates // self.test_every * self.test_every > last_test:
            return Phase("test")
        if updates >= self.total_updates:
            return Phase("done")
        boundary = (updates // self.collect_every + 1) * self.collect_every
        return Phase("train", min(boundary, self.total_updates) - updates)
