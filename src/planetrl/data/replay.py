"""A bounded replay over one episode directory, sampling fixed-length chunks.

Episodes are loaded newest first within `max_episodes` / `max_steps`;
later refreshes load only files not seen before and evict the oldest
episodes to stay within the bound. Images stay uint8 in memory. Chunks of
length L are drawn uniformly over every valid start position of every held
episode, so they never cross an episode boundary and long episodes count for
more. Episodes shorter than L cannot hold a chunk: they are kept out of
sampling and counted in `short_episodes`.

With `cross_episodes` (for tasks whose episodes end early, like driving) a
chunk may run on from the end of one episode into the next held one, as if
the episodes were one stream; the next episode's first step carries
`is_first`, where the model resets its state. Then every step can start a
chunk, and short episodes, often the ones that end in a crash, are learned
from too.
"""

from __future__ import annotations

import bisect
import dataclasses
import os
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

from planetrl.data.episodes import order_key, parse_name, try_read_episode


@dataclasses.dataclass
class ReplayStats:
    """What the replay holds and what it skipped."""

    episodes: int = 0
    steps: int = 0
    bytes: int = 0
    loaded_files: int = 0
    skipped_files: int = 0
    evicted_episodes: int = 0
    short_episodes: int = 0


class Replay:
    """Newest episodes of a directory in memory, within a bound; thread-safe."""

    def __init__(
        self,
        directory: str | Path,
        chunk_length: int,
        max_episodes: int = 0,
        max_steps: int = 0,
        recent_fraction: float = 0.0,
        recent_episodes: int = 5,
        reader: Callable[[Path], dict[str, np.ndarray] | None] = try_read_episode,
        cross_episodes: bool = False,
    ) -> None:
        """`reader` loads one file or returns None for a bad one (a run passes its checking catalog's)."""
        if chunk_length < 1:
            raise ValueError(f"chunk_length must be at least 1, got {chunk_length}")
        if not 0.0 <= recent_fraction <= 1.0:
            raise ValueError(f"recent_fraction must be within [0, 1], got {recent_fraction}")
        self.directory = Path(directory)
        self.chunk_length = chunk_length
        self.max_episodes = max_episodes
        self.max_steps = max_steps
        self.recent_fraction = recent_fraction
        self.recent_episodes = max(recent_episodes, 1)
        self.cross_episodes = cross_episodes
        self._read = reader
        self._episodes: dict[str, dict[str, np.ndarray]] = {}
        self._order: list[tuple[tuple[str, int, str], str]] = []  # (time order key, name), oldest first
        self._seen: set[str] = set()
        self._lock = threading.Lock()
        self.stats = ReplayStats()
        self._starts = np.zeros(0, np.int64)  # valid chunk starts per held episode, in time order
        self._keys: list[str] = []
        self._index: dict[str, int] = {}

    # ------------------------------------------------------------ loading

    def _new_files(self) -> list[tuple[tuple[str, int, str], str]]:
        """(order key, name) of files not seen before, oldest first; stats only the new files."""
        if not self.directory.is_dir():
            return []
        with os.scandir(self.directory) as entries:
            new = [e for e in entries if e.name not in self._seen and parse_name(e.name) is not None]
            keyed = []
            for entry in new:
                try:
                    keyed.append((order_key(entry.name, entry.stat().st_mtime_ns), entry.name))
                except FileNotFoundError:
                    continue
        return sorted(keyed)

    def refresh(self) -> int:
        """Load episode files not seen before (newest first, within the bound); returns how many."""
        files = self._new_files()
        self._seen.update(name for _, name in files)
        loaded: list[tuple[tuple[str, int, str], str, dict[str, np.ndarray]]] = []
        budget_episodes = self.max_episodes or None
        budget_steps = self.max_steps or None
        held_steps = 0
        for key, name in reversed(files):  # newest first: older files beyond the bound are never read
            if budget_episodes is not None and len(loaded) >= budget_episodes:
                break
            if budget_steps is not None and held_steps >= budget_steps:
                break
            episode = self._read(self.directory / name)
            if episode is None:
                self.stats.skipped_files += 1
                continue
            loaded.append((key, name, episode))
            held_steps += len(episode["reward"])
        with self._lock:
            for key, name, episode in reversed(loaded):
                self._insert(key, name, episode)
            self._evict()
            self._reindex()
        self.stats.loaded_files += len(loaded)
        return len(loaded)

    def _insert(self, key: tuple[str, int, str], name: str, episode: dict[str, np.ndarray]) -> None:
        self._episodes[name] = episode
        bisect.insort(self._order, (key, name))  # a file that arrives late still lands in time order
        self.stats.episodes += 1
        self.stats.steps += len(episode["reward"])
        self.stats.bytes += sum(v.nbytes for v in episode.values())

    def _over_bound(self) -> bool:
        if len(self._episodes) <= 1:
            return False
        return bool((self.max_episodes and self.stats.episodes > self.max_episodes)
                    or (self.max_steps and self.stats.steps > self.max_steps))

    def _evict(self) -> None:
        while self._over_bound():
            _, name = self._order.pop(0)
            episode = self._episodes.pop(name)
            self.stats.episodes -= 1
            self.stats.steps -= len(episode["reward"])
            self.stats.bytes -= sum(v.nbytes for v in episode.values())
            self.stats.evicted_episodes += 1

    def _reindex(self) -> None:
        self._keys = [name for _, name in self._order]
        lengths = np.array([len(self._episodes[k]["reward"]) for k in self._keys], np.int64)
        self._index = {name: i for i, name in enumerate(self._keys)}
        if self.cross_episodes:  # a start needs L steps in its episode and the ones after it
            after = np.concatenate([np.cumsum(lengths[::-1])[::-1][1:], [0]])
            self._starts = np.clip(lengths + after - self.chunk_length + 1, 0, lengths)
            self.stats.short_episodes = 0
            return
        self._starts = np.maximum(lengths - self.chunk_length + 1, 0)
        self.stats.short_episodes = int((self._starts == 0).sum())

    # ------------------------------------------------------------ sampling

    @property
    def names(self) -> list[str]:
        """File names of the held episodes, oldest first."""
        with self._lock:
            return list(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def sample_positions(self, count: int, rng: np.random.Generator) -> list[tuple[str, int]]:
        """(episode name, start) pairs, uniform over valid starts, with the recency mix."""
        with self._lock:
            return self._positions(count, rng)

    def _positions(self, count: int, rng: np.random.Generator) -> list[tuple[str, int]]:
        starts = self._starts
        if starts.sum() == 0:
            raise RuntimeError(
                f"no episode in {self.directory} holds a chunk of {self.chunk_length} steps "
                f"({len(self._keys)} episodes held, {self.stats.short_episodes} too short)"
            )
        recent_starts = starts.copy()
        recent_starts[: max(len(starts) - self.recent_episodes, 0)] = 0
        if recent_starts.sum() == 0:  # the newest episodes are all too short: sample from all
            recent_starts = starts
        recent = rng.random(count) < self.recent_fraction if self.recent_fraction else np.zeros(count, bool)
        indices = np.empty(count, np.int64)
        offsets = np.empty(count, np.int64)
        for mask, weights in ((~recent, starts), (recent, recent_starts)):
            if not mask.any():
                continue
            cumulative = np.cumsum(weights)
            flat = rng.integers(0, cumulative[-1], size=int(mask.sum()))
            chosen = np.searchsorted(cumulative, flat, side="right")
            indices[mask] = chosen
            offsets[mask] = flat - (cumulative[chosen] - weights[chosen])
        return [(self._keys[i], int(o)) for i, o in zip(indices, offsets, strict=True)]

    def sample(self, count: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """A batch of chunks: every key of the episodes, shaped (count, L, ...)."""
        with self._lock:
            chunks = [self._chunk(name, start) for name, start in self._positions(count, rng)]
            return {key: np.stack([c[key] for c in chunks]) for key in chunks[0]}

    def _chunk(self, name: str, start: int) -> dict[str, np.ndarray]:
        """L steps from `start` of episode `name`, running on into the next held episodes where allowed."""
        episode = self._episodes[name]
        if not self.cross_episodes:
            return {k: v[start : start + self.chunk_length] for k, v in episode.items()}
        pieces, needed, index = [], self.chunk_length, self._index[name]
        while needed > 0:
            piece = {k: v[start : start + needed] for k, v in self._episodes[self._keys[index]].items()}
            pieces.append(piece)
            needed -= len(piece["reward"])
            index, start = index + 1, 0
        return {k: np.concatenate([p[k] for p in pieces]) for k in pieces[0]}
