"""The CUDA paths: planning, updates and a whole run on a GPU, and a GPU run read back on a CPU.

CI has no GPU, so these skip there; they run wherever torch sees a CUDA device (BENCHMARKS.md says
where and when they last ran).
"""

import os
import signal
import statistics
import subprocess
import sys
import time

import pytest
import torch

from planetrl import config as C
from planetrl.cli import main
from planetrl.data.episodes import list_episodes, read_episode
from planetrl.planning.cem import CEMSettings, plan
from planetrl.training.planet import load_trained, read_tests
from planetrl.training.rundir import CHECKPOINT, load_checkpoint
from planetrl.training.updater import WorldModelUpdater, build_world_model

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

CUDA = torch.device("cuda")
ON_CUDA = ["--preset", "debug", "--no-progress", "--set", "run.device=cuda"]


class PointMass:
    """x' = x + a, a in [-1, 1]; reward -|x' - 3.5|. The best 12-step return is -4.5."""

    def imagine(self, state, actions):
        return -(state[:, :1] + actions[..., 0].cumsum(1) - 3.5).abs()


def _plan_returns(device: torch.device, iterations: int, seeds: int = 30) -> list[float]:
    state = torch.zeros(1, 1, device=device)
    returns = []
    for seed in range(seeds):
        result = plan(PointMass(), state, 1, CEMSettings(iterations=iterations),
                      [torch.Generator(device=device).manual_seed(seed)])
        assert result.mean.device.type == device.type
        returns.append(PointMass().imagine(state, result.mean).sum().item())
    return returns


def test_cem_on_cuda_plans_as_well_as_on_cpu_and_reaches_the_known_optimum():
    """The two devices draw different samples, so one seed's plan differs; over 30 seeds the paper's
    10 iterations end equally close to the optimum (-4.93 on average on a CPU), and 40 reach it
    (-4.56 on average on a CPU)."""
    cpu, cuda = _plan_returns(torch.device("cpu"), 10), _plan_returns(CUDA, 10)
    assert statistics.mean(cuda) == pytest.approx(statistics.mean(cpu), abs=0.1)
    assert statistics.mean(_plan_returns(CUDA, 40)) == pytest.approx(-4.5, abs=0.1)


def _batch(cfg: C.Config, device: torch.device) -> dict[str, torch.Tensor]:
    """Near-constant images and rewards: a batch the model fits visibly within 30 updates."""
    g = torch.Generator().manual_seed(0)
    b, t, size = cfg.data.batch_size, cfg.data.chunk_length, cfg.env.image_size
    is_first = torch.zeros(b, t, dtype=torch.bool)
    is_first[:, 0] = True
    data = {"image": 0.25 + 0.05 * torch.rand(b, t, size, size, 3, generator=g),
            "action": torch.rand(b, t, 2, generator=g) * 2 - 1,
            "reward": torch.full((b, t), 0.5), "is_first": is_first}
    return {k: v.to(device) for k, v in data.items()}


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_updates_on_cuda_fit_a_batch_as_far_as_on_cpu(precision):
    """Same weights, same batch, 30 updates: the loss falls about 370 on a CPU (within 6 over sampling
    seeds); on CUDA it must end within a tenth of that fall of the CPU's end."""
    cfg = C.build("debug", [f"optim.precision={precision}"])
    first, last = {}, {}
    for name, device in (("cpu", torch.device("cpu")), ("cuda", CUDA)):
        torch.manual_seed(0)
        updater = WorldModelUpdater(build_world_model(cfg, 2), cfg, device)
        assert updater.precision == precision
        batch = _batch(cfg, device)
        losses = [updater.update(batch)["loss"] for _ in range(30)]
        first[name], last[name] = losses[0], min(losses[-5:])
    fall = first["cpu"] - last["cpu"]
    assert fall > 100
    assert last["cuda"] == pytest.approx(last["cpu"], abs=0.1 * fall)


@pytest.mark.parametrize("average", [0.0, 0.9])
def test_a_cuda_run_killed_mid_way_resumes_and_its_models_evaluate_on_cpu_and_cuda(tmp_path, average):
    """With `optim.average` on, the checkpoint carries the averaged weights across the kill, and eval on
    either device plans with them."""
    extra = ["--set", "train.total_updates=48", "--set", "train.test_every=16", "--set", f"optim.average={average}"]
    command = [sys.executable, "-m", "planetrl.cli", "train", "--logdir", str(tmp_path), *ON_CUDA, *extra]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run = tmp_path / "run-00"
    while not ((run / "checkpoints" / "latest.pt").exists() and len(list_episodes(run / "train_episodes")) >= 5):
        assert process.poll() is None, "the run ended before it could be killed"
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    before = {p.name for p in list_episodes(run / "train_episodes")}

    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    after = list_episodes(run / "train_episodes")
    assert before <= {p.name for p in after} and len(after) == 2 + 48 // 4
    for path in after:
        read_episode(path)
    assert [t["updates"] for t in read_tests(run)] == [16, 32, 48]
    latest = load_checkpoint(run / "checkpoints" / CHECKPOINT, torch.device("cpu"))["updater"]
    assert ("average" in latest) == (average > 0)
    _, model, _ = load_trained(run, "cuda")
    for name, value in model.state_dict().items():
        assert torch.equal(value.cpu(), latest["average" if average else "model"][name]), name
    for device in ("cpu", "cuda"):  # a GPU's checkpoint read back on either device
        assert main(["eval", "--run", str(run), "--episodes", "1", "--device", device]) == 0
