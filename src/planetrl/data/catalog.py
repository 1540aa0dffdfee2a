"""Checked episode files: a run's expectations, a reader that allocates nothing unchecked, and quarantine.

A run directory receives files from outside (other tools, a user, a damaged
disk). Every file with an episode name is read through `read_checked`: only
regular files are opened; every array's header is checked against the run's
shapes and a byte budget before its data is decompressed; the zip CRC is
verified; float arrays must be finite. A file that fails is moved aside to
`quarantine/` with a `.reason.txt` beside it, named in one warning line, and
never counted, sampled or shown. `EpisodeCatalog` keeps the valid episodes of
one directory, so schedules count episodes that load, not file names.
"""

from __future__ import annotations

import dataclasses
import io
import logging
import os
import stat
import zipfile
import zlib
from pathlib import Path

import numpy as np

from planetrl.data.episodes import REQUIRED_KEYS, EpisodeError, order_key, parse_name, validate

log = logging.getLogger(__name__)

_BOOL_KEYS = ("is_first", "is_last", "is_terminal")
_HEADER_BYTES = 4096


@dataclasses.dataclass(frozen=True)
class EpisodeSpec:
    """What a run's episodes must look like; `max_steps` bounds their length (decisions + 1)."""

    image_size: int
    action_size: int
    max_steps: int = 100_000
    keys: tuple[str, ...] = REQUIRED_KEYS

    def item_shape(self, key: str) -> tuple[int, ...]:
        """Shape of one step of `key` (the leading time axis excluded)."""
        if key == "image":
            return (self.image_size, self.image_size, 3)
        if key == "action":
            return (self.action_size,)
        return ()


def _npy_header(member: zipfile.ZipExtFile) -> tuple[tuple[int, ...], np.dtype]:
    prefix = io.BytesIO(member.read(_HEADER_BYTES))
    version = np.lib.format.read_magic(prefix)
    reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, _, dtype = reader(prefix, max_header_size=_HEADER_BYTES)
    return shape, dtype


def _check_header(key: str, shape: tuple[int, ...], dtype: np.dtype, spec: EpisodeSpec) -> None:
    if dtype.hasobject or dtype.kind not in "biuf":
        raise EpisodeError(f"'{key}' has dtype {dtype}; numbers or booleans only")
    if key == "image" and dtype != np.uint8:
        raise EpisodeError(f"'image' has dtype {dtype}, not uint8")
    if key in _BOOL_KEYS and dtype != np.bool_:
        raise EpisodeError(f"'{key}' has dtype {dtype}, not bool")
    if key in ("reward", "action") and dtype.kind != "f":
        raise EpisodeError(f"'{key}' has dtype {dtype}, not a float")
    if not shape or shape[0] > spec.max_steps:
        raise EpisodeError(f"'{key}' has shape {shape}; the run allows 1..{spec.max_steps} steps")
    if key in spec.keys and tuple(shape[1:]) != spec.item_shape(key):
        raise EpisodeError(f"'{key}' has shape {shape}; the run's is (steps, *{spec.item_shape(key)})")


def read_checked(path: str | Path, spec: EpisodeSpec) -> dict[str, np.ndarray]:
    """The episode's arrays of `spec.keys`; raises EpisodeError naming what is wrong, before allocating it."""
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except OSError as error:
        raise EpisodeError(f"cannot stat: {error}") from error
    if not stat.S_ISREG(mode):
        raise EpisodeError("not a regular file (a link, FIFO, device or directory is never opened)")
    episode: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            members = {info.filename.removesuffix(".npy"): info for info in archive.infolist()}
            missing = [key for key in spec.keys if key not in members]
            if missing:
                raise EpisodeError(f"lacks keys {missing}")
            for key in spec.keys:
                info = members[key]
                with archive.open(info) as member:
                    shape, dtype = _npy_header(member)
                _check_header(key, shape, dtype, spec)
                budget = int(np.prod(shape)) * dtype.itemsize + _HEADER_BYTES
                if info.file_size > budget:
                    raise EpisodeError(f"'{key}' inflates to {info.file_size} bytes, more than its header's {budget}")
                data = archive.read(info)  # reads to the end, so the CRC is checked
                episode[key] = np.lib.format.read_array(io.BytesIO(data), allow_pickle=False)
    except EpisodeError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, KeyError) as error:
        raise EpisodeError(f"cannot read: {type(error).__name__}: {error}") from error
    for key, value in episode.items():
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            raise EpisodeError(f"'{key}' holds NaN or infinite values")
    validate(episode)
    parsed = parse_name(path)
    if parsed is not None and parsed[1] != len(episode["reward"]) - 1:
        raise EpisodeError(f"its name says {parsed[1]} steps, it holds {len(episode['reward']) - 1}")
    return episode


def quarantine(path: Path, reason: str, directory: Path) -> None:
    """Move a bad file into `directory` with its reason beside it, and say so in one warning line."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / path.name
    try:
        os.replace(path, target)
        (directory / f"{path.name}.reason.txt").write_text(reason + "\n")
        log.warning("quarantined %s: %s (moved to %s)", path, reason, target)
    except OSError as error:
        log.warning("bad episode file %s: %s (could not move it aside: %s; it is ignored)", path, reason, error)


class EpisodeCatalog:
    """The valid episodes of one directory; every new file is checked once and bad ones quarantined."""

    def __init__(self, directory: str | Path, spec: EpisodeSpec, quarantine_dir: str | Path) -> None:
        self.directory = Path(directory)
        self.spec = spec
        self.quarantine_dir = Path(quarantine_dir)
        self.lengths: dict[str, int] = {}  # valid file name -> decisions
        self._rejected: set[str] = set()
        self.quarantined = 0

    def read(self, path: str | Path) -> dict[str, np.ndarray] | None:
        """The checked episode, or None after quarantining the file."""
        path = Path(path)
        try:
            episode = read_checked(path, self.spec)
        except EpisodeError as error:
            self._reject(path, str(error))
            return None
        self.lengths[path.name] = len(episode["reward"]) - 1
        return episode

    def _reject(self, path: Path, reason: str) -> None:
        self._rejected.add(path.name)
        self.lengths.pop(path.name, None)
        self.quarantined += 1
        quarantine(path, reason, self.quarantine_dir)

    def scan(self) -> list[Path]:
        """Valid episode files, oldest first; new names are checked (and bad ones moved aside) first."""
        if not self.directory.is_dir():
            return []
        with os.scandir(self.directory) as entries:
            names = [e.name for e in entries if parse_name(e.name) is not None]
        for name in names:
            if name not in self.lengths and name not in self._rejected:
                self.read(self.directory / name)
        present = [self.directory / n for n in names if n in self.lengths]
        return sorted(present, key=order_key)

    def count(self) -> int:
        """Valid episodes in the directory."""
        return len(self.scan())

    def decisions(self) -> int:
        """Agent decisions in the valid episodes."""
        return sum(self.lengths[p.name] for p in self.scan())
