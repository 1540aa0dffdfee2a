"""Runs that outside events do not end: a paused worker taken over, a full disk, temporaries left by a kill,
metrics after a resume, and one-line answers to command-line mistakes."""

import json
import logging
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import torch
import yaml

from planetrl import config as C
from planetrl.atomic import clean_temporaries, write_atomic
from planetrl.cli import main
from planetrl.metrics import MetricsLogger, read_metrics
from planetrl.training.experiment import ClaimLost, try_claim
from planetrl.training.planet import load_trained, read_tests

DEBUG = ["--preset", "debug", "--no-progress"]


def _train_command(logdir, *extra):
    return [sys.executable, "-m", "planetrl.cli", "train", "--logdir", str(logdir), *DEBUG, *extra]


def test_a_lost_claim_refuses_to_write_and_leaves_the_new_owner_alone(tmp_path):
    first = try_claim(tmp_path, stale_seconds=0.2, worker="a")
    first._stop.set()  # the worker is paused: no heartbeat
    time.sleep(0.5)
    second = try_claim(tmp_path, stale_seconds=0.2, worker="b")
    assert second is not None
    with pytest.raises(ClaimLost, match="now held by worker b"):
        first.check()
    with pytest.raises(ClaimLost):
        first.done()
    first.abandon()
    assert not (tmp_path / "DONE").exists()
    assert json.loads((tmp_path / "PING").read_text())["worker"] == "b"
    second.check()
    second.done()
    assert (tmp_path / "DONE").exists() and not (tmp_path / "PING").exists()


def test_paused_worker_taken_over_then_resumed_stops_and_only_one_writer_finishes(tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    stale = ["--set", "run.stale_seconds=1.5"]
    paused = subprocess.Popen(_train_command(tmp_path, *stale), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env)
    run = tmp_path / "run-00"
    for _ in range(600):  # wait until it holds the run and has begun writing
        if (run / "PING").exists() and list((run / "train_episodes").glob("*.npz")):
            break
        time.sleep(0.05)
    paused.send_signal(signal.SIGSTOP)
    try:
        time.sleep(2.5)  # past the stale limit
        taker = subprocess.run(_train_command(tmp_path, *stale), capture_output=True, text=True, env=env,
                               timeout=600)
        assert taker.returncode == 0, taker.stderr
    finally:
        paused.send_signal(signal.SIGCONT)
    out, err = paused.communicate(timeout=600)
    assert paused.returncode != 0
    assert "lost its claim" in err
    assert f"run {run} done" not in out  # the paused worker never declares the run done
    tests = read_tests(run)
    assert [t["updates"] for t in tests] == [8, 12]  # each test phase exactly once
    claims = [json.loads(line) for line in (run / "claims.jsonl").read_text().splitlines()]
    assert [c["took_over"] for c in claims] == [False, True]
    assert json.loads((run / "DONE").read_text())["worker"] == claims[1]["worker"]


def _small_filesystem(tmp_path: Path, options: str = "size=96k") -> Path:
    mount = tmp_path / "small"
    mount.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({result.stderr.strip() or 'mount failed'})")
    return mount


def test_a_full_disk_fails_the_write_and_leaves_no_temporary_file(tmp_path):
    mount = _small_filesystem(tmp_path)
    try:
        write_atomic(mount / "small.txt", "fits")
        # Each failure names the file it was writing, not the hidden temporary (torch wraps the OSError).
        with pytest.raises(OSError, match=f"cannot write {mount / 'big.bin'}: No space left on device"):
            write_atomic(mount / "big.bin", b"\0" * 200_000)
        with pytest.raises(OSError, match=f"cannot write {mount / 'ckpt.pt'}: No space left on device"):
            write_atomic(mount / "ckpt.pt", lambda handle: torch.save({"x": torch.zeros(100_000)}, handle))
        assert sorted(p.name for p in mount.iterdir()) == ["small.txt"]
        assert (mount / "small.txt").read_text() == "fits"
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_run_on_a_full_disk_fails_in_one_line_and_leaves_no_temporary_file(tmp_path, capsys):
    mount = _small_filesystem(tmp_path)
    try:
        code = main(["train", "--logdir", str(mount / "exp"), *DEBUG])
        err = capsys.readouterr().err
        assert code != 0
        assert "No space left on device" in err
        assert "Traceback" not in err
        assert not [p for p in mount.rglob("*.tmp")]
        # The disk filled before the first checkpoint: no message may promise one.
        assert not list(mount.rglob("latest.pt"))
        assert "no checkpoint was saved yet" in err and "last good checkpoint" not in err
        assert ("its episodes on disk are kept" in err) == bool(list(mount.rglob("*.npz"))), err
        assert main(["train", "--logdir", str(mount / "exp"), *DEBUG]) == 1
        assert "--retry-failed to try again from its start" in capsys.readouterr().err
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_ppo_run_whose_events_cannot_be_written_fails_in_one_line_naming_the_folder(tmp_path, capsys):
    mount = _small_filesystem(tmp_path, "size=16k")
    try:
        code = main(["ppo", "train", "--config", "debug", "--logdir", str(mount / "ppo"), "--no-progress"])
        err = capsys.readouterr().err
        assert code != 0
        assert "cannot write TensorBoard events in" in err and "No space left on device" in err, err
        assert "Traceback" not in err and "Exception in thread" not in err, err
        # PPO stores no episodes: the failure may not promise any.
        assert "episodes on disk" not in err, err
        assert not [p for p in mount.rglob("*.tmp")]
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_logdir_on_a_read_only_filesystem_is_one_line(tmp_path, capsys):
    mount = _small_filesystem(tmp_path, "ro,size=96k")
    try:
        assert main(["train", "--logdir", str(mount / "exp"), *DEBUG]) != 0
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "Read-only file system" in err[0], err
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_temporaries_from_a_kill_are_removed_when_the_run_starts_again(tmp_path):
    assert main(["train", "--logdir", str(tmp_path), *DEBUG, "--set", "train.total_updates=4",
                 "--set", "train.test_every=4"]) == 0
    run = tmp_path / "run-00"
    orphans = [run / "checkpoints" / ".latest.pt.1234abcd.tmp", run / "train_episodes" / f".{uuid.uuid4().hex}.tmp",
               run / ".config.yaml.deadbeef.tmp"]
    for orphan in orphans:
        orphan.write_bytes(b"half")
    (run / "DONE").unlink()
    assert main(["train", "--logdir", str(tmp_path), *DEBUG, "--set", "train.total_updates=4",
                 "--set", "train.test_every=4"]) == 0
    assert not any(o.exists() for o in orphans)
    assert clean_temporaries(run) == []


def test_metrics_after_a_resume_have_each_step_once_and_only_go_up(tmp_path):
    logger = MetricsLogger(tmp_path, tensorboard=False)
    for step in (10, 20, 30):
        logger.scalars(step, {"train/loss": step})
    with open(tmp_path / "metrics.jsonl", "a") as handle:
        handle.write('{"step": 40, "train/lo')  # a torn line from a kill
    resumed = MetricsLogger(tmp_path, tensorboard=False, keep_through=20)  # the checkpoint was at 20
    for step in (30, 40):
        resumed.scalars(step, {"train/loss": step})
    steps = [r["step"] for r in read_metrics(tmp_path)]
    assert steps == [10, 20, 30, 40]


# ---------------------------------------------------------------- command-line mistakes


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A trained PlaNet run, a trained PPO run, and a few broken directories."""
    root = tmp_path_factory.mktemp("runs")
    assert main(["train", "--logdir", str(root / "planet"), *DEBUG]) == 0
    assert main(["ppo", "train", "--config", "debug", "--logdir", str(root / "ppo"), "--no-progress"]) == 0
    (root / "empty").mkdir()
    record = root / "records" / "mock" / "seed-0"
    record.mkdir(parents=True)
    (record / "tests.jsonl").write_text('{"updates": 10, "returns": [1.0]}\n')
    (root / "a-file").write_text("not a directory")
    fresh = root / "fresh" / "run-00"
    fresh.mkdir(parents=True)
    C.save(C.build("debug"), fresh / "config.yaml")
    crafted = root / "crafted" / "run-00"
    (crafted / "checkpoints").mkdir(parents=True)
    C.save(C.build("debug"), crafted / "config.yaml")
    (crafted / "checkpoints" / "latest.pt").write_bytes(b"\x80\x04cos\nsystem\nq\x00.")
    bad_yaml = root / "badyaml" / "run-00"
    bad_yaml.mkdir(parents=True)
    (bad_yaml / "config.yaml").write_text("env: [unclosed\n")
    python_yaml = root / "pyyaml" / "run-00"
    python_yaml.mkdir(parents=True)
    (python_yaml / "config.yaml").write_text("!!python/object/apply:os.system ['echo hi']\n")
    return root


MISTAKES = {
    "eval on a missing directory": (["eval", "--run", "{root}/nope"], "no run directory"),
    "eval on an empty directory": (["eval", "--run", "{root}/empty"], "not a run directory"),
    "eval on a logdir": (["eval", "--run", "{root}/planet"], "pass one of them"),
    "eval on a run without checkpoint": (["eval", "--run", "{root}/fresh/run-00"], "no checkpoint"),
    "eval on a PPO run": (["eval", "--run", "{root}/ppo/run-00"], "PPO run"),
    "eval changing a model key": (["eval", "--run", "{root}/planet/run-00", "--set", "model.depth=8"],
                                  "only planner.* keys"),
    "visualize changing a model key": (["visualize", "--run", "{root}/planet/run-00", "--out", "{root}/v",
                                        "--set", "model.depth=8"],
                                       "planetrl visualize: error: --set model.depth: only planner.* keys"),
    "eval with a planner typo": (["eval", "--run", "{root}/planet/run-00", "--set", "planner.candidate=8"],
                                 "Unknown config key"),
    "eval with fewer candidates than elites": (
        ["eval", "--run", "{root}/planet/run-00", "--set", "planner.candidates=2"], "must be at most"),
    "visualize on a missing directory": (["visualize", "--run", "{root}/nope", "--out", "{root}/v"],
                                         "no run directory"),
    "train into a finished PPO logdir": (["train", "--logdir", "{root}/ppo", *DEBUG],
                                         "a PPO run's config (sections ppo); use a new --logdir"),
    "ppo train into a finished PlaNet logdir": (
        ["ppo", "train", "--config", "debug", "--logdir", "{root}/planet", "--no-progress"],
        "a PlaNet run's config"),
    "visualize on a PPO run": (["visualize", "--run", "{root}/ppo/run-00", "--out", "{root}/v"], "PPO run"),
    "ppo visualize on a PlaNet run": (["ppo", "visualize", "--run", "{root}/planet/run-00", "--out", "{root}/v"],
                                      "PlaNet run"),
    "ppo visualize on a missing directory": (["ppo", "visualize", "--run", "{root}/nope", "--out", "{root}/v"],
                                             "no run directory"),
    "a crafted checkpoint": (["eval", "--run", "{root}/crafted/run-00"], "not a planetrl checkpoint"),
    "a broken config.yaml": (["eval", "--run", "{root}/badyaml/run-00"], "not a planetrl config"),
    "a config.yaml that tries to run code": (["eval", "--run", "{root}/pyyaml/run-00"], "not a planetrl config"),
    "a logdir that is a file": (["train", "--logdir", "{root}/a-file", *DEBUG], "is a file"),
    "a typo in the task": (["train", "--logdir", "{root}/typo", "--task", "cartpole-swingpu", *DEBUG],
                           "unknown task"),
    "report on a missing logdir": (["report", "--logdir", "{root}/nope", "--out", "{root}/r"],
                                   "no logdir at"),
    "status on a missing logdir": (["status", "--logdir", "{root}/nope"], "no logdir at"),
    "status on a logdir that is a file": (["status", "--logdir", "{root}/a-file"], "is a file"),
    "status on an empty logdir": (["status", "--logdir", "{root}/empty"], "no runs under"),
    "report on an empty logdir": (["report", "--logdir", "{root}/empty", "--out", "{root}/r"], "no runs"),
    "report on exported records": (["report", "--logdir", "{root}/records", "--out", "{root}/r"],
                                  "results table --dir"),
    "an unknown config key": (["train", "--logdir", "{root}/x", *DEBUG, "--set", "model.belief=3"],
                              "Unknown config key"),
    "results export of a PPO run": (["results", "export", "--run", "{root}/ppo/run-00", "--out", "{root}/rec"],
                                    "planetrl results export: error: {root}/ppo/run-00 is a PPO run"),
    "ppo train with no runs": (["ppo", "train", "--config", "debug", "--logdir", "{root}/x", "--runs", "0"],
                               "planetrl ppo train: error: --runs must be at least 1"),
}


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_each_command_line_mistake_is_one_line_naming_the_problem(runs, capsys, mistake):
    argv, expected = MISTAKES[mistake]
    expected = expected.format(root=runs)
    code = main([a.format(root=runs) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0
    assert len(err) == 1 and expected in err[0], err
    assert "Traceback" not in err[0]


@pytest.mark.parametrize(("command", "run"), [(["eval"], "planet"), (["ppo", "eval"], "ppo")])
def test_eval_runs_more_episodes_than_it_holds_environments(runs, tmp_path, monkeypatch, command, run):
    """It made one environment (for PlaNet, one process of about 160 MB on DMC) per episode."""
    from planetrl.cli import planet_commands, ppo_commands
    from planetrl.envs import make

    made, real = [], make.make_batch_env
    monkeypatch.setattr(make, "make_batch_env", lambda cfg, count, seed=0: made.append(count) or real(cfg, count, seed))
    for module in (planet_commands, ppo_commands):
        monkeypatch.setattr(module, "PARALLEL_EPISODES", 3)
    out = tmp_path / "eval.json"
    assert main([*command, "--run", str(runs / run / "run-00"), "--episodes", "5", "--json", str(out)]) == 0
    assert made == [3] and len(json.loads(out.read_text())["returns"]) == 5


def test_status_on_a_run_directory_shows_that_run(runs, capsys):
    run = runs / "planet" / "run-00"
    assert main(["status", "--logdir", str(run)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3 and " done " in lines[2] and lines[2].endswith(str(run))


def test_status_of_a_ppo_run_counts_its_updates_and_its_last_evaluation(runs, capsys):
    """It showed the env steps as updates and '-' as the return: it read PlaNet's files, which PPO does not write."""
    from planetrl.metrics import read_metrics

    run = runs / "ppo" / "run-00"
    last_eval = max((r["step"], r["eval/return"]) for r in read_metrics(run) if "eval/return" in r)[1]
    assert main(["status", "--logdir", str(runs / "ppo")]) == 0
    row = capsys.readouterr().out.strip().splitlines()[2].split()
    assert row[2:6] == ["done", "-", "5", f"{last_eval:.1f}"]  # debug: 150 steps in updates of 30


def test_a_typo_in_the_task_creates_nothing(tmp_path):
    assert main(["train", "--logdir", str(tmp_path / "exp"), "--task", "chetah-run", *DEBUG]) != 0
    assert not (tmp_path / "exp").exists()


@pytest.mark.parametrize("command", [["train", "--logdir", "{out}", *DEBUG],
                                     ["collect", "--task", "mock", "--episodes", "1", "--outdir", "{out}"]])
def test_planet_without_images_is_refused_before_anything_is_made(tmp_path, capsys, command):
    """It made the run directory, collected, and failed on the first episode file ('lacks keys image')."""
    argv = [a.format(out=tmp_path / "out") for a in command] + ["--set", "env.pixels=false"]
    assert main(argv) == 2
    assert "PlaNet learns from images" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_a_task_whose_module_is_missing_names_the_extra_and_creates_nothing(tmp_path, capsys):
    from planetrl.envs.registry import _REGISTRY, TaskSpec, make_mock, register

    register(TaskSpec("needs-absent", make_mock, image_size=16, requires=("planetrl_no_such_module",),
                      extra="absent"))
    try:
        logdir = tmp_path / "exp"
        assert main(["train", "--logdir", str(logdir), "--task", "needs-absent", *DEBUG]) == 2
        err = capsys.readouterr().err
        assert "'planetrl_no_such_module'" in err and "planetrl[absent]" in err
        assert not logdir.exists()
        assert main(["sweep", "--logdir", str(logdir), "--tasks", "mock,needs-absent", "--preset", "debug"]) == 2
        assert "planetrl[absent]" in capsys.readouterr().err and not logdir.exists()
    finally:
        del _REGISTRY["needs-absent"]


def test_cuda_on_a_cpu_machine_creates_nothing(tmp_path, capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert main(["train", "--logdir", str(tmp_path / "exp"), "--device", "cuda", *DEBUG]) != 0
    assert "no CUDA device" in capsys.readouterr().err
    assert not (tmp_path / "exp").exists()


def test_a_failed_run_says_why_when_run_again_and_retries_only_when_asked(tmp_path, capsys):
    assert main(["train", "--logdir", str(tmp_path), *DEBUG]) == 0
    run = tmp_path / "run-00"
    (run / "DONE").unlink()
    (run / "FAIL").write_text("Traceback (most recent call last):\n  ...\nFloatingPointError: loss is nan\n")
    capsys.readouterr()
    assert main(["train", "--logdir", str(tmp_path), *DEBUG]) == 1
    assert "failed earlier: FloatingPointError: loss is nan" in capsys.readouterr().err
    assert main(["train", "--logdir", str(tmp_path), *DEBUG, "--retry-failed"]) == 0
    assert (run / "DONE").exists() and not (run / "FAIL").exists()


def test_a_damaged_checkpoint_fails_the_resume_naming_the_file_and_not_claiming_a_good_one(tmp_path, capsys):
    (tmp_path / "run-00" / "checkpoints").mkdir(parents=True)
    C.save(C.build("debug"), tmp_path / "run-00" / "config.yaml")
    latest = tmp_path / "run-00" / "checkpoints" / "latest.pt"
    torch.save({"updater": {}}, latest)
    latest.write_bytes(latest.read_bytes()[:40])  # cut short, as a damaged copy would be
    assert main(["train", "--logdir", str(tmp_path), *DEBUG]) == 1
    err = capsys.readouterr().err
    assert f"{latest} is not a planetrl checkpoint" in err and "cannot be read" in err
    assert "last good checkpoint is kept" not in err
    assert latest.stat().st_size == 40  # left as found, for the user to restore


def _metric_groups(run):
    return [(r["step"], min(k for k in r if k not in ("step", "time"))) for r in read_metrics(run)]


def test_a_damaged_latest_checkpoint_resumes_from_the_one_before_and_loses_no_episode_or_log_line(tmp_path, caplog):
    """Each save keeps the checkpoint before it; when the latest is damaged from outside, the run goes on from the
    earlier one, keeps the episodes and test phases done since, and ends as an undisturbed run does."""
    argv = ["train", *DEBUG, "--set", "train.total_updates=16"]
    assert main([*argv, "--logdir", str(tmp_path / "whole")]) == 0
    logdir = tmp_path / "damaged"
    assert main(["train", *DEBUG, "--logdir", str(logdir), "--set", "train.total_updates=8"]) == 0
    run, checkpoints = logdir / "run-00", logdir / "run-00" / "checkpoints"
    assert torch.load(checkpoints / "previous.pt", weights_only=True)["updates"] == 4
    # Stopped at update 8 of 16 (as a killed run is), then its latest checkpoint is cut short from outside.
    (run / "DONE").unlink()
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["train"]["total_updates"] = 16
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    episodes = sorted(p.name for p in (run / "train_episodes").glob("*.npz"))
    latest = checkpoints / "latest.pt"
    latest.write_bytes(latest.read_bytes()[:100])
    with caplog.at_level(logging.WARNING, logger="planetrl"):
        assert main([*argv, "--logdir", str(logdir)]) == 0
    assert f"{latest} is not a planetrl checkpoint" in caplog.text and "previous.pt (updates 4)" in caplog.text
    # torch's reason ends at its first sentence, not cut mid-word in the advice after it
    assert "failed finding central directory); using the checkpoint before it" in caplog.text
    assert torch.load(latest, weights_only=True)["updates"] == 16
    assert torch.load(checkpoints / "previous.pt", weights_only=True)["updates"] == 12
    after = sorted(p.name for p in (run / "train_episodes").glob("*.npz"))
    whole = tmp_path / "whole" / "run-00"
    # Names sort by second, then by a random id, so episodes written in the same second may interleave.
    assert set(episodes) <= set(after) and len(after) == len(list((whole / "train_episodes").glob("*.npz")))
    assert [t["updates"] for t in read_tests(run)] == [t["updates"] for t in read_tests(whole)]
    # The collection and test phase logged at update 8 stay; updates 5-8, done again, are not logged twice.
    assert _metric_groups(run) == _metric_groups(whole)
    # Loading the trained model (eval, visualize, PlaNet.load) falls back the same way.
    latest.write_bytes(b"damaged again")
    assert load_trained(run)[2] == 12


def test_a_checkpoint_keeps_the_one_before_and_never_keeps_a_damaged_one(tmp_path, caplog):
    from planetrl.training.rundir import Checkpoint, NotACheckpoint

    model = torch.nn.Linear(2, 2)
    path = tmp_path / "latest.pt"

    def checkpoint():
        return Checkpoint(path, torch.device("cpu"), {"updater": model}, needs="updater")

    writer = checkpoint()
    writer.save(updates=1)
    assert not (tmp_path / "previous.pt").exists()
    writer.save(updates=2)
    assert torch.load(tmp_path / "previous.pt", weights_only=True)["updates"] == 1
    path.write_bytes(b"not a checkpoint")
    reader = checkpoint()
    with caplog.at_level(logging.WARNING, logger="planetrl"):
        assert reader.restore()["updates"] == 1 and reader.fell_back
    assert "using the checkpoint before it" in caplog.text
    reader.save(updates=3)  # the damaged file is overwritten, not kept as the one before
    assert torch.load(tmp_path / "previous.pt", weights_only=True)["updates"] == 1
    assert checkpoint().restore()["updates"] == 3
    # A stop between the two renames of a save leaves only the one before.
    path.unlink()
    assert checkpoint().restore()["updates"] == 1
    # Neither readable: one error naming both files.
    path.write_bytes(b"x")
    (tmp_path / "previous.pt").write_bytes(b"y")
    with pytest.raises(NotACheckpoint, match=r"latest\.pt is not .*previous\.pt is not"):
        checkpoint().restore()


def test_a_failed_save_leaves_the_latest_and_the_previous_checkpoint_as_they_were(tmp_path):
    latest, previous = tmp_path / "latest.pt", tmp_path / "previous.pt"
    latest.write_bytes(b"latest")
    previous.write_bytes(b"previous")

    def full_disk(handle):
        handle.write(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        write_atomic(latest, full_disk, previous=previous)
    assert latest.read_bytes() == b"latest" and previous.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.pt", "previous.pt"]
    write_atomic(latest, b"new", previous=previous)
    assert latest.read_bytes() == b"new" and previous.read_bytes() == b"latest"


def test_a_torn_last_line_does_not_swallow_the_next_record(tmp_path, caplog):
    from planetrl.metrics import append_json_line, read_json_lines

    path = tmp_path / "tests.jsonl"
    append_json_line(path, {"updates": 1})
    with open(path, "a") as handle:  # a kill or a full disk in the middle of a write
        handle.write('{"updates": 2, "ret')
    append_json_line(path, {"updates": 3})
    with open(path, "a") as handle:  # a write in progress, as a reader may find it: left out without a word
        handle.write('{"updates": 4, "ret')
    with caplog.at_level(logging.WARNING, logger="planetrl"):
        assert read_json_lines(path) == [{"updates": 1}, {"updates": 3}]
    assert caplog.text.count("is not a JSON object") == 1 and f"{path}: line 2 is not" in caplog.text


def test_hand_damaged_bookkeeping_files_are_named_and_worked_around(tmp_path, caplog):
    """A nonsense test record, an unreadable seed-episode count or machine info: status, export and a resumed
    run each say which file and go on."""
    from planetrl.training.results import export_record
    from planetrl.training.sweep import status_rows

    argv = ["train", "--logdir", str(tmp_path), *DEBUG, "--set", "train.total_updates=16"]
    assert main(["train", "--logdir", str(tmp_path), *DEBUG, "--set", "train.total_updates=8"]) == 0
    run = tmp_path / "run-00"
    tests = read_tests(run)
    with open(run / "tests.jsonl", "ab") as handle:  # bytes that are not UTF-8 stopped every reader once
        handle.write(b'{"updates": "abc", "returns": "x"}\n{"updates": 3, "returns": [NaN]}\n\xff\xfe{"upd\n')
    with open(run / "metrics.jsonl", "ab") as handle:
        handle.write(b'\x00\xff damaged\n[1, 2]\n{"step": "x", "time": "y", "train/loss": 1.0}\n')
    (run / "run_info.json").write_text("[1, 2")
    (run / "seed_episodes.json").write_bytes(b"\xff\xfe")
    metric_lines = (run / "metrics.jsonl").read_bytes().splitlines()
    with caplog.at_level(logging.WARNING, logger="planetrl"):
        [row] = status_rows(tmp_path)
        assert read_tests(run) == tests
        assert read_metrics(run) == [json.loads(line) for line in metric_lines[:-3] + metric_lines[-1:]]
    assert row["updates"] == 8 and row["test_return"] == pytest.approx(sum(tests[-1]["returns"]) / 2)
    assert f"tests.jsonl: record {len(tests) + 1} is not a test phase" in caplog.text
    assert f"tests.jsonl: record {len(tests) + 2} is not" in caplog.text
    assert f"tests.jsonl: line {len(tests) + 3} is not a JSON object" in caplog.text
    metric_lines = len(metric_lines)
    assert f"metrics.jsonl: line {metric_lines - 2} is not a JSON object" in caplog.text
    assert f"metrics.jsonl: line {metric_lines - 1} is not a JSON object" in caplog.text
    assert "run_info.json cannot be read" in caplog.text
    (run / "DONE").write_text(json.dumps({"time": "soon"}))  # a DONE time that is no number: the metrics' last
    [row] = status_rows(tmp_path)
    assert row["state"] == "done" and row["wall_seconds"] > 0
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="planetrl"):
        export_record(run, tmp_path / "record")
    assert "seed_episodes.json cannot be read" in caplog.text and "2 seed episodes, from the first collection" \
        in caplog.text
    assert len(json.loads((tmp_path / "record" / "random.json").read_text())["returns"]) == 2
    # The run goes on past them and ends as an undisturbed one does; the count is written back.
    (run / "DONE").unlink()
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["train"]["total_updates"] = 16
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    assert main(argv) == 0
    assert json.loads((run / "seed_episodes.json").read_text()) == {"train": 2}
    assert [t["updates"] for t in read_tests(run)] == [8, 12]
    assert len(list((run / "train_episodes").glob("*.npz"))) == 6
    assert all(isinstance(r["step"], int) for r in read_metrics(run))  # the resume left the damaged record out


def test_verbose_works_anywhere_on_the_command_line(tmp_path):
    with pytest.raises(FileNotFoundError):
        main(["eval", "--run", str(tmp_path / "nope"), "-v"])


def test_one_bad_config_does_not_break_status_or_report_for_the_others(runs, tmp_path, capsys, caplog):
    logdir = tmp_path / "sweep"
    (logdir / "good").mkdir(parents=True)
    os.symlink(runs / "planet" / "run-00", logdir / "good" / "run-00")
    for name, text in (("list", yaml.safe_dump(["not", "a", "mapping"])), ("torn", '{"env": {"task'), ("empty", "")):
        (logdir / name / "run-00").mkdir(parents=True)
        (logdir / name / "run-00" / "config.yaml").write_text(text)
    with caplog.at_level(logging.WARNING, logger="planetrl"):
        assert main(["status", "--logdir", str(logdir)]) == 0
    assert "mock" in capsys.readouterr().out
    for name in ("list", "torn", "empty"):  # each one warning line that names the file
        assert f"{logdir / name / 'run-00' / 'config.yaml'} is not a run's config" in caplog.text
    assert main(["report", "--logdir", str(logdir), "--out", str(tmp_path / "report")]) == 0
    # Loading it for a resume or an eval names the file, where an empty one used to pass as the default config.
    assert main(["eval", "--run", str(logdir / "empty" / "run-00")]) == 2
    assert "config.yaml is not a planetrl config: the file is empty" in capsys.readouterr().err
    # With only unreadable runs left, the error says they are there, not that there are none.
    (logdir / "good" / "run-00").unlink()
    for command in (["status", "--logdir", str(logdir)],
                    ["report", "--logdir", str(logdir), "--out", str(tmp_path / "report2")]):
        assert main(command) == 1
        assert f"no readable runs under {logdir}: 3 run directories could not be read" in capsys.readouterr().err


def test_test_episodes_are_those_of_recorded_phases_and_leftovers_of_a_killed_phase_go(tmp_path, caplog):
    from planetrl.data.episodes import list_episodes

    cfg = C.build("debug")
    argv = ["train", "--logdir", str(tmp_path), *DEBUG, "--set", "train.total_updates=12"]
    with caplog.at_level(logging.INFO, logger="planetrl"):
        assert main(argv) == 0
    run = tmp_path / "run-00"
    # The staging folder stays between phases; an empty one is no interrupted phase and says nothing.
    assert len(read_tests(run)) >= 2 and "interrupted test phase" not in caplog.text
    recorded = len(read_tests(run)) * cfg.train.test_episodes
    assert len(list_episodes(run / "test_episodes")) == cfg.train.seed_episodes + recorded
    # A phase killed before it was recorded left an episode in the staging folder; it is removed, never counted.
    leftover = run / "test_episodes" / ".phase" / "20260101T000000-0123456789abcdef0123456789abcdef-12.npz"
    leftover.write_bytes(b"half a phase")
    (run / "DONE").unlink()
    lines = (run / "tests.jsonl").read_text().splitlines()
    (run / "tests.jsonl").write_text("\n".join(lines[:-1]) + ("\n" if len(lines) > 1 else ""))
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="planetrl"):
        assert main(argv) == 0
    assert "removed 1 episodes of an interrupted test phase" in caplog.text
    assert not leftover.exists()
    assert len(list_episodes(run / "test_episodes")) == cfg.train.seed_episodes + recorded + cfg.train.test_episodes


def test_a_checkpoint_object_saves_and_restores_its_parts_and_reads_the_older_rng_form(tmp_path):
    from planetrl.training.rundir import Checkpoint, TorchRNG, save_checkpoint

    model = torch.nn.Linear(2, 2)
    path = tmp_path / "latest.pt"
    Checkpoint(path, torch.device("cpu"), {"updater": model, "torch_rng": TorchRNG()}, needs="updater").save(updates=7)
    expected = torch.rand(3)
    fresh = torch.nn.Linear(2, 2)
    parts = {"updater": fresh, "torch_rng": TorchRNG()}
    values = Checkpoint(path, torch.device("cpu"), parts, needs="updater").restore()
    assert values["updates"] == 7 and torch.equal(fresh.weight, model.weight)
    assert torch.equal(torch.rand(3), expected)  # the generator continues where the saved state was
    # Checkpoints written before the Checkpoint object held the generator state as a bare tensor.
    save_checkpoint(path, {"updater": model.state_dict(), "torch_rng": torch.get_rng_state(), "updates": 3})
    assert Checkpoint(path, torch.device("cpu"), {"updater": fresh, "torch_rng": TorchRNG()},
                      needs="updater").restore()["updates"] == 3
