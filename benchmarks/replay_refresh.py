"""Replay refresh time with many episode files on disk when one new file arrives.

    python benchmarks/replay_refresh.py [--files 10000] [--max-episodes 100]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from _synthetic import fill
from planetrl.cli.common import at_least
from planetrl.data.replay import Replay


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=at_least(1), default=10_000)
    parser.add_argument("--max-episodes", type=at_least(1), default=100)
    parser.add_argument("--repeats", type=at_least(1), default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        fill(Path(directory), args.files, 50, 64)
        replay = Replay(directory, chunk_length=50, max_episodes=args.max_episodes)
        start = time.perf_counter()
        replay.refresh()
        initial = time.perf_counter() - start
        times, empty = [], []
        for _ in range(args.repeats):
            fill(Path(directory), 1, 50, 64)
            start = time.perf_counter()
            assert replay.refresh() == 1
            times.append(time.perf_counter() - start)
            start = time.perf_counter()
            replay.refresh()
            empty.append(time.perf_counter() - start)
        times.sort()
        empty.sort()
        print(json.dumps({"files_on_disk": args.files + args.repeats, "max_episodes": args.max_episodes,
                          "initial_build_s": round(initial, 3),
                          "refresh_one_new_file_ms_median": round(1000 * times[len(times) // 2], 2),
                          "refresh_no_new_file_ms_median": round(1000 * empty[len(empty) // 2], 2)}),
              flush=True)


if __name__ == "__main__":
    main()
