"""The world-model update as the training loop feeds it: loader-fed with and without the prefetch thread.

Each mode runs `--updates` updates in turn, `--rounds` times, so all see the same machine:
`fixed` reuses one batch (the isolated update), `prefetch0` makes each batch inline, `prefetchN`
prepares N ahead in the loader's background thread.

    python benchmarks/loop_update.py [--run RUN_DIR] [--preset cpu] [--updates 60] [--rounds 2]
        [--modes fixed,prefetch0,prefetch2] [--set data.batch_size=16 ...]

Without `--run` the replay holds synthetic 64x64 episodes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import torch

from _synthetic import fill
from planetrl import config as C
from planetrl.cli.common import at_least
from planetrl.data.loader import Batch, Loader
from planetrl.data.replay import Replay
from planetrl.training.updater import WorldModelUpdater, build_world_model


def measure(episodes_dir: Path, cfg: C.Config, modes: list[str], updates: int, rounds: int) -> dict:
    """Median and mean seconds per update for each mode, over `rounds` interleaved rounds of `updates`."""
    replay = Replay(episodes_dir, cfg.data.chunk_length, cfg.data.max_episodes, cfg.data.max_steps,
                    cfg.data.recent_fraction, cfg.data.recent_episodes, cross_episodes=cfg.data.cross_episodes)
    replay.refresh()
    inline = Loader(replay, cfg.data.batch_size, cfg.data.image_bits, "cpu", prefetch=0, seed=1)
    fixed = inline.make_batch()
    torch.manual_seed(0)
    updater = WorldModelUpdater(build_world_model(cfg, fixed["action"].shape[-1]), cfg, torch.device("cpu"))
    for _ in range(5):
        updater.update(fixed)
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    for _ in range(rounds):
        for mode in modes:
            batches: Iterator[Batch]
            if mode == "fixed":
                batches = (fixed for _ in range(updates))
            else:
                ahead = int(mode.removeprefix("prefetch"))
                batches = Loader(replay, cfg.data.batch_size, cfg.data.image_bits, "cpu", ahead, seed=1).take(updates)
            start = time.perf_counter()
            for batch in batches:
                updater.update(batch)
                now = time.perf_counter()
                times[mode].append(now - start)
                start = now
    return {mode: {"update_s_median": round(statistics.median(t), 4), "update_s_mean": round(statistics.fmean(t), 4)}
            for mode, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, help="a run directory: its config.yaml and train_episodes")
    parser.add_argument("--preset", default="cpu", help="the preset without --run")
    parser.add_argument("--updates", type=at_least(1), default=60)
    parser.add_argument("--rounds", type=at_least(1), default=2)
    parser.add_argument("--modes", default="fixed,prefetch0,prefetch2")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a config override on top of the run's config or the preset, as `planetrl train --set`")
    args = parser.parse_args()
    modes = args.modes.split(",")
    for mode in modes:
        if mode != "fixed" and not (mode.startswith("prefetch") and mode.removeprefix("prefetch").isdigit()):
            parser.error(f"unknown mode {mode!r}; allowed: fixed, prefetch0, prefetch1, ...")
    if args.run is not None:
        cfg = C.build(None, args.set, base=C.load(args.run / "config.yaml"))
        result = measure(args.run / "train_episodes", cfg, modes, args.updates, args.rounds)
    else:
        cfg = C.build(args.preset, ["env.image_size=64", *args.set])
        with tempfile.TemporaryDirectory() as directory:
            fill(Path(directory), 20, 500, 64)
            result = measure(Path(directory), cfg, modes, args.updates, args.rounds)
    print(json.dumps({"modes": result, "run": str(args.run) if args.run else None, "preset": args.preset,
                      "overrides": args.set,
                      "batch": cfg.data.batch_size, "length": cfg.data.chunk_length,
                      "threads": torch.get_num_threads(), "cpus": os.cpu_count(), "torch": torch.__version__,
                      "machine": platform.machine()}))


if __name__ == "__main__":
    main()
