"""A whole run priced from the rates a run logged: how long the full preset takes where a run measured them.

For a run stopped early (a timing on a lent machine, say): the median updates per second of its training
phases (the first left out as warm-up), the mean seconds per collected decision, and, where it reached one,
the mean seconds per test decision (the test episodes step together, one planning call for all). Without a
test phase the phase is priced as its episodes one after another, an upper bound, and the line says so.
Seeding is left out (random episodes). Prints one JSON line per metrics file.

    python benchmarks/run_price.py METRICS.jsonl [METRICS.jsonl ...] --task T [--task T ...] [--preset cpu]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from hour_budget import run_seconds
from planetrl import config as C
from planetrl.envs.make import decisions_per_episode
from planetrl.metrics import read_json_lines


def price(metrics: list[dict], cfg: C.Config) -> dict[str, object]:
    """The rates in `metrics` and the minutes of a whole run of `cfg` at them."""
    rates = [m["train/updates_per_s"] for m in metrics if "train/updates_per_s" in m][1:]
    collect = [m["train/seconds_per_action"] for m in metrics if "train/seconds_per_action" in m]
    tested = [m["test/seconds_per_action"] for m in metrics if "test/seconds_per_action" in m]
    if not rates or not collect:
        raise SystemExit("the metrics hold no training phase after the first, or no collected episode")
    update_s, decision_s = 1 / float(np.median(rates)), float(np.mean(collect))
    per_episode = decisions_per_episode(cfg.env)
    test_phase_s = (float(np.mean(tested)) if tested else decision_s * cfg.train.test_episodes) * per_episode
    parts = run_seconds(cfg, update_s, decision_s, test_phase_s, seed_s=0.0)
    return {"update_s": round(update_s, 4), "decision_s": round(decision_s, 4),
            "updates_per_s": [round(min(rates), 1), round(max(rates), 1)],
            "decision_s_range": [round(min(collect), 3), round(max(collect), 3)],
            "test_phase_s": round(test_phase_s, 1),
            "test_phase_priced_as": "measured" if tested else "episodes one after another (an upper bound)",
            "minutes": {k: round(parts[k] / 60, 1) for k in ("training", "collect", "testing", "total")}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("metrics", nargs="+", type=Path)
    parser.add_argument("--task", action="append", required=True, help="each file's task, in order")
    parser.add_argument("--preset", default="cpu")
    args = parser.parse_args()
    if len(args.task) != len(args.metrics):
        parser.error(f"one --task per metrics file: {len(args.metrics)} files, {len(args.task)} tasks")
    for path, task in zip(args.metrics, args.task, strict=True):
        cfg = C.build(args.preset, [f"env.task={task}"])
        print(json.dumps({"metrics": str(path), "task": task, "preset": args.preset,
                          **price(read_json_lines(path), cfg)}), flush=True)


if __name__ == "__main__":
    main()
