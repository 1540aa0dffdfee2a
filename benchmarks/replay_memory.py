"""Resident memory of a replay holding N episodes x 1000 steps, against the raw uint8 bytes,
and its flatness over a long run with eviction.

    python benchmarks/replay_memory.py --size 64 [--episodes 100] [--extra 100]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import tempfile
import time
from pathlib import Path

from _synthetic import fill
from planetrl.cli.common import at_least
from planetrl.data.replay import Replay


def rss_bytes() -> int:
    """Resident set size of this process, from /proc."""
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=at_least(1), default=64)
    parser.add_argument("--episodes", type=at_least(1), default=100)
    parser.add_argument("--extra", type=at_least(0), default=100, help="episodes added one by one afterwards")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as directory:
        fill(Path(directory), args.episodes, 1000, args.size)
        gc.collect()
        before = rss_bytes()
        replay = Replay(directory, chunk_length=50, max_episodes=args.episodes)
        start = time.perf_counter()
        replay.refresh()
        load_s = time.perf_counter() - start
        held = rss_bytes() - before
        raw = replay.stats.bytes
        image_bytes = args.episodes * 1001 * args.size * args.size * 3
        trajectory = []
        for index in range(args.extra):
            fill(Path(directory), 1, 1000, args.size)
            replay.refresh()
            if index % max(args.extra // 5, 1) == 0 or index == args.extra - 1:
                trajectory.append(round((rss_bytes() - before) / 2**30, 3))
        print(json.dumps({
            "image_size": args.size, "episodes": args.episodes, "steps_per_episode": 1000,
            "raw_image_gb": round(image_bytes / 2**30, 3), "raw_all_keys_gb": round(raw / 2**30, 3),
            "rss_growth_gb": round(held / 2**30, 3), "ratio_to_raw": round(held / raw, 3),
            "load_s": round(load_s, 1), "rss_gb_while_evicting": trajectory,
            "evicted": replay.stats.evicted_episodes,
        }), flush=True)


if __name__ == "__main__":
    main()
