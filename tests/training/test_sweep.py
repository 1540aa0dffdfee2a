import json
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from planetrl.cli import main
from planetrl.metrics import read_metrics
from planetrl.training.report import final_returns, markdown_table, write_report
from planetrl.training.sweep import Unit, run_local, status_rows, sweep_units

DEBUG = ["--preset=debug"]


def _claims(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "claims.jsonl").read_text().splitlines()]


def test_local_sweep_runs_each_run_exactly_once(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)  # 2 cores, 2 runs at a time
    args = ["sweep", "--tasks", "mock,mock-3d", "--seeds", "2", "--logdir", str(tmp_path), "--parallel", "2",
            "--preset", "debug"]
    assert main(args) == 0
    assert "(local, 2 at a time, 1 torch thread each)" in capsys.readouterr().out
    for task in ("mock", "mock-3d"):
        for index in range(2):
            run = tmp_path / task / f"run-{index:02d}"
            assert (run / "DONE").exists() and len(_claims(run)) == 1
            assert f"run {run} done" in (run / "train.log").read_text()  # each run's output is kept
            assert json.loads((run / "run_info.json").read_text())["torch_threads"] == 1  # its share of the cores
    assert main(args) == 0  # a rerun finds nothing to do, and says so
    out = capsys.readouterr().out
    assert "0 runs to do" in out and "every run is already done" in out and "0 done, 0 failed" not in out
    assert main(["status", "--logdir", str(tmp_path)]) == 0
    table = capsys.readouterr().out
    assert table.count(" done ") == 4 and "mock-3d" in table
    assert str(tmp_path / "mock-3d" / "run-01") in table  # the path column


def test_ray_sweep_on_a_local_instance(tmp_path):
    ray = pytest.importorskip("ray")
    from planetrl.training.sweep import run_ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        results = run_ray(sweep_units(["mock", "mock-3d"], 2), tmp_path, DEBUG, None, 1.0, 0.0, 600.0)
    finally:
        ray.shutdown()
    assert set(results.values()) == {"done"} and len(results) == 4
    for unit in results:
        assert len(_claims(unit.directory(tmp_path))) == 1


def test_killed_run_is_retried_and_resumes(tmp_path):
    unit = Unit("mock", 0, 1)
    run = unit.directory(tmp_path)
    checkpoint = run / "checkpoints" / "latest.pt"
    killed = {}

    def killer():
        while not checkpoint.exists():
            time.sleep(0.05)
        owner = json.loads((run / "PING").read_text())
        killed["updates"] = torch.load(checkpoint, weights_only=True)["updates"]
        os.kill(owner["pid"], signal.SIGKILL)

    thread = threading.Thread(target=killer)
    thread.start()
    results = run_local([unit], tmp_path, [*DEBUG, "--set=train.total_updates=40"], 1, 600.0, retries=2)
    thread.join()
    assert results[unit] == "done"
    assert [c["took_over"] for c in _claims(run)] == [False, True]
    steps = [r["step"] for r in read_metrics(run) if "train/loss" in r]
    # After the kill the run went on from its checkpoint (update 4 or later): a run that started
    # over would have logged update 2 a second time.
    assert killed["updates"] >= 4 and steps.count(2) == 1 and steps[-1] == 40


def _fake_run(root: Path, task: str, seed: int, returns: list[float], episodes: int,
              config: dict | None = None, experiment: str | None = None) -> None:
    run = root / (experiment or task) / f"run-{seed:02d}"
    (run / "train_episodes").mkdir(parents=True)
    sections = {"env": {"task": task}, "run": {"seed": seed}}
    for key, value in (config or {}).items():
        section, name = key.split(".")
        sections.setdefault(section, {})[name] = value
    (run / "config.yaml").write_text(yaml.safe_dump(sections))
    (run / "tests.jsonl").write_text(
        json.dumps({"updates": 100, "returns": [r - 10 for r in returns], "train_episodes": episodes // 2}) + "\n"
        + json.dumps({"updates": 200, "returns": returns, "train_episodes": episodes}) + "\n")
    (run / "claims.jsonl").write_text(json.dumps({"time": 1000.0}) + "\n")
    (run / "DONE").write_text(json.dumps({"time": 1000.0 + 3600}))
    (run / "run_info.json").write_text(json.dumps({"cpus": 2, "processor": "x86_64", "gpu": None}))
    for index in range(episodes):
        (run / "train_episodes" / f"20260101T000000-{index:032x}-10.npz").write_bytes(b"")


def test_report_means_stds_and_plots(tmp_path):
    _fake_run(tmp_path, "cartpole-swingup", 0, [100.0, 200.0], 10)
    _fake_run(tmp_path, "cartpole-swingup", 1, [300.0, 300.0], 10)
    _fake_run(tmp_path, "walker-walk", 0, [50.0], 4)
    rows = status_rows(tmp_path)
    table = markdown_table(rows)
    assert "| | cartpole-swingup | walker-walk |" in table
    # Seed means 150 and 300: mean 225, population std 75.
    assert "| mean final test return | 225.0 | 50.0 |" in table
    assert "| std over seeds | 75.0 | - |" in table
    assert "| wall-clock per run | 1.00 h | 1.00 h |" in table
    written = write_report(rows, tmp_path / "out")
    pngs = [p for p in written if p.suffix == ".png"]
    assert len(pngs) == 2
    for path in pngs:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from PIL import Image

    with Image.open(pngs[0]) as image:
        assert image.size[0] > 100 and np.asarray(image).std() > 0


def test_report_averages_only_seeds_of_one_experiment(tmp_path):
    # cheetah-run: seeds 0 and 1 of one config in two experiment directories (pooled), seed 0 with another
    # learning rate and another bookkeeping key (its own column, named by the lr alone), and a PPO run.
    base = {"optim.lr": 0.001, "env.processes": 1}
    _fake_run(tmp_path, "cheetah-run", 0, [100.0], 4, base, "a")
    _fake_run(tmp_path, "cheetah-run", 1, [200.0], 4, {**base, "env.processes": 4}, "b")
    _fake_run(tmp_path, "cheetah-run", 0, [900.0], 4, {"optim.lr": 0.0005, "env.processes": 2}, "c")
    _fake_run(tmp_path, "cheetah-run", 0, [-50.0], 4, {"ppo.lr": 0.0001}, "d")
    (tmp_path / "d" / "run-00" / "tests.jsonl").unlink()  # PPO: evaluations in metrics, steps as x
    evaluations = ((300, -70.0), (600, -50.0))
    (tmp_path / "d" / "run-00" / "metrics.jsonl").write_text(
        "".join(json.dumps({"step": step, "eval/return": value}) + "\n" for step, value in evaluations))
    (tmp_path / "b" / "run-01" / "DONE").unlink()
    rows = status_rows(tmp_path)
    table = markdown_table(rows)
    assert table.splitlines()[0] == ("| | cheetah-run (PPO) | cheetah-run (PlaNet, optim.lr=0.0005) | "
                                     "cheetah-run (PlaNet, optim.lr=0.001) |")
    assert "| mean final test return | -50.0 | 900.0 | 150.0 |" in table
    assert "| seeds | 1 | 1 | 2 |" in table
    assert "| finished runs | 1 of 1 | 1 of 1 | 1 of 2 |" in table
    written = {p.name for p in write_report(rows, tmp_path / "out")}
    assert {"cheetah-run-PPO.png", "cheetah-run-PlaNet-optim.lr=0.001.png"} < written


def test_experiments_alike_in_the_keys_their_labels_name_still_get_a_column_each():
    def row(**optim: float) -> dict:
        return {"task": "mock", "test_return": 1.0, "config": {"env": {"task": "mock"}, "optim": optim}}

    base = {"a": 1, "b": 1, "c": 1, "d": 1}
    groups = final_returns([row(**base), row(**{**base, "d": 2}), row(a=9, b=9, c=9, d=9)])
    assert len(groups) == 3 and sorted(map(len, groups.values())) == [1, 1, 1]


def test_a_test_record_without_its_episode_count_costs_its_point_on_the_curve_not_the_run(tmp_path):
    _fake_run(tmp_path, "mock", 0, [5.0], 4)
    tests = tmp_path / "mock" / "run-00" / "tests.jsonl"
    tests.write_text(json.dumps({"updates": 50, "returns": [1.0]}) + "\n" + tests.read_text())
    [row] = status_rows(tmp_path)
    assert row["test_return"] == 5.0 and [x for x, _ in row["curve"]] == [2, 4]


def test_an_older_config_lacking_a_key_counts_at_the_value_it_ran_with():
    from planetrl import config as C

    def row(init: str | None, seed: int) -> dict:
        config = C.to_dict(C.set_values(C.build("debug", [f"run.seed={seed}"]), {"model.init": init or "tf"}))
        if init is None:  # saved before model.init existed: those runs used torch's initialization
            del config["model"]["init"]
        return {"task": "mock", "test_return": float(seed), "config": config}

    groups = final_returns([row("torch", 0), row(None, 1), row("tf", 2)])
    assert {label: len(runs) for label, runs in groups.items()} == {"mock (model.init=torch)": 2,
                                                                     "mock (model.init=tf)": 1}


def test_a_local_sweep_shows_a_live_table_while_it_runs(tmp_path, capsys):
    units = sweep_units(["mock"], 2)
    results = run_local(units, tmp_path, ["--preset=debug"], 2, 600.0, table_every=0.2)
    assert set(results.values()) == {"done"}
    out = capsys.readouterr().out
    assert "task" in out and "path" in out and "running" in out  # printed while the runs were going


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["kill", "ctrl-c-to-the-sweep-alone"])
def test_stopping_a_local_sweep_stops_its_runs_and_the_same_command_finishes_them(tmp_path, stop):
    """`kill` of the sweep left it waiting for its runs to end (hours on a CPU), and the runs went on."""
    import subprocess
    import sys

    argv = [sys.executable, "-m", "planetrl.cli", "sweep", "--tasks", "mock", "--seeds", "2", "--parallel", "2",
            "--logdir", str(tmp_path), *DEBUG]
    sweep = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "OMP_NUM_THREADS": "1"},
                             # a background job's SIGINT is ignored, and Python then never takes it
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    runs = [tmp_path / "mock" / f"run-{index:02d}" for index in range(2)]
    while not all((run / "PING").exists() for run in runs):
        assert sweep.poll() is None, sweep.stderr.read()
        time.sleep(0.05)
    owners = [json.loads((run / "PING").read_text())["pid"] for run in runs]
    sweep.send_signal(stop)
    _, err = sweep.communicate()
    assert sweep.returncode == (143 if stop == signal.SIGTERM else 130), err
    assert not any(_pid_alive(pid) for pid in owners)  # each run stopped before the sweep returned
    for run in runs:
        assert not (run / "PING").exists() and not (run / "DONE").exists()
        assert "stopped by SIGTERM; the same command resumes" in (run / "train.log").read_text()
    if stop != signal.SIGTERM:
        return  # the resume is the same after either
    again = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert again.returncode == 0, again.stderr
    for run in runs:
        assert (run / "DONE").exists()
        assert [claim["took_over"] for claim in _claims(run)] == [False, False]  # let go, then resumed
