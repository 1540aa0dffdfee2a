"""Every named preset trains, collects and tests: its own model, optimizer and planner, on a shrunk schedule."""

import pytest
import torch

from planetrl import config as C
from planetrl.cli import main
from planetrl.training.planet import kept_models, read_tests
from planetrl.training.rundir import CHECKPOINT, MODEL_SNAPSHOT, load_checkpoint

SHRUNK = {  # the schedule and the data sizes only; what a preset says about the model, optim and planner stays
    "env.task": "mock", "env.processes": 0, "env.episode_steps": 12,
    "data.batch_size": 2, "data.chunk_length": 6, "data.prefetch": 0,
    "planner.candidates": 8, "planner.elites": 2, "planner.iterations": 1,
    "train.seed_episodes": 1, "train.total_updates": 4, "train.collect_every": 2, "train.test_every": 4,
    "train.test_episodes": 1, "train.log_every": 2, "train.keep_models": True, "train.openloop_context": 2,
    "train.openloop_length": 6, "run.device": "cpu",
}


@pytest.mark.parametrize("preset", sorted(C.PRESETS))
def test_every_preset_trains_collects_and_tests(preset, tmp_path):
    overrides = [f"{key}={value}" for key, value in SHRUNK.items()]
    assert main(["train", "--preset", preset, "--logdir", str(tmp_path), "--no-progress",
                 *[arg for override in overrides for arg in ("--set", override)]]) == 0
    run = tmp_path / "run-00"
    expected = C.build(preset, overrides)
    saved = C.load(run / "config.yaml")
    assert saved == expected
    for key in ("model", "optim", "loss"):  # nothing of the preset's own was shrunk away
        assert getattr(saved, key) == getattr(C.build(preset), key)
    assert (run / "DONE").exists()
    assert [t["updates"] for t in read_tests(run)] == [4]
    assert kept_models(run) == [4]
    latest = load_checkpoint(run / "checkpoints" / CHECKPOINT, torch.device("cpu"))["updater"]
    kept = load_checkpoint(run / "checkpoints" / MODEL_SNAPSHOT.format(updates=4), torch.device("cpu"))
    planned_with = latest["average"] if saved.optim.average else latest["model"]  # the cpu preset averages
    assert ("average" in latest) == bool(saved.optim.average)
    for name, value in kept["updater"]["model"].items():
        assert torch.equal(value, planned_with[name]), name
