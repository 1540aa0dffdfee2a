import json
import os
import subprocess
import sys
import time

import pytest

from planetrl.training.experiment import PING, run_state, try_claim


def test_claim_is_exclusive_and_ends_with_done(tmp_path):
    run = tmp_path / "run-00"
    first = try_claim(run, stale_seconds=60)
    assert first is not None
    assert try_claim(run, stale_seconds=60) is None  # held by a live worker
    assert run_state(run, 60) == "running"
    first.done()
    assert run_state(run, 60) == "done" and not (run / PING).exists()
    assert try_claim(run, stale_seconds=60) is None


def test_failed_run_keeps_its_traceback(tmp_path):
    run = tmp_path / "run-00"
    claim = try_claim(run, stale_seconds=60)
    claim.fail("Traceback ...\nValueError: boom\n")
    assert run_state(run, 60) == "failed"
    assert "ValueError: boom" in (run / "FAIL").read_text()


def test_stale_heartbeat_is_taken_over(tmp_path):
    run = tmp_path / "run-00"
    run.mkdir()
    (run / PING).write_text(json.dumps({"host": "elsewhere", "pid": 1}))
    old = time.time() - 100
    os.utime(run / PING, (old, old))
    assert run_state(run, stale_seconds=50) == "stale"
    claim = try_claim(run, stale_seconds=50)
    assert claim is not None
    records = [json.loads(line) for line in (run / "claims.jsonl").read_text().splitlines()]
    assert records[-1]["took_over"] is True
    claim.abandon()


def test_dead_owner_on_this_host_is_stale_at_once(tmp_path):
    run = tmp_path / "run-00"
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    import socket

    run.mkdir()
    (run / PING).write_text(json.dumps({"host": socket.gethostname(), "pid": child.pid}))
    assert run_state(run, stale_seconds=3600) == "stale"


def test_heartbeat_keeps_a_claim_fresh(tmp_path):
    run = tmp_path / "run-00"
    claim = try_claim(run, stale_seconds=0.4)
    before = (run / PING).stat().st_mtime
    time.sleep(0.5)
    assert (run / PING).stat().st_mtime > before
    assert run_state(run, 0.4) == "running"
    claim.abandon()


def test_a_stop_between_the_ping_and_the_claim_lets_the_run_go(tmp_path, monkeypatch):
    """A SIGTERM just after the PING was written left it behind: the run read as held, then stale."""
    from planetrl.training import experiment

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(experiment, "append_json_line", stopped)
    run = tmp_path / "run-00"
    with pytest.raises(KeyboardInterrupt):
        try_claim(run, stale_seconds=60)
    assert not (run / PING).exists() and run_state(run, 60) == "new"


def test_a_stop_before_the_claimed_run_starts_lets_the_run_go(tmp_path, monkeypatch):
    """The signal can land after the run is claimed and before the code that lets go on Ctrl-C is entered."""
    from planetrl import config as C
    from planetrl.training import runner

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "_run_one", stopped)
    with pytest.raises(KeyboardInterrupt):
        runner.run_experiment(tmp_path, 1, C.build("debug"), {}, make_run=None)
    assert not (tmp_path / "run-00" / PING).exists()
    assert run_state(tmp_path / "run-00", 60) == "new"
