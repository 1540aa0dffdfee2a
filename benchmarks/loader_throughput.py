"""Loader throughput at B=50, L=50, 64x64: batches per second without and with the background worker.

The worker's value is overlap: while the trainer computes, the next batch is
prepared. `consumer_wait_s` is how long a trainer that computes for
`--compute` seconds per batch waits for each batch.

    python benchmarks/loader_throughput.py [--episodes 20] [--batches 20] [--compute 1.0]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import torch

from _synthetic import fill
from planetrl.cli.common import at_least
from planetrl.data.loader import Loader
from planetrl.data.replay import Replay


def busy(seconds: float) -> None:
    """Stand-in for a training step: matrix products for about `seconds`."""
    a = torch.randn(512, 512)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        a = torch.tanh(a @ a / 512)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=at_least(1), default=20)
    parser.add_argument("--batches", type=at_least(1), default=20)
    parser.add_argument("--compute", type=at_least(0.0, float), default=1.0,
                        help="seconds the consumer works per batch")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        fill(Path(directory), args.episodes, 1000, 64)
        replay = Replay(directory, chunk_length=50)
        replay.refresh()
        for prefetch in (0, 2):
            loader = Loader(replay, batch_size=50, bits=5, prefetch=prefetch, seed=0)
            start = time.perf_counter()
            for _ in loader.take(args.batches):
                pass
            rate = args.batches / (time.perf_counter() - start)
            waits = []
            batches = loader.take(args.batches)
            for _ in range(args.batches):
                t = time.perf_counter()
                next(batches)
                waits.append(time.perf_counter() - t)
                busy(args.compute)
            print(json.dumps({"prefetch": prefetch, "batches_per_s": round(rate, 2),
                              "consumer_compute_s": args.compute,
                              "consumer_wait_s_median": round(sorted(waits[1:])[len(waits) // 2], 4),
                              "torch_threads": torch.get_num_threads(), "cpus": os.cpu_count()}), flush=True)


if __name__ == "__main__":
    main()
