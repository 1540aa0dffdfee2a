"""Metrics to TensorBoard and metrics.jsonl, averaged over each logging interval."""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from planetrl.atomic import write_atomic

log = logging.getLogger(__name__)
_warned_lines: set[tuple[str, int]] = set()


class StreamingMean:
    """Running means of named scalars between two flushes (the agents library's streaming_mean)."""

    def __init__(self) -> None:
        self._sums: dict[str, float] = defaultdict(float)
        self._counts: dict[str, int] = defaultdict(int)

    def add(self, values: Mapping[str, float]) -> None:
        for key, value in values.items():
            self._sums[key] += float(value)
            self._counts[key] += 1

    def flush(self) -> dict[str, float]:
        """The means since the last flush; then start over."""
        means = {key: self._sums[key] / self._counts[key] for key in self._sums}
        self._sums.clear()
        self._counts.clear()
        return means


class MetricsLogger:
    """Writes scalars to `metrics.jsonl` (one object per call) and to TensorBoard under `events/`."""

    def __init__(self, run_dir: str | Path, tensorboard: bool = True, keep_through: int | None = None,
                 wandb_project: str = "", config: Mapping[str, Any] | None = None, keep_all: bool = False) -> None:
        """`keep_through`: on resume, the step of the checkpoint; records logged after it (before a kill)
        are dropped from metrics.jsonl and TensorBoard, so every step appears once and steps only go up.

        `keep_all`, for a resume from the checkpoint before a damaged one: the records after that checkpoint
        also tell of episodes and test phases that stay on disk and are not done again, so every record is kept
        and scalars are written only for steps after the last one logged.
        """
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / "metrics.jsonl"
        self._writer: Any = None
        self._failed = False
        self._logged_through = -1
        if keep_all:
            keep_through = None
            self._logged_through = max((s for s in map(record_step, read_json_lines(self.path)) if s is not None),
                                       default=-1)
        if keep_through is not None and self.path.exists():
            kept = [r for r in read_json_lines(self.path)
                    if (step := record_step(r)) is not None and step <= keep_through]
            write_atomic(self.path, "".join(json.dumps(r) + "\n" for r in kept))
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            _silence_event_writer_threads()
            purge = None if keep_through is None else keep_through + 1
            self._writer = self._events(lambda: SummaryWriter(str(self.run_dir / "events"), purge_step=purge))
        self._wandb: Any = None
        if wandb_project:
            self._wandb = _start_wandb(self.run_dir, wandb_project, config)

    def _events(self, action: Callable[[], Any]) -> Any:
        """Run one TensorBoard call; its write error (a full disk, say) is raised naming the events folder."""
        try:
            return action()
        except OSError as error:
            self._failed = True
            raise OSError(error.errno, f"cannot write TensorBoard events in {self.run_dir / 'events'}: "
                                       f"{error.strerror or error}") from error

    def scalars(self, step: int, values: Mapping[str, float]) -> None:
        """Log named scalars at a step (keys like `train/loss`)."""
        if step <= self._logged_through:
            return
        clean = {k: float(v) for k, v in values.items() if v is not None and math.isfinite(float(v))}
        record = {"step": int(step), "time": round(time.time(), 3), **clean}
        append_json_line(self.path, record)
        if self._writer is not None:
            self._events(lambda: [self._writer.add_scalar(k, v, step) for k, v in clean.items()])
            self._events(self._writer.flush)
        if self._wandb is not None:
            self._wandb.log({**clean, "step": int(step)})

    def image(self, step: int, name: str, image: np.ndarray) -> None:
        """Log an (H, W, 3) uint8 image to TensorBoard."""
        if self._writer is not None:
            self._events(lambda: self._writer.add_image(name, image, step, dataformats="HWC"))
            self._events(self._writer.flush)

    def gif(self, step: int, name: str, gif: bytes, height: int, width: int) -> None:
        """Log an encoded GIF as an image summary: TensorBoard's image panel plays it."""
        if self._writer is None:
            return
        from tensorboard.compat.proto.summary_pb2 import Summary

        image = Summary.Image(height=height, width=width, colorspace=3, encoded_image_string=gif)
        summary = Summary(value=[Summary.Value(tag=name, image=image)])
        self._events(lambda: self._writer._get_file_writer().add_summary(summary, step))
        self._events(self._writer.flush)

    def text(self, name: str, text: str) -> None:
        """Log markdown text (the run's config) to TensorBoard's text panel."""
        if self._writer is not None:
            self._events(lambda: self._writer.add_text(name, text, 0))
            self._events(self._writer.flush)

    def close(self) -> None:
        """Flush and close; a write error here is raised only if no earlier one was (that one told the story)."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            if self._failed:
                try:
                    writer.close()
                except OSError:
                    pass
            else:
                self._events(writer.close)
        if self._wandb is not None:
            self._wandb.finish()


def _silence_event_writer_threads() -> None:
    """TensorBoard's writer thread prints a write error as a traceback and hands it to the next flush, which
    raises it (named, by `MetricsLogger._events`): keep the thread's copy off the terminal."""
    from tensorboard.summary.writer import event_file_writer

    writer_thread = getattr(event_file_writer, "_AsyncWriterThread", None)
    previous = threading.excepthook
    if writer_thread is None or getattr(previous, "planetrl_quiet_events", False):
        return

    def hook(args: threading.ExceptHookArgs) -> None:
        if not (isinstance(args.thread, writer_thread) and issubclass(args.exc_type, OSError)):
            previous(args)

    hook.planetrl_quiet_events = True  # type: ignore[attr-defined]
    threading.excepthook = hook


def _start_wandb(run_dir: Path, project: str, config: Mapping[str, Any] | None) -> Any:
    """A W&B run that a resumed planetrl run continues (its id is derived from the run directory)."""
    try:
        import wandb
    except ImportError as error:
        raise ImportError("run.wandb_project needs Weights & Biases: pip install 'planetrl[wandb]'") from error
    import hashlib

    run_id = hashlib.sha1(str(run_dir.resolve()).encode()).hexdigest()[:16]
    return wandb.init(project=project, dir=str(run_dir), id=run_id, resume="allow", name=run_dir.name,
                      config=dict(config or {}))


def append_json_line(path: str | Path, record: Mapping[str, Any]) -> None:
    """Append one JSON record as a line; a line a kill or a full disk left torn is ended first, so the torn
    line stays one unreadable line (skipped by `read_json_lines`) and does not swallow this record."""
    with open(path, "ab+") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell() > 0:
            handle.seek(-1, os.SEEK_END)
            torn = handle.read(1) != b"\n"
            handle.seek(0, os.SEEK_END)
            if torn:
                handle.write(b"\n")
        handle.write((json.dumps(dict(record)) + "\n").encode())


def finite_number(value: Any) -> bool:
    """A real, finite number as JSON gives it (an int or a float, not a bool, NaN or inf)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def record_step(record: Mapping[str, Any]) -> int | None:
    """A metrics record's step (0 where it has none), or None where a damaged line holds no whole number."""
    step = record.get("step", 0)
    return step if isinstance(step, int) and not isinstance(step, bool) else None


def read_json_lines(path: str | Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, one a line (none if it is missing).

    A last line without its newline is a write in progress, or one a kill tore, and is left out quietly. Any
    other line that is not a JSON object (a line torn by an earlier kill, damaged bytes) is left out with a
    warning, once per process, naming the file and the line: a resume or a status must not stop on it.
    """
    path = Path(path)
    try:
        lines = path.read_bytes().split(b"\n")
    except FileNotFoundError:
        return []
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line.decode())
        except ValueError:  # not JSON, or not UTF-8
            record = None
        if isinstance(record, dict):
            records.append(record)
        elif number < len(lines) and (str(path), number) not in _warned_lines:
            _warned_lines.add((str(path), number))
            log.warning("%s: line %d is not a JSON object (torn by a kill, or damaged); left out: %.60r",
                        path, number, line)
    return records


def read_metrics(run_dir: str | Path) -> list[dict[str, Any]]:
    """All records of a run's metrics.jsonl."""
    return read_json_lines(Path(run_dir) / "metrics.jsonl")
