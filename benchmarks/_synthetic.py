"""Synthetic episode files for the data benchmarks (structured images that compress like renders)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from planetrl.data.episodes import episode_name, write_episode


def make_episode(steps: int, size: int, seed: int = 0) -> dict[str, np.ndarray]:
    """An episode of `steps` transitions with smooth, slightly noisy frames."""
    rng = np.random.default_rng(seed)
    ramp = np.linspace(0, 200, size, dtype=np.float32)
    base = (ramp[None, :, None] + ramp[:, None, None] / 2).astype(np.uint8)
    image = np.repeat(base[None], steps + 1, axis=0).repeat(3, axis=-1)
    image[:, : size // 8] += rng.integers(0, 8, (steps + 1, size // 8, size, 3), dtype=np.uint8)
    return {
        "image": image,
        "action": rng.uniform(-1, 1, (steps + 1, 6)).astype(np.float32),
        "reward": rng.uniform(0, 1, steps + 1).astype(np.float32),
        "is_first": np.arange(steps + 1) == 0,
        "is_last": np.arange(steps + 1) == steps,
        "is_terminal": np.zeros(steps + 1, bool),
    }


def fill(directory: Path, count: int, steps: int, size: int) -> list[Path]:
    """Write one episode, then copy it under fresh names (writing is the slow part)."""
    first = write_episode(directory, make_episode(steps, size))
    paths = [first]
    for _ in range(count - 1):
        target = directory / episode_name(steps)
        shutil.copyfile(first, target)
        paths.append(target)
    return paths
