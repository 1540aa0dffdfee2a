"""Does bf16 hurt learning? The same world model trained on the same fixed batches in fp32 and in bf16.

Uses episodes from a directory (for example the seed episodes of a cartpole run) or, without one,
collects random cartpole-swingup episodes first. Prints the two loss curves (averaged over windows)
and the largest relative gap between them.

    python benchmarks/bf16_learning.py [--episodes DIR] [--updates 200] [--preset cpu]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
import torch

from planetrl import config as C
from planetrl.agents.random import RandomAgent
from planetrl.cli.common import at_least
from planetrl.data.episodes import EpisodeWriter
from planetrl.data.loader import Loader
from planetrl.data.replay import Replay
from planetrl.envs.make import make_batch_env
from planetrl.training.driver import Driver
from planetrl.training.updater import WorldModelUpdater, build_world_model


def collect(directory: Path, cfg: C.Config, episodes: int) -> None:
    env = make_batch_env(cfg.env, 1, seed=0)
    try:
        Driver(env, RandomAgent(env.action_space, 1, seed=0), [EpisodeWriter(directory)], seed=0).run(episodes)
    finally:
        env.close()


def curve(cfg: C.Config, replay: Replay, updates: int, precision: str) -> list[float]:
    cfg = C.set_values(cfg, {"optim.precision": precision})
    torch.manual_seed(0)
    updater = WorldModelUpdater(build_world_model(cfg, 1), cfg, torch.device("cpu"))
    loader = Loader(replay, cfg.data.batch_size, cfg.data.image_bits, "cpu", prefetch=2, seed=0)
    losses = []
    for batch in loader.take(updates):
        torch.manual_seed(len(losses))  # the same posterior samples in both runs, as far as precision allows
        losses.append(updater.update(batch)["loss"])
    return losses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", help="directory of episode files (default: collect 5 random ones)")
    parser.add_argument("--updates", type=at_least(1), default=200)
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--window", type=at_least(1), default=20)
    args = parser.parse_args()
    cfg = C.build(args.preset, ["env.task=cartpole-swingup"])
    with tempfile.TemporaryDirectory() as temporary:
        directory = Path(args.episodes) if args.episodes else Path(temporary)
        if not args.episodes:
            collect(directory, cfg, 5)
        replay = Replay(directory, cfg.data.chunk_length)
        replay.refresh()
        fp32 = np.array(curve(cfg, replay, args.updates, "fp32"))
        bf16 = np.array(curve(cfg, replay, args.updates, "bf16"))
    windows = len(fp32) // args.window
    a = fp32[: windows * args.window].reshape(windows, -1).mean(1)
    b = bf16[: windows * args.window].reshape(windows, -1).mean(1)
    gap = np.abs(a - b) / np.abs(a)
    print(json.dumps({"preset": args.preset, "updates": args.updates, "window": args.window,
                      "fp32_loss": np.round(a, 1).tolist(), "bf16_loss": np.round(b, 1).tolist(),
                      "max_relative_gap": round(float(gap.max()), 5),
                      "fp32_drop": round(float(a[0] - a[-1]), 1), "bf16_drop": round(float(b[0] - b[-1]), 1)}))


if __name__ == "__main__":
    main()
