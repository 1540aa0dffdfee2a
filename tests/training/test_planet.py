"""End to end through the CLI on the debug preset (MockEnv): the run, resume, workers, NaN, eval, visualize."""

import collections
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from planetrl import config as C
from planetrl.cli import main
from planetrl.data.episodes import list_episodes, read_episode
from planetrl.metrics import read_metrics
from planetrl.training.planet import exploration_of, kept_models, read_tests
from planetrl.training.sweep import describe_run

DEBUG = ["--preset", "debug", "--no-progress"]


def _train(logdir, *extra):
    return [sys.executable, "-m", "planetrl.cli", "train", "--logdir", str(logdir), *DEBUG, *extra]


def _gif_frames(path: Path) -> int:
    """Frames shown, counting identical consecutive frames that Pillow merges into one longer frame."""
    with Image.open(path) as image:
        durations = []
        for index in range(image.n_frames):
            image.seek(index)
            durations.append(image.info["duration"])
    return round(sum(durations) / min(durations))


def test_debug_preset_end_to_end(tmp_path, capsys):
    assert main(["train", "--logdir", str(tmp_path), *DEBUG]) == 0
    run = tmp_path / "run-00"
    cfg = C.build("debug")
    assert (run / "DONE").exists() and not (run / "PING").exists()
    collected = cfg.train.total_updates // cfg.train.collect_every
    assert len(list_episodes(run / "train_episodes")) == cfg.train.seed_episodes + collected
    tests = read_tests(run)
    assert [t["updates"] for t in tests] == [8, 12]
    assert all(len(t["returns"]) == len(t["lengths"]) == cfg.train.test_episodes for t in tests)
    on_disk = collections.Counter(int(p.stem.rsplit("-", 1)[1]) for p in list_episodes(run / "test_episodes"))
    assert not collections.Counter(n for t in tests for n in t["lengths"]) - on_disk  # each is a stored episode's
    keys = set().union(*read_metrics(run))
    for key in ("train/loss", "train/kl", "train/grad_norm", "train/return", "test/return", "train/updates_per_s",
                "test/seconds_per_action", "replay/episodes", "train/length"):
        assert key in keys, key
    assert list((run / "events").iterdir())
    assert _gif_frames(run / "videos" / "openloop-0000012.gif") == cfg.train.openloop_length
    assert _gif_frames(run / "videos" / "policy-0000012.gif") == 13  # 12 decisions + the reset frame
    assert C.load(run / "config.yaml") == cfg
    info = json.loads((run / "run_info.json").read_text())
    assert info["torch"] == torch.__version__ and "planetrl" in info
    assert info["cpu_bf16_native"] == torch.ops.mkldnn._is_mkldnn_bf16_supported()  # what `auto` precision reads
    # Running the finished experiment again does nothing and says so.
    assert main(["train", "--logdir", str(tmp_path), *DEBUG]) == 0
    assert "1 done" in capsys.readouterr().out


def test_tensorboard_plays_the_clips_and_shows_the_config(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    assert main(["train", "--logdir", str(tmp_path), *DEBUG]) == 0
    events = EventAccumulator(str(tmp_path / "run-00" / "events"), size_guidance={"images": 0, "tensors": 0})
    events.Reload()
    assert {"openloop", "policy"} <= set(events.Tags()["images"])
    clip = events.Images("openloop")[-1]
    assert clip.encoded_image_string[:6] == b"GIF89a" and clip.step == 12
    with Image.open(__import__("io").BytesIO(clip.encoded_image_string)) as image:
        assert image.n_frames > 1  # a clip, not a still strip
    assert any("config" in tag for tag in events.Tags()["tensors"])


def test_openloop_frames_are_labeled(tmp_path):
    from planetrl.viz import label_openloop, openloop_frames

    truth = np.zeros((4, 8, 8, 3), np.uint8)
    labeled = label_openloop(openloop_frames(truth, truth, context=2), context=2, scale=2)
    assert labeled.shape == (4, 12 + 48, 40 + 16, 3)
    assert labeled[:, :, :40].max() > 0  # the row names are drawn in the margin
    assert not np.array_equal(labeled[1, :12], labeled[2, :12])  # "observed 2/2" and "open loop +1" differ


def test_env_steps_count_decisions_times_the_action_repeat(tmp_path):
    assert main(["train", "--logdir", str(tmp_path), *DEBUG, "--set", "env.action_repeat=2"]) == 0
    run = tmp_path / "run-00"
    decisions = sum(len(read_episode(p)["reward"]) - 1 for p in list_episodes(run / "train_episodes"))
    assert read_tests(run)[-1]["env_steps"] == 2 * decisions
    steps = [m["train/env_steps"] for m in read_metrics(run) if "train/env_steps" in m]
    assert steps[-1] == 2 * decisions


def test_same_seed_gives_identical_metrics(tmp_path):
    for name in ("a", "b"):
        assert main(["train", "--logdir", str(tmp_path / name), *DEBUG]) == 0
    strip = lambda records: [{k: v for k, v in r.items() if k not in ("time",) and "per_s" not in k  # noqa: E731
                              and "seconds" not in k} for r in records]
    assert strip(read_metrics(tmp_path / "a" / "run-00")) == strip(read_metrics(tmp_path / "b" / "run-00"))


def test_conflicting_flag_on_resume_is_an_error(tmp_path, capsys):
    assert main(["train", "--logdir", str(tmp_path), *DEBUG, "--set", "train.total_updates=4"]) == 0
    (tmp_path / "run-00" / "DONE").unlink()  # pretend it was interrupted
    code = main(["train", "--logdir", str(tmp_path), *DEBUG, "--set", "model.depth=8"])
    assert code == 2
    err = capsys.readouterr().err
    assert "model.depth: saved 4, requested 8" in err and "saved config wins" in err


def test_a_flag_that_would_change_a_finished_run_is_an_error_not_ignored(tmp_path, capsys):
    """A finished run is skipped; `--set train.total_updates=8` to extend it printed "1 done" and did nothing."""
    assert main(["train", "--logdir", str(tmp_path), *DEBUG, "--set", "train.total_updates=4"]) == 0
    metrics = (tmp_path / "run-00" / "metrics.jsonl").read_text()
    assert main(["train", "--logdir", str(tmp_path), *DEBUG, "--set", "train.total_updates=8"]) == 2
    err = capsys.readouterr().err
    assert "is finished" in err and "train.total_updates: saved 4, requested 8" in err and "new --logdir" in err
    assert (tmp_path / "run-00" / "metrics.jsonl").read_text() == metrics
    assert main(["train", "--logdir", str(tmp_path), *DEBUG, "--set", "train.total_updates=4"]) == 0  # same: done
    assert "1 done" in capsys.readouterr().out


def test_kill_9_mid_run_resumes_without_losing_episodes(tmp_path):
    extra = ["--set", "train.total_updates=48", "--set", "train.test_every=16"]
    process = subprocess.Popen(_train(tmp_path, *extra), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run = tmp_path / "run-00"
    checkpoint = run / "checkpoints" / "latest.pt"
    while not (checkpoint.exists() and len(list_episodes(run / "train_episodes")) >= 5):
        assert process.poll() is None, "the run ended before it could be killed"
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    killed_at = torch.load(checkpoint, weights_only=True)["updates"]
    before = {p.name for p in list_episodes(run / "train_episodes")}
    config_before = (run / "config.yaml").read_text()
    assert not (run / "DONE").exists()

    result = subprocess.run(_train(tmp_path, *extra), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert (run / "DONE").exists()
    after = list_episodes(run / "train_episodes")
    assert before <= {p.name for p in after}  # no episode lost
    for path in after:
        read_episode(path)  # none corrupt
    assert len(after) == 2 + 48 // 4  # seed episodes + one per cycle: none missing, none collected twice
    assert (run / "config.yaml").read_text() == config_before
    claims = [json.loads(line) for line in (run / "claims.jsonl").read_text().splitlines()]
    assert [c["took_over"] for c in claims] == [False, True]
    steps = [r["step"] for r in read_metrics(run) if "train/loss" in r]
    resumed = steps[steps.index(max(s for s in steps if s <= killed_at)) + 1:]
    assert resumed and resumed[0] > killed_at  # the step count continues from the checkpoint


def test_two_workers_split_four_runs(tmp_path):
    workers = [subprocess.Popen(_train(tmp_path, "--runs", "4"), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
               for _ in range(2)]
    for worker in workers:
        _, err = worker.communicate()  # wait() with unread pipes can block once a pipe fills
        assert worker.returncode == 0, err.decode(errors="replace")
    for index in range(4):
        run = tmp_path / f"run-{index:02d}"
        assert (run / "DONE").exists()
        assert len((run / "claims.jsonl").read_text().splitlines()) == 1  # done exactly once
        assert C.load(run / "config.yaml").run.seed == index


def test_nan_loss_stops_the_run_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch, capsys):
    from planetrl.training import updater as updater_module

    original = updater_module.WorldModelUpdater.update
    calls = []

    def poisoned(self, batch):
        calls.append(1)
        if len(calls) > 5:  # after the first checkpoint (at update 4)
            batch = {**batch, "reward": batch["reward"] * float("nan")}
        return original(self, batch)

    monkeypatch.setattr(updater_module.WorldModelUpdater, "update", poisoned)
    assert main(["train", "--logdir", str(tmp_path), *DEBUG]) == 1
    run = tmp_path / "run-00"
    assert "FloatingPointError: world-model loss is nan" in (run / "FAIL").read_text()
    assert "FAILED" in capsys.readouterr().err
    checkpoint = torch.load(run / "checkpoints" / "latest.pt", weights_only=True)
    assert checkpoint["updates"] == 4
    assert all(torch.isfinite(v).all() for v in checkpoint["updater"]["model"].values())


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("trained")
    assert main(["train", "--logdir", str(logdir), *DEBUG]) == 0
    return logdir / "run-00"


def test_eval_prints_mean_and_std(trained_run, capsys):
    out_json = trained_run.parent / "evals" / "new" / "eval-copy.json"  # a directory not yet there is made
    assert main(["eval", "--run", str(trained_run), "--episodes", "3", "--device", "cpu", "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "over 3 episodes" in out
    result = json.loads((trained_run / "eval.json").read_text())
    assert len(result["returns"]) == 3 and np.isclose(result["mean"], np.mean(result["returns"]))
    assert len(result["lengths"]) == 3 and all(1 <= n <= 12 for n in result["lengths"])  # debug: 12-step episodes
    assert np.isclose(result["mean_length"], np.mean(result["lengths"]))
    assert "returns: " + ", ".join(f"{r:.1f}" for r in result["returns"]) in out  # each episode's return
    assert json.loads(out_json.read_text()) == result
    assert json.loads(out_json.read_text()) == result and result["planner"] == {}


def test_eval_shows_its_progress_in_decisions_on_stderr(trained_run, capsys):
    assert main(["eval", "--run", str(trained_run), "--episodes", "3", "--device", "cpu", "--no-progress"]) == 0
    captured = capsys.readouterr()
    lengths = json.loads((trained_run / "eval.json").read_text())["lengths"]
    final = [line for line in captured.err.splitlines() if line.startswith("run-00 at update 12 | ")]
    assert len(final) == 1 and f"| {sum(lengths)}/36 decisions, 3/3 episodes |" in final[0]  # 12 decisions each
    assert "episodes |" not in captured.out  # stdout keeps only the results
    assert main(["eval", "--run", str(trained_run), "--episodes", "2", "--device", "cpu"]) == 0
    assert "/24 [" in capsys.readouterr().err  # the bar counts decisions out of 2 x 12


def test_eval_plans_with_the_planner_keys_it_is_given(trained_run):
    assert main(["eval", "--run", str(trained_run), "--episodes", "2", "--device", "cpu",
                 "--set", "planner.candidates=8", "--set", "planner.elites=8"]) == 0
    result = json.loads((trained_run / "eval.json").read_text())
    assert result["planner"] == {"planner.candidates": 8, "planner.elites": 8} and len(result["returns"]) == 2


def test_kept_models_are_the_tested_weights_and_eval_reads_them(tmp_path, capsys):
    assert main(["train", "--logdir", str(tmp_path), *DEBUG, "--set", "train.keep_models=true"]) == 0
    run = tmp_path / "run-00"
    assert kept_models(run) == [t["updates"] for t in read_tests(run)] == [8, 12]
    latest = torch.load(run / "checkpoints" / "latest.pt", weights_only=True)["updater"]["model"]
    at_8, at_12 = (torch.load(run / "checkpoints" / f"model-{n:07d}.pt", weights_only=True)["updater"]["model"]
                   for n in (8, 12))
    assert all(torch.equal(at_12[k], latest[k]) for k in latest)  # the last phase tested the final weights
    assert any(not torch.equal(at_8[k], latest[k]) for k in latest)  # four more updates changed them
    assert main(["eval", "--run", str(run), "--episodes", "2", "--device", "cpu", "--checkpoint", "8"]) == 0
    assert "checkpoint at update 8" in capsys.readouterr().out
    result = json.loads((run / "eval-0000008.json").read_text())
    assert result["updates"] == 8 and len(result["returns"]) == 2
    assert main(["visualize", "--run", str(run), "--out", str(tmp_path / "viz"), "--episodes", "1",
                 "--device", "cpu", "--checkpoint", "8"]) == 0
    assert "checkpoint at update 8" in capsys.readouterr().out and (tmp_path / "viz" / "openloop-00.gif").exists()
    assert main(["eval", "--run", str(run), "--episodes", "2", "--device", "cpu", "--checkpoint", "5"]) == 2
    assert "no model kept at update 5; it kept the models at updates 8, 12" in capsys.readouterr().err


def test_a_run_without_kept_models_says_how_to_keep_them(trained_run, capsys):
    assert main(["eval", "--run", str(trained_run), "--episodes", "1", "--device", "cpu", "--checkpoint", "8"]) == 2
    assert "train.keep_models=true" in capsys.readouterr().err


def test_visualize_writes_videos_with_the_right_frame_count(trained_run, tmp_path):
    out = tmp_path / "viz"
    assert main(["visualize", "--run", str(trained_run), "--out", str(out), "--episodes", "2",
                 "--device", "cpu"]) == 0
    for number in range(2):
        assert _gif_frames(out / f"policy-{number:02d}.gif") == 13
        assert _gif_frames(out / f"openloop-{number:02d}.gif") == 8


def test_without_a_bar_a_run_prints_periodic_lines_with_the_moving_terms(tmp_path, capsys, monkeypatch):
    from planetrl.training import progress

    monkeypatch.setattr(progress.RunProgress, "__init__", _every_zero(progress.RunProgress.__init__))
    assert main(["train", "--logdir", str(tmp_path), *DEBUG]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if " update " in line]
    assert lines and lines[-1].startswith("run-00 update 12/12 | image ")
    assert "reward" in lines[-1] and "kl" in lines[-1] and "| test " in lines[-1] and "ETA" in lines[-1]
    image = float(lines[-1].split("image ")[1].split()[0])
    assert image < 1000  # nats above the Gaussian constant, not the ~12,000 of the whole loss


def test_a_resumed_run_shows_its_last_recorded_test_return_until_the_next_phase(tmp_path):
    """A resumed run's lines said `test -` (and `no update yet` while updating) until its next test phase."""
    from planetrl.training.planet import PlanetRun

    assert main(["train", "--logdir", str(tmp_path), *DEBUG]) == 0
    run_dir = tmp_path / "run-00"
    run = PlanetRun(run_dir, C.load(run_dir / "config.yaml"), progress=False)
    run._setup()
    try:
        assert run.progress_view.test_return == pytest.approx(np.mean(read_tests(run_dir)[-1]["returns"]))
    finally:
        run._teardown()


def _every_zero(init):
    def patched(self, *args, **kwargs):
        init(self, *args, **{**kwargs, "every_s": 0.0})
    return patched


def test_weights_and_biases_logging_in_offline_mode(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    assert main(["train", "--logdir", str(tmp_path), *DEBUG, "--set", "run.wandb_project=planetrl-test"]) == 0
    runs = list((tmp_path / "run-00" / "wandb").glob("offline-run-*"))
    assert len(runs) == 1 and list(runs[0].glob("*.wandb"))
    assert read_metrics(tmp_path / "run-00")  # metrics.jsonl and TensorBoard stay as they are
    assert list((tmp_path / "run-00" / "events").iterdir())


def test_visualize_plans_with_the_planner_keys_it_is_given_and_refuses_others(trained_run, tmp_path, capsys,
                                                                               monkeypatch):
    import planetrl.training.planet as planet_module

    seen = []
    original = planet_module.build_mpc_agent

    def recording(cfg, *args, **kwargs):
        seen.append(cfg.planner.horizon)
        return original(cfg, *args, **kwargs)

    monkeypatch.setattr(planet_module, "build_mpc_agent", recording)
    assert main(["visualize", "--run", str(trained_run), "--out", str(tmp_path / "viz"), "--episodes", "1",
                 "--device", "cpu", "--set", "planner.horizon=5"]) == 0
    assert seen == [5] and _gif_frames(tmp_path / "viz" / "policy-00.gif") == 13
    assert main(["visualize", "--run", str(trained_run), "--out", str(tmp_path / "viz2"), "--episodes", "1",
                 "--device", "cpu", "--set", "model.depth=8"]) == 2
    assert "only planner.* keys" in capsys.readouterr().err


def test_eval_is_reproducible_with_the_same_seeds(trained_run):
    """The agent draws every sample from generators seeded by the run, never from torch's global RNG."""
    outcomes = []
    for _ in range(2):
        torch.manual_seed(len(outcomes))  # whatever the caller's RNG state was
        assert main(["eval", "--run", str(trained_run), "--episodes", "3", "--device", "cpu"]) == 0
        outcomes.append(json.loads((trained_run / "eval.json").read_text())["returns"])
    assert outcomes[0] == outcomes[1]


def test_without_a_bar_long_collect_and_test_phases_print_their_progress(tmp_path, capsys, monkeypatch):
    from planetrl.training import progress

    monkeypatch.setattr(progress.RunProgress, "__init__", _every_zero(progress.RunProgress.__init__))
    assert main(["train", "--logdir", str(tmp_path), *DEBUG]) == 0
    out = capsys.readouterr().out.splitlines()
    tests = [line for line in out if line.startswith("run-00 test at update 12 | ")]
    collects = [line for line in out if line.startswith("run-00 collecting at update 8 | ")]
    # two test envs of 12 decisions each, stepped together; one collected episode of 12
    assert tests[-1].split(" | ")[1] == "24/24 decisions, 2/2 episodes", tests
    assert [line.split(" | ")[1] for line in collects] == [f"{n}/12 decisions, {n // 12}/1 episodes"
                                                           for n in range(1, 13)], collects
    assert "decisions/s" in tests[-1] and "ETA at most" in tests[0]


@pytest.mark.parametrize("key", ["exploration_correlation=0.5", "mixed_noise=0.5"])
def test_correlated_exploration_on_a_discrete_task_stops_before_any_episode(tmp_path, capsys, key):
    argv = ["train", "--logdir", str(tmp_path), *DEBUG, "--task", "gym:CartPole-v1", "--set", f"planner.{key}"]
    assert main(argv) != 0
    out = capsys.readouterr()
    assert f"planner.{key} needs continuous actions" in out.out + out.err
    assert not list_episodes(tmp_path / "run-00" / "train_episodes")


def test_mixed_noise_explores_every_kth_collection_episode_with_the_correlated_noise(tmp_path):
    argv = ["train", "--logdir", str(tmp_path), *DEBUG, "--set", "train.total_updates=16",
            "--set", "planner.mixed_noise=1.0", "--set", "planner.mixed_every=3"]
    assert main(argv) == 0
    logged = [m["train/exploration_noise"] for m in read_metrics(tmp_path / "run-00") if "train/return" in m]
    assert logged == [1.0, 0.3, 0.3, 1.0]  # collected episodes 0 and 3 of four
    p = C.build(overrides=["planner.mixed_noise=0.8", "planner.mixed_correlation=0.7"]).planner
    assert [exploration_of(p, n) for n in range(3)] == [(0.8, 0.7), (0.3, 0.0), (0.8, 0.7)]
    assert exploration_of(C.build().planner, 0) == (0.3, 0.0)  # off by default, as in PlaNet


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_stop_signal_stops_the_run_cleanly_and_the_same_command_resumes_it(tmp_path, stop):
    """`kill PID` or a closing terminal's hang-up ended the process at once, leaving its PING for status to
    call stale; now it lets go."""
    extra = ["--set", "train.total_updates=48", "--set", "train.test_every=16"]
    process = subprocess.Popen(_train(tmp_path, *extra), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               # under a harness run with nohup the child would inherit an ignored SIGHUP
                               preexec_fn=lambda: signal.signal(stop, signal.SIG_DFL))
    run = tmp_path / "run-00"
    while not (run / "checkpoints" / "latest.pt").exists():
        assert process.poll() is None, "the run ended before it could be stopped"
        time.sleep(0.05)
    process.send_signal(stop)
    _, err = process.communicate()
    assert process.returncode == 128 + stop, err
    assert f"stopped by {stop.name}; the same command resumes" in err and "Traceback" not in err
    assert not (run / "PING").exists() and not (run / "DONE").exists() and not (run / "FAIL").exists()
    assert describe_run(run)["state"] == "stopped"  # it read "new", as if it had never run

    result = subprocess.run(_train(tmp_path, *extra), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    claims = [json.loads(line) for line in (run / "claims.jsonl").read_text().splitlines()]
    assert [c["took_over"] for c in claims] == [False, False]  # let go, so the resume claims a free run
    assert len(list_episodes(run / "train_episodes")) == 2 + 48 // 4


def test_a_run_under_nohup_keeps_going_through_a_hang_up(tmp_path):
    """Taking SIGHUP as a stop must not undo `nohup`, which ignores it."""
    extra = ["--set", "train.total_updates=24"]
    process = subprocess.Popen(_train(tmp_path, *extra), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    run = tmp_path / "run-00"
    while not (run / "checkpoints" / "latest.pt").exists():
        assert process.poll() is None, "the run ended before the hang-up"
        time.sleep(0.05)
    process.send_signal(signal.SIGHUP)
    _, err = process.communicate()
    assert process.returncode == 0, err
    assert (run / "DONE").exists()


def test_each_resume_adds_its_machine_to_run_info_and_a_damaged_run_info_is_left_as_it_is(tmp_path, monkeypatch):
    """run_info.json named only the machine that started a run, so a run resumed on a host without native bf16
    (which trains in fp32) or at another commit looked like one session on the first."""
    from planetrl.training import rundir

    cfg, run, started = C.build("debug"), tmp_path / "run-00", time.time()
    rundir.prepare_run_dir(run, cfg, {})
    first = json.loads((run / "run_info.json").read_text())
    assert "resumes" not in first and first["torch_threads"] == torch.get_num_threads()
    monkeypatch.setattr(rundir, "machine_info", lambda: {"host": "other", "cpu_bf16_native": False})
    for _ in range(2):
        rundir.prepare_run_dir(run, cfg, {})
    info = json.loads((run / "run_info.json").read_text())
    assert {k: v for k, v in info.items() if k != "resumes"} == first
    assert [(r["host"], r["cpu_bf16_native"]) for r in info["resumes"]] == [("other", False)] * 2
    assert all(started - 1 <= r["time"] <= time.time() + 1 for r in info["resumes"])  # rounded to 0.1 s
    (run / "run_info.json").write_text("{torn")
    rundir.prepare_run_dir(run, cfg, {})
    assert (run / "run_info.json").read_text() == "{torn"
