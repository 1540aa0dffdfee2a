import json
import os
import subprocess
import sys
import time

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
