"""Episodes on disk: one compressed .npz per finished episode, written atomically.

Keys: `image` (T+1,H,W,3) uint8, `action` (T+1,A) float32, `reward` (T+1,)
float32, `is_first`/`is_last`/`is_terminal` (T+1,) bool, optional `state`.
Step 0 is the reset observation with a zero action and zero reward.
"""

from __future__ import annotations

import datetime
import io
import logging
import re
import uuid
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from planetrl.atomic import write_atomic

log = logging.getLogger(__name__)

REQUIRED_KEYS = ("image", "action", "reward", "is_first", "is_last", "is_terminal")
STEP_KEYS = (*REQUIRED_KEYS, "state")
_NAME = re.compile(r"^(\d{8}T\d{6})-([0-9a-f]{32})-(\d+)\.npz$")


class EpisodeError(ValueError):
    """An episode file or dict that does not follow the format."""


def episode_name(length: int, when: datetime.datetime | None = None) -> str:
    """`<UTC %Y%m%dT%H%M%S>-<uuid4 hex>-<length>.npz`; names sort by time."""
    when = when or datetime.datetime.now(datetime.UTC)
    return f"{when.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex}-{length}.npz"


def parse_name(path: str | Path) -> tuple[str, int] | None:
    """(timestamp, length) from an episode file name, or None for other files."""
    match = _NAME.match(Path(path).name)
    return (match.group(1), int(match.group(3))) if match else None


def validate(episode: Mapping[str, np.ndarray]) -> int:
    """Check keys, dtypes and lengths; return the number of transitions T."""
    missing = [k for k in REQUIRED_KEYS if k not in episode]
    if missing:
        raise EpisodeError(f"episode lacks keys {missing}")
    steps = len(episode["reward"])
    for key in episode:
        if len(episode[key]) != steps:
            raise EpisodeError(f"key '{key}' has {len(episode[key])} steps, reward has {steps}")
    image = episode["image"]
    if image.dtype != np.uint8 or image.ndim != 4 or image.shape[-1] != 3:
        raise EpisodeError(f"image must be uint8 (T+1,H,W,3), got {image.dtype} {image.shape}")
    if episode["action"].ndim != 2:
        raise EpisodeError(f"action must be (T+1,A), got {episode['action'].shape}")
    if steps < 2 or not episode["is_first"][0] or not episode["is_last"][-1]:
        raise EpisodeError("an episode starts with is_first, ends with is_last and has at least one transition")
    return steps - 1


def write_episode(directory: str | Path, episode: Mapping[str, np.ndarray]) -> Path:
    """Write atomically: a temporary file in the same directory, then os.replace."""
    length = validate(episode)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / episode_name(length)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **{k: np.asarray(v) for k, v in episode.items()})
    return write_atomic(path, buffer.getvalue())


def read_episode(path: str | Path) -> dict[str, np.ndarray]:
    """Load and validate one episode; raises EpisodeError for a bad file."""
    try:
        # Our own handle: np.load leaves the file it opened open when the zip is damaged (a truncated write).
        with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as data:
            episode = {key: data[key] for key in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as error:
        raise EpisodeError(f"cannot read {path}: {type(error).__name__}: {error}") from error
    validate(episode)
    return episode


def try_read_episode(path: str | Path) -> dict[str, np.ndarray] | None:
    """Like `read_episode`, but a bad file gives one warning and None."""
    try:
        return read_episode(path)
    except EpisodeError as error:
        log.warning("skipping episode file %s: %s", path, error)
        return None


def order_key(path: str | Path, mtime_ns: int | None = None) -> tuple[str, int, str]:
    """Sort key for time order: the name's UTC second, then the file's mtime, then the name.

    Names resolve time to the second only; mtime orders files written within one second.
    """
    path = Path(path)
    parsed = parse_name(path)
    stamp = parsed[0] if parsed else ""
    if mtime_ns is None:
        mtime_ns = path.stat().st_mtime_ns
    return stamp, mtime_ns, path.name


def list_episodes(directory: str | Path) -> list[Path]:
    """Episode files in a directory, oldest first."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return sorted((p for p in directory.iterdir() if parse_name(p) is not None), key=order_key)


class EpisodeWriter:
    """Driver callback: assembles each env's episode step by step and writes it at its end."""

    def __init__(self, directory: str | Path, num_actions: int | None = None) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._num_actions = num_actions
        self._buffers: dict[int, list[dict[str, Any]]] = {}
        self.written: list[Path] = []

    def _action_vector(self, action: Any) -> np.ndarray:
        action = np.asarray(action)
        if self._num_actions is not None and action.ndim == 0:
            onehot = np.zeros(self._num_actions, np.float32)
            onehot[int(action)] = 1.0
            return onehot
        return action.astype(np.float32).reshape(-1)

    def __call__(self, index: int, step: Mapping[str, Any]) -> Path | None:
        """Add one step of env `index`; returns the file path when the episode ended."""
        if step["is_first"]:
            self._buffers[index] = []
        elif index not in self._buffers:
            raise EpisodeError(f"env {index} sent a step before its first step")
        record = {k: step[k] for k in STEP_KEYS if k in step}
        record["action"] = self._action_vector(step["action"])
        self._buffers[index].append(record)
        if not step["is_last"]:
            return None
        steps = self._buffers.pop(index)
        episode = {
            key: np.stack([np.asarray(s[key]) for s in steps]) for key in steps[0]
        }
        episode["reward"] = episode["reward"].astype(np.float32)
        for key in ("is_first", "is_last", "is_terminal"):
            episode[key] = episode[key].astype(bool)
        path = write_episode(self.directory, episode)
        self.written.append(path)
        return path
