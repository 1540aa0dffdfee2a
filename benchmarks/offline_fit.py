"""Fit a fresh world model to a run's stored episodes and follow whether it learns to see the traffic.

The driving runs collect and train at once, so a model that does not represent the other cars could be
short of updates, of data or of capacity. This takes one run's `train_episodes` as a fixed replay, trains
a new model on it with the run's config plus `--set` overrides (a bigger `model.depth`, another
`loss.reward_scale`, ...), and every `--every` updates prints one JSON line: the loss terms, and how much
of the ego car, the other cars and the crashed cars its reconstructions keep on held-out episodes (the
run's `test_episodes`; see traffic_recall.py).

    python benchmarks/offline_fit.py RUN_DIR [--updates 2000] [--every 250] [--set model.depth=32]
        [--held-out 10] [--device cuda]

On a GPU (`--device cuda`) the updates run there and the recall checks on a CPU copy of the model.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from pathlib import Path

import torch

from planetrl import config as C
from planetrl.cli.common import at_least
from planetrl.data.episodes import list_episodes, try_read_episode
from planetrl.data.loader import Loader
from planetrl.data.replay import Replay
from planetrl.training.updater import WorldModelUpdater, build_world_model
from traffic_recall import recall_summary


def recall(model, episodes: list[dict], bits: int) -> dict[str, float | None]:
    """Shares of each car kind's pixels kept on `episodes`, from the posterior and 6 imagined steps."""
    model.eval()
    return {key: value for key, value in recall_summary(model, episodes, bits, open_loop=6).items()
            if key.endswith("_recall")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--updates", type=at_least(1), default=2000)
    parser.add_argument("--every", type=at_least(1), default=250)
    parser.add_argument("--held-out", type=at_least(1), default=10, help="the latest this many test episodes")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    args = parser.parse_args()
    cfg = C.load(args.run_dir / "config.yaml")
    cfg = C.build(None, args.overrides, base=cfg)
    held_out = [e for e in map(try_read_episode, list_episodes(args.run_dir / "test_episodes")[-args.held_out:])
                if e is not None]
    if not held_out:
        raise SystemExit(f"no readable test episodes in {args.run_dir / 'test_episodes'}")
    d = cfg.data
    replay = Replay(args.run_dir / "train_episodes", d.chunk_length, d.max_episodes, d.max_steps,
                    d.recent_fraction, d.recent_episodes, cross_episodes=d.cross_episodes)
    replay.refresh()
    device = torch.device(args.device)
    loader = Loader(replay, d.batch_size, d.image_bits, device, prefetch=0, seed=args.seed)
    torch.manual_seed(args.seed)
    updater = WorldModelUpdater(build_world_model(cfg, held_out[0]["action"].shape[-1]), cfg, device)
    sums: dict[str, float] = {}
    start = time.perf_counter()
    for update, batch in enumerate(loader.take(args.updates), 1):
        for key, value in updater.update(batch).items():
            sums[key] = sums.get(key, 0.0) + value
        if update % args.every == 0 or update == args.updates:
            line = {"run": str(args.run_dir), "overrides": args.overrides, "updates": update,
                    "train_episodes": len(replay), "seconds": round(time.perf_counter() - start, 1),
                    "device": str(device)}
            line.update({key: round(value / args.every, 3) for key, value in sums.items()})
            with torch.no_grad():
                model = updater.model if device.type == "cpu" else copy.deepcopy(updater.model).cpu()
                line.update(recall(model, held_out, d.image_bits))
                updater.model.train()
            print(json.dumps(line), flush=True)
            sums = {}


if __name__ == "__main__":
    main()
