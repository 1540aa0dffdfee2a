"""Experiments: run directories under a logdir, claimed by workers with PING / DONE / FAIL.

Several workers (processes on one machine or on machines sharing a
filesystem) can point at the same logdir. A worker claims a run by creating
its PING file exclusively and keeps it fresh with a heartbeat; DONE or FAIL
(with the traceback) marks the end. A PING whose heartbeat stopped for
`stale_seconds`, or whose owner process on this host is gone, is taken over
and the run resumes from its checkpoint.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from planetrl.atomic import write_atomic
from planetrl.metrics import append_json_line

PING, DONE, FAIL = "PING", "DONE", "FAIL"


class ClaimLost(RuntimeError):
    """This worker's claim on a run was taken over (it was paused past the stale limit, say)."""


def worker_id() -> str:
    """host:pid:random, unique per worker process."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def _owner_is_gone(ping: Path) -> bool:
    """True when the PING names a process on this host that no longer exists."""
    try:
        owner = json.loads(ping.read_text())
    except (OSError, ValueError):
        return False
    if owner.get("host") != socket.gethostname():
        return False
    try:
        os.kill(int(owner["pid"]), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, KeyError, ValueError):
        return False
    return False


def run_state(run_dir: Path, stale_seconds: float) -> str:
    """done, failed, running, stale or new."""
    if (run_dir / DONE).exists():
        return "done"
    if (run_dir / FAIL).exists():
        return "failed"
    ping = run_dir / PING
    if not ping.exists():
        return "new"
    try:
        age = time.time() - ping.stat().st_mtime
    except FileNotFoundError:
        return "new"
    return "stale" if age > stale_seconds or _owner_is_gone(ping) else "running"


class Claim:
    """A worker's hold on one run: heartbeat while held, DONE or FAIL at the end.

    The claim is fenced: `check()` (called before every write of the run)
    raises ClaimLost once the PING names another worker, so a worker that was
    paused past the stale limit and taken over stops instead of writing beside
    the new owner. A lost claim writes no verdict and leaves the new PING alone.
    """

    def __init__(self, run_dir: Path, worker: str, heartbeat: float) -> None:
        self.run_dir = run_dir
        self.worker = worker
        self._released = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, args=(heartbeat,), daemon=True)
        self._thread.start()

    def owner(self) -> str | None:
        """The worker the PING names now, or None without a readable PING."""
        try:
            return json.loads((self.run_dir / PING).read_text()).get("worker")
        except (OSError, ValueError, AttributeError):
            return None

    def check(self) -> None:
        """Raise ClaimLost unless this worker still holds the run."""
        owner = self.owner()
        if owner != self.worker:
            holder = f"worker {owner}" if owner else "no worker (its PING is gone)"
            raise ClaimLost(f"{self.run_dir} is now held by {holder}; this worker ({self.worker}) lost its claim, "
                            "probably while paused longer than run.stale_seconds, and stops without writing")

    def _beat(self, interval: float) -> None:
        while not self._stop.wait(interval):
            if self.owner() != self.worker:
                return
            try:
                os.utime(self.run_dir / PING)
            except FileNotFoundError:
                return

    def _release(self) -> None:
        if self._released:
            return
        self._released = True
        self._stop.set()
        self._thread.join()
        if self.owner() == self.worker:
            (self.run_dir / PING).unlink(missing_ok=True)

    def done(self) -> None:
        self.check()
        write_atomic(self.run_dir / DONE, json.dumps({"worker": self.worker, "time": time.time()}) + "\n")
        self._release()

    def fail(self, traceback_text: str) -> None:
        self.check()
        write_atomic(self.run_dir / FAIL, traceback_text)
        self._release()

    def abandon(self) -> None:
        """Let go without a verdict (Ctrl-C): another worker may resume the run."""
        self._release()


def try_claim(run_dir: Path, stale_seconds: float, worker: str | None = None) -> Claim | None:
    """Claim a new or stale run; None when it is done, failed, or held by a live worker."""
    worker = worker or worker_id()
    run_dir.mkdir(parents=True, exist_ok=True)
    state = run_state(run_dir, stale_seconds)
    if state in ("done", "failed", "running"):
        return None
    ping = run_dir / PING
    if state == "stale":
        # Only one taker wins the rename; the others find the file gone.
        try:
            os.rename(ping, run_dir / f".PING.stale.{uuid.uuid4().hex}")
        except FileNotFoundError:
            return None
    host, pid = socket.gethostname(), os.getpid()
    try:
        fd = os.open(ping, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return None
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump({"worker": worker, "host": host, "pid": pid, "time": time.time()}, handle)
        for stale in run_dir.glob(".PING.stale.*"):
            stale.unlink(missing_ok=True)
        append_json_line(run_dir / "claims.jsonl",
                         {"worker": worker, "time": time.time(), "took_over": state == "stale"})
        return Claim(run_dir, worker, heartbeat=max(min(stale_seconds / 4, 30.0), 0.05))
    except BaseException:  # a stop signal or a failed write between the PING and the Claim: let the run go
        ping.unlink(missing_ok=True)
        raise


def run_dirs(logdir: Path, runs: int) -> list[Path]:
    """The run directories of an experiment: logdir/run-00, run-01, ..."""
    return [logdir / f"run-{index:02d}" for index in range(runs)]


def claimable_runs(logdir: Path, runs: int, stale_seconds: float, only: int | None = None,
                   wait: bool = False) -> Iterator[tuple[int, Path, Claim]]:
    """Claim and yield the runs this worker should do, one at a time, in order.

    Close the iterator when stopping early (`contextlib.closing`): that lets go of a claim the consumer was
    handed but had not settled yet. `only` restricts the experiment to one run index. With `wait`, a run held
    by another worker is waited for until it is done, failed or stale (a retried
    sweep task on another node waits out the heartbeat of the worker it replaces).
    """
    worker = worker_id()
    for index, run_dir in enumerate(run_dirs(logdir, runs)):
        if only is not None and index != only:
            continue
        claim = try_claim(run_dir, stale_seconds, worker)
        while claim is None and wait and run_state(run_dir, stale_seconds) == "running":
            time.sleep(min(stale_seconds / 4, 10.0))
            claim = try_claim(run_dir, stale_seconds, worker)
        if claim is not None:
            try:
                yield index, run_dir, claim
            finally:  # the consumer stopped (a signal) before it settled the claim: let go of the run
                claim.abandon()
