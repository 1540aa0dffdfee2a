"""Atomic file writes: a temporary file in the same directory, fsync, then os.replace.

A reader sees the old file or the new one, never half of one, and a crash
or a full disk leaves no temporary file behind (the failure is raised).
`clean_temporaries` removes those a SIGKILL left, when a run starts again.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

TEMPORARY_SUFFIX = ".tmp"


def write_atomic(path: str | Path, data: bytes | str | Callable[[BinaryIO], None], fsync: bool = True,
                 previous: Path | None = None) -> Path:
    """Write bytes, text, or whatever `data(handle)` writes, to `path` atomically.

    With `previous`, the file at `path` (if any) is renamed there once the new one is written in full, just
    before the new one takes its place; a stop between the two renames leaves `previous` and no `path`.
    """
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}{TEMPORARY_SUFFIX}")
    try:
        with open(temporary, "wb") as handle:
            if callable(data):
                data(handle)
            else:
                handle.write(data.encode() if isinstance(data, str) else data)
            handle.flush()
            if fsync:
                os.fsync(handle.fileno())
        if previous is not None and path.exists():
            os.replace(path, previous)
        os.replace(temporary, path)
    except Exception as error:
        cause = _os_error(error)
        if cause is None:
            raise
        raise OSError(cause.errno, f"cannot write {path}: {cause.strerror}") from error
    finally:
        temporary.unlink(missing_ok=True)
    return path


def _os_error(error: BaseException | None) -> OSError | None:
    """The OSError behind an error that a library wrapped (torch turns a full disk into a RuntimeError)."""
    while error is not None:
        if isinstance(error, OSError) and error.errno:
            return error
        error = error.__cause__ or error.__context__
    return None


def clean_temporaries(directory: str | Path) -> list[Path]:
    """Remove `.NAME.*.tmp` files that a killed writer left anywhere below `directory`; returns them."""
    removed = []
    for path in Path(directory).rglob(f".*{TEMPORARY_SUFFIX}"):
        if path.is_file() or path.is_symlink():
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed
