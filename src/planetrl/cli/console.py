"""The console as a side channel: what happens to a command when the reader of its output goes away.

A training run's record is its files; its console lines only show it going. So a run must not fail
because its terminal closed (writes then fail with EIO), because `planetrl train ... | tee log` lost its
tee (EPIPE), or because the file its output was redirected to sits on a full disk (ENOSPC): the commands
that leave their work on disk keep working without a console. The commands whose product is what they
print (config, status, tasks, ...) stop quietly with the shell's status for SIGPIPE instead, as `head`
and `grep -q` expect of a command they stop reading.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
from collections.abc import Iterator
from typing import Any, TextIO


class SurvivingStream:
    """Wraps a console stream; after its first failed write it sends everything to /dev/null instead."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.lost = False

    def write(self, text: str) -> int:
        if not self.lost:
            try:
                return self._stream.write(text)
            except OSError:
                self._lose()
        return len(text)

    def flush(self) -> None:
        if not self.lost:
            try:
                self._stream.flush()
            except OSError:
                self._lose()

    def _lose(self) -> None:
        """Point the stream's descriptor at /dev/null, so that the text still in its buffer, child processes
        sharing the descriptor and the interpreter's last flush all write somewhere that takes it."""
        self.lost = True
        with contextlib.suppress(OSError, ValueError, AttributeError):
            quiet(self._stream.fileno())
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def quiet(fd: int) -> None:
    """Send whatever is written to `fd` from now on to /dev/null."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


@contextlib.contextmanager
def kept_alive(survive: bool) -> Iterator[None]:
    """While inside, stdout and stderr are `SurvivingStream`s when `survive`; otherwise nothing changes."""
    if not survive:
        yield
        return
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = SurvivingStream(sys.stdout), SurvivingStream(sys.stderr)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def stdout_is_closed() -> bool:
    """Whether the reader of stdout went away (`planetrl status | head`): its pipe then polls as an error."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll on this platform, or stdout is not a file
        return False


def quiet_stdout() -> None:
    """After stdout's reader left: the interpreter's last flush must not fail on the closed pipe again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        quiet(sys.stdout.fileno())
