"""How much of a world-model update at the run's batch size is noise: gradient signal and noise of kept models.

The issue behind it (13) asked whether the gradient noise of the `cpu` preset's batch (8 chunks then, 16 now)
is behind test returns that rise and fall from phase to phase. For each kept model (`--checkpoints`) this draws
`--draws` independent batches from the training episodes that the run held at that update (the seed episodes
plus one per `train.collect_every` updates, oldest first), sampled and dequantized as the run's loader does,
and takes the world-model loss's gradient on each, with the model in training mode and in the run's update
precision (`optim.precision`), as an update does. From
the draws g_1..g_M at batch size B, with mean g and G the expected gradient:

- `noise` = tr(Cov g_i), the expected squared distance of one batch's gradient from G;
- `signal` = |G|^2, estimated without bias as |g|^2 - noise / M;
- `noise_to_signal` = noise / signal: above 1, one batch's gradient is more noise than direction;
- `critical_batch` = B x noise / signal, the "simple noise scale" of McCandlish et al. (2018): the batch
  size at which noise and signal are equal, if a batch's noise falls as 1 / batch size;
- `cosine` = the mean cosine of each g_i with the mean of the other draws (how well one step points where the
  others do on average);
- `coordinate_signal` = the mean over parameters of s_j / (s_j + v_j), with s_j the squared expected gradient
  of parameter j (estimated as above, floored at 0) and v_j its variance across batches: Adam scales each
  parameter's step by its own gradient's root mean square, so this is the share of one batch's Adam step
  (before momentum) that is direction rather than noise, parameter by parameter.

It reports these for all parameters and per part of the model (encoder, decoder, dynamics, reward). A second
`--batch` (for example the paper's 50) shows whether the noise falls as 1 / batch size. Prints one JSON line
per model and batch size.

    python benchmarks/gradient_noise.py RUN_DIR --checkpoints 1000,4000,7000 [--draws 48] [--batch 8,50]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
from pathlib import Path

import numpy as np
import torch

from planetrl.cli.common import at_least
from planetrl.data.episodes import list_episodes
from planetrl.data.loader import Loader
from planetrl.data.replay import Replay
from planetrl.losses import LossWeights, world_model_loss
from planetrl.models.world_model import WorldModel, autocast, resolve_precision
from planetrl.training.planet import load_trained


def held_episodes(run_dir: Path, updates: int, seed_episodes: int, collect_every: int) -> list[Path]:
    """The training episodes the run held at `updates`: the seed episodes and one per `collect_every` updates."""
    paths = list_episodes(run_dir / "train_episodes")
    count = seed_episodes + updates // collect_every
    if len(paths) < count:
        raise SystemExit(f"{run_dir / 'train_episodes'} holds {len(paths)} episodes; update {updates} needs {count}")
    return paths[:count]


def part_of(name: str) -> str:
    """The model part a parameter belongs to: its top-level module."""
    return name.split(".", 1)[0]


def batch_gradients(model: WorldModel, loader: Loader, weights: LossWeights, draws: int, precision: str = "fp32"
                    ) -> tuple[dict[str, np.ndarray], list[float]]:
    """Each part's (draws, parameters) gradients of the loss on `draws` fresh batches, and the losses."""
    model.train()
    names = [name for name, p in model.named_parameters() if p.requires_grad]
    parts = sorted({part_of(name) for name in names})
    grads: dict[str, list[np.ndarray]] = {part: [] for part in parts}
    losses = []
    for batch in loader.take(draws):
        model.zero_grad(set_to_none=True)
        with autocast(torch.device("cpu"), precision):
            loss, _ = world_model_loss(model, batch, weights)
        loss.backward()
        losses.append(float(loss.detach()))
        by_part: dict[str, list[torch.Tensor]] = {part: [] for part in parts}
        for name, p in model.named_parameters():
            if p.grad is not None:
                by_part[part_of(name)].append(p.grad.detach().flatten().double())
        for part in parts:
            grads[part].append(torch.cat(by_part[part]).numpy() if by_part[part] else np.zeros(0))
    return {part: np.stack(rows) for part, rows in grads.items()}, losses


def noise_figures(grads: np.ndarray, batch_size: int) -> dict[str, float | None]:
    """Signal, noise and their ratios from (draws, parameters) gradients at one batch size."""
    draws = len(grads)
    mean = grads.mean(0)
    noise = float(((grads - mean) ** 2).sum(1).mean() * draws / (draws - 1))
    signal = float((mean ** 2).sum() - noise / draws)
    others = (mean * draws - grads) / (draws - 1)
    norms = np.linalg.norm(grads, axis=1) * np.linalg.norm(others, axis=1)
    cosine = float(np.mean((grads * others).sum(1) / np.maximum(norms, 1e-30)))
    ratio = noise / signal if signal > 0 else None
    variance = grads.var(0, ddof=1)
    squared = np.maximum(mean ** 2 - variance / draws, 0.0)
    moving = squared + variance > 0  # parameters the loss does not reach have no step to share
    share = squared[moving] / (squared[moving] + variance[moving])
    return {"signal": signal, "noise": noise,
            "noise_to_signal": round(ratio, 2) if ratio is not None else None,
            "critical_batch": round(batch_size * ratio, 1) if ratio is not None else None,
            "cosine": round(cosine, 3), "coordinate_signal": round(float(share.mean()), 3) if share.size else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--checkpoints", required=True, help="comma-separated updates of kept models")
    parser.add_argument("--draws", type=at_least(3), default=48, help="batches per model and batch size (at least 3)")
    parser.add_argument("--batch", default="", help="comma-separated batch sizes (default: the run's)")
    args = parser.parse_args()
    for checkpoint in (int(c) for c in args.checkpoints.split(",")):
        cfg, model, updates = load_trained(args.run_dir, "cpu", checkpoint)
        weights = LossWeights(**dataclasses.asdict(cfg.loss))
        sizes = [int(b) for b in args.batch.split(",")] if args.batch else [cfg.data.batch_size]
        held = held_episodes(args.run_dir, updates, cfg.train.seed_episodes, cfg.train.collect_every)
        precision = resolve_precision(cfg.optim.precision, torch.device("cpu"))
        with tempfile.TemporaryDirectory() as directory:
            for path in held:
                (Path(directory) / path.name).symlink_to(path.resolve())
            replay = Replay(directory, cfg.data.chunk_length, cross_episodes=cfg.data.cross_episodes)
            replay.refresh()
            for size in sizes:
                torch.manual_seed(0)  # the posterior samples: the same command gives the same figures
                loader = Loader(replay, size, cfg.data.image_bits, "cpu", prefetch=0, seed=1234 + size)
                grads, losses = batch_gradients(model, loader, weights, args.draws, precision)
                line = {"run": str(args.run_dir), "model": updates, "episodes_held": len(held), "batch": size,
                        "chunk": cfg.data.chunk_length, "draws": args.draws, "precision": precision,
                        "loss": round(float(np.mean(losses)), 3),
                        "all": noise_figures(np.concatenate(list(grads.values()), axis=1), size),
                        "parts": {part: noise_figures(g, size) for part, g in grads.items() if g.shape[1]}}
                print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
