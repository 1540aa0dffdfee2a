"""A run's learning curve: test return against training episodes and wall-clock, next to a random policy.

The random baseline is the mean return of the run's random seed episodes (train and test directories).

    python benchmarks/learning_curve.py RUN_DIR
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from planetrl.cli.common import at_least
from planetrl.data.episodes import list_episodes, read_episode
from planetrl.metrics import read_metrics
from planetrl.training.planet import read_tests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("run", type=Path)
    parser.add_argument("--seed-episodes", type=at_least(1), default=5)
    args = parser.parse_args()
    seeds = [p for d in ("train_episodes", "test_episodes")
             for p in list_episodes(args.run / d)[: args.seed_episodes]]
    random_returns = [float(read_episode(p)["reward"].sum()) for p in seeds]
    claims = [json.loads(line) for line in (args.run / "claims.jsonl").read_text().splitlines()]
    start = claims[0]["time"]
    print(json.dumps({"random_policy_return_mean": round(float(np.mean(random_returns)), 1),
                      "random_policy_return_std": round(float(np.std(random_returns)), 1),
                      "random_episodes": len(random_returns)}))
    for test in read_tests(args.run):
        print(json.dumps({"updates": test["updates"], "train_episodes": test["train_episodes"],
                          "wall_minutes": round((test["time"] - start) / 60, 1),
                          "test_return_mean": round(float(np.mean(test["returns"])), 1),
                          "test_returns": [round(r, 1) for r in test["returns"]]}))
    train = [(r["step"], r["train/return"], r["time"]) for r in read_metrics(args.run) if "train/return" in r]
    if train:
        best = max(train, key=lambda item: item[1])
        print(json.dumps({"exploration_episodes": len(train), "best_exploration_return": round(best[1], 1),
                          "at_wall_minutes": round((best[2] - start) / 60, 1),
                          "last_5_exploration_mean": round(float(np.mean([t[1] for t in train[-5:]])), 1)}))


if __name__ == "__main__":
    main()
