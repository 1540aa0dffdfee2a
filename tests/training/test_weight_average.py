"""optim.average: the agent plans with a running average of the world model's weights, kept across a resume."""

import copy
from pathlib import Path

import pytest
import torch

from planetrl import config as C
from planetrl.cli import main
from planetrl.training.planet import load_trained
from planetrl.training.rundir import CHECKPOINT, MODEL_SNAPSHOT, load_checkpoint
from planetrl.training.updater import WorldModelUpdater, build_world_model, warmed_decay

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SMALL = ["model.belief_size=16", "model.state_size=4", "model.hidden_size=16", "model.depth=4", "optim.lr=1e-2"]


def _batch(seed: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return {"image": torch.rand(2, 5, 64, 64, 3, generator=generator) - 0.5,
            "action": torch.rand(2, 5, 2, generator=generator) * 2 - 1,
            "reward": torch.rand(2, 5, generator=generator),
            "is_first": torch.zeros(2, 5, dtype=torch.bool)}


def _updater(average: float) -> WorldModelUpdater:
    torch.manual_seed(0)
    cfg = C.build(None, [*SMALL, f"optim.average={average}"])
    return WorldModelUpdater(build_world_model(cfg, 2), cfg, torch.device("cpu"))


def _flat(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def test_the_decay_warms_up_to_the_configured_one():
    assert [round(warmed_decay(0.99, n), 4) for n in (0, 1, 10, 100)] == [0.1, 0.1818, 0.55, 0.9182]
    assert warmed_decay(0.99, 889) < 0.99
    assert warmed_decay(0.99, 890) == pytest.approx(0.99) and warmed_decay(0.99, 5000) == 0.99
    assert warmed_decay(0.3, 0) == 0.1 and warmed_decay(0.3, 2) == 0.25 and warmed_decay(0.3, 3) == 0.3


def test_the_acting_weights_are_the_exponential_average_of_the_trained_ones_after_each_update():
    updater = _updater(0.3)
    expected = _flat(updater.model).clone()
    for step, decay in enumerate([0.1, 2 / 11, 0.25, 0.3, 0.3]):
        updater.update(_batch(step))
        expected = decay * expected + (1 - decay) * _flat(updater.model)
    assert updater.acting is updater.average and updater.acting is not updater.model
    assert torch.allclose(_flat(updater.acting), expected, atol=1e-6)
    assert not torch.allclose(_flat(updater.acting), _flat(updater.model), atol=1e-4)
    assert not any(p.requires_grad for p in updater.acting.parameters())


def test_without_averaging_the_agent_plans_with_the_trained_weights():
    updater = _updater(0.0)
    updater.update(_batch(0))
    assert updater.average is None and updater.acting is updater.model
    assert "average" not in updater.state_dict()


def test_the_average_survives_a_checkpoint_and_one_without_it_is_refused():
    updater = _updater(0.9)
    for step in range(3):
        updater.update(_batch(step))
    resumed = _updater(0.9)
    resumed.load_state_dict(copy.deepcopy(updater.state_dict()))  # as from disk: no shared Adam moments
    assert resumed.updates == updater.updates == 3  # the warm-up goes on where it was
    assert torch.equal(_flat(resumed.acting), _flat(updater.acting))
    for each in (updater, resumed):  # the loss samples latent states: the same draws for both
        torch.manual_seed(7)
        each.update(_batch(7))
    assert torch.allclose(_flat(resumed.acting), _flat(updater.acting), atol=1e-6)
    with pytest.raises(ValueError, match=r"optim\.average is 0\.9"):
        _updater(0.9).load_state_dict(_updater(0.0).state_dict())


@pytest.fixture(scope="module")
def averaged_run(tmp_path_factory):
    """A debug run with `optim.average` on that keeps its models."""
    logdir = tmp_path_factory.mktemp("averaged")
    assert main(["train", "--logdir", str(logdir), "--preset", "debug", "--no-progress",
                 "--set", "optim.average=0.5", "--set", "train.keep_models=true"]) == 0
    return logdir / "run-00"


def test_a_run_with_averaging_tests_keeps_and_evaluates_the_averaged_weights(averaged_run, tmp_path):
    run = averaged_run
    latest = load_checkpoint(run / "checkpoints" / CHECKPOINT, torch.device("cpu"))["updater"]
    kept = load_checkpoint(run / "checkpoints" / MODEL_SNAPSHOT.format(updates=12),
                           torch.device("cpu"))["updater"]["model"]
    for name, value in kept.items():
        assert torch.equal(value, latest["average"][name]), name
    assert any(not torch.equal(value, latest["model"][name]) for name, value in kept.items())
    _, model, updates = load_trained(run, "cpu")
    assert updates == 12
    for name, value in model.state_dict().items():
        assert torch.equal(value, latest["average"][name]), name
    assert main(["train", "--logdir", str(tmp_path / "bad"), "--preset", "debug", "--no-progress",
                 "--set", "optim.average=1.0"]) != 0


def test_the_trained_weights_of_an_averaged_run_become_models_that_eval_plans_with(averaged_run, tmp_path,
                                                                                   monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    from trained_weights import write_trained_weights

    out = tmp_path / "trained" / "run-00"
    latest = load_checkpoint(averaged_run / "checkpoints" / CHECKPOINT, torch.device("cpu"))["updater"]
    assert write_trained_weights(averaged_run, out)[-1] == 12
    run_episodes = sorted(p.name for p in (averaged_run / "test_episodes").iterdir())
    assert run_episodes and sorted(p.name for p in (out / "test_episodes").iterdir()) == run_episodes
    _, model, updates = load_trained(out, "cpu", 12)
    assert updates == 12
    for name, value in model.state_dict().items():
        assert torch.equal(value, latest["model"][name]), name
    assert any(not torch.equal(value, latest["average"][name]) for name, value in model.state_dict().items())
    assert main(["eval", "--run", str(out), "--checkpoint", "12", "--episodes", "1", "--device", "cpu"]) == 0

    plain = tmp_path / "plain"
    assert main(["train", "--logdir", str(plain), "--preset", "debug", "--no-progress",
                 "--set", "train.total_updates=4", "--set", "train.test_every=4"]) == 0
    with pytest.raises(ValueError, match="holds no average"):
        write_trained_weights(plain / "run-00", tmp_path / "nothing")
