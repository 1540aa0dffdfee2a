"""How fast does the world model learn, per wall-clock second, under a given config?

Trains on a fixed directory of episodes for a time budget and, every
`--eval-every` seconds of training, scores the model on held-out episodes with
the two quantities planning depends on: the reconstruction error of filtered
frames (image NLL above the Gaussian constant, nats per frame) and the error
of open-loop reward predictions over the planning horizon from 5 context
frames (mean squared error against the true rewards, and the true rewards'
variance for scale). Prints one JSON line per evaluation.

    python benchmarks/model_learning.py --train DIR --test DIR --minutes 6 --preset cpu --set data.batch_size=16
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import torch

from planetrl import config as C
from planetrl.cli.common import at_least
from planetrl.data.loader import Loader, preprocess_image
from planetrl.data.replay import Replay
from planetrl.models.world_model import WorldModel
from planetrl.training.updater import WorldModelUpdater, build_world_model


def held_out(directory: Path, context: int, horizon: int, count: int, bits: int) -> dict[str, torch.Tensor]:
    """`count` fixed (context + horizon)-step chunks of the episodes in `directory`, without noise."""
    replay = Replay(directory, context + horizon)
    replay.refresh()
    arrays = replay.sample(count, np.random.default_rng(123))
    batch = {key: torch.as_tensor(value) for key, value in arrays.items()}
    batch["image"] = preprocess_image(batch["image"], bits, noise=False)
    batch["action"] = batch["action"].float()
    batch["reward"] = batch["reward"].float()
    return batch


@torch.no_grad()
def evaluate(model: WorldModel, batch: dict[str, torch.Tensor], context: int) -> dict[str, float]:
    """Filtered-reconstruction NLL excess per frame and open-loop reward MSE after `context` frames."""
    model.eval()
    images, actions, is_first = batch["image"], batch["action"], batch["is_first"]
    posterior, _ = model.observe(images, actions, is_first)
    recon = model.decode(model.features(posterior))
    image_excess = 0.5 * ((recon - images) ** 2).sum((-3, -2, -1)).mean().item()
    last = {key: value[:, context - 1] for key, value in posterior.items()}
    features = model.dynamics.imagine_features(last, actions[:, context:], sample=False)
    truth = batch["reward"][:, context:]
    predicted = model.reward(features)
    model.train()
    return {"image_excess_nats": round(image_excess, 3),
            "openloop_reward_mse": round(((predicted - truth) ** 2).mean().item(), 4),
            "reward_variance": round(truth.var().item(), 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--train", required=True, help="directory of training episodes")
    parser.add_argument("--test", required=True, help="directory of held-out episodes")
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--set", nargs="*", default=[], help="config overrides key=value")
    parser.add_argument("--minutes", type=float, default=6.0, help="training time budget")
    parser.add_argument("--eval-every", type=float, default=60.0, help="seconds of training between evaluations")
    parser.add_argument("--threads", type=at_least(0), default=0, help="torch threads; 0 = torch's default")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = C.build(args.preset, ["env.task=cartpole-swingup", *args.set])
    torch.manual_seed(cfg.run.seed)
    replay = Replay(Path(args.train), cfg.data.chunk_length)
    replay.refresh()
    action_size = replay.sample(1, np.random.default_rng(0))["action"].shape[-1]
    updater = WorldModelUpdater(build_world_model(cfg, action_size), cfg, torch.device("cpu"))
    loader = Loader(replay, cfg.data.batch_size, cfg.data.image_bits, "cpu", prefetch=2, seed=cfg.run.seed)
    test = held_out(Path(args.test), 5, cfg.planner.horizon, 64, cfg.data.image_bits)
    constant = 0.5 * math.log(2 * math.pi) * cfg.env.image_size**2 * 3
    trained, updates, next_eval, window = 0.0, 0, args.eval_every, []
    while trained < args.minutes * 60:
        start = time.perf_counter()
        for batch in loader.take(10):
            metrics = updater.update(batch)
            window.append((metrics["image_nll"] - constant, metrics["reward_nll"], metrics["kl"]))
        trained += time.perf_counter() - start
        updates += 10
        if trained >= next_eval or trained >= args.minutes * 60:
            next_eval += args.eval_every
            image, reward, kl = np.mean(window, 0)
            window = []
            print(json.dumps({"updates": updates, "train_seconds": round(trained, 1),
                              "seconds_per_update": round(trained / updates, 3),
                              "train_image_excess": round(float(image), 2), "train_reward_nll": round(float(reward), 3),
                              "train_kl": round(float(kl), 2), **evaluate(updater.model, test, 5),
                              "overrides": args.set}), flush=True)


if __name__ == "__main__":
    main()
