"""A lost console (closed pipe, closed terminal) neither fails a run nor makes a listing print a traceback."""

import errno
import io
import json
import os
import pty
import subprocess
import sys

import pytest

from planetrl.cli.console import SurvivingStream

PLANETRL = [sys.executable, "-m", "planetrl.cli"]


def _closed_pipe() -> int:
    """The write end of a pipe whose reader is gone: every write to it fails with EPIPE."""
    read, write = os.pipe()
    os.close(read)
    return write


def _run_on(fd: int, argv: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([*PLANETRL, *argv], stdout=fd, stderr=fd, env={**os.environ, "OMP_NUM_THREADS": "1"})
    finally:
        os.close(fd)


def _test_updates(run_dir) -> list[int]:
    return [json.loads(line)["updates"] for line in (run_dir / "tests.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("progress", [[], ["--no-progress"]], ids=["bar", "lines"])
def test_a_run_whose_output_pipe_closed_trains_to_its_end(tmp_path, progress):
    """`planetrl train ... | tee log` whose tee died: the run failed at its first line (BrokenPipeError)."""
    done = _run_on(_closed_pipe(), ["train", "--preset", "debug", "--logdir", str(tmp_path / "x"), *progress])
    run = tmp_path / "x" / "run-00"
    assert done.returncode == 0
    assert (run / "DONE").exists() and not (run / "FAIL").exists()
    assert _test_updates(run) == [8, 12]


def test_a_ppo_run_whose_terminal_closed_trains_to_its_end(tmp_path):
    """A closed terminal fails every write with EIO, where a pipe fails with EPIPE."""
    terminal, device = pty.openpty()
    os.close(terminal)
    done = _run_on(device, ["ppo", "train", "--config", "debug", "--logdir", str(tmp_path / "p")])
    assert done.returncode == 0
    assert (tmp_path / "p" / "run-00" / "DONE").exists()


@pytest.mark.parametrize("argv", [["config", "--keys"], ["config", "--ppo", "debug"]])
def test_a_listing_whose_reader_left_stops_quietly_with_the_sigpipe_status(argv):
    """`planetrl config --keys | head -1`: the shell's status for a reader that left, and no error text."""
    read, write = os.pipe()
    os.close(read)
    done = subprocess.run([*PLANETRL, *argv], stdout=write, stderr=subprocess.PIPE, text=True)
    os.close(write)
    assert done.returncode == 141
    assert done.stderr == ""


def test_a_listing_keeps_its_errors_that_are_not_its_reader_leaving(tmp_path):
    """Only a closed stdout is quiet: a bad request still says what is wrong."""
    done = subprocess.run([*PLANETRL, "status", "--logdir", str(tmp_path / "none")], capture_output=True, text=True)
    assert done.returncode == 2 and "error" in done.stderr


class _Terminal(io.StringIO):
    """A console whose writes fail from the third on, as a terminal does once it is closed."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        if self.writes > 2:
            raise OSError(errno.EIO, "Input/output error")
        return super().write(text)


def test_a_surviving_stream_keeps_what_was_written_and_drops_the_rest_after_the_first_failure():
    terminal = _Terminal()
    stream = SurvivingStream(terminal)
    for text in ("one\n", "two\n", "three\n", "four\n"):
        assert stream.write(text) == len(text)
    stream.flush()
    assert terminal.getvalue() == "one\ntwo\n"
    assert stream.lost and terminal.writes == 3  # after the failure nothing more is tried


def test_an_eval_whose_output_pipe_closed_still_writes_its_result(tmp_path):
    """eval's result is RUN/eval.json as much as its printed line, and an eval can take an hour on a CPU."""
    trained = _run_on(_closed_pipe(), ["train", "--preset", "debug", "--logdir", str(tmp_path / "x")])
    assert trained.returncode == 0
    run = tmp_path / "x" / "run-00"
    done = _run_on(_closed_pipe(), ["eval", "--run", str(run), "--episodes", "2"])
    assert done.returncode == 0
    assert len(json.loads((run / "eval.json").read_text())["returns"]) == 2
