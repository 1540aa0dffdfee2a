"""A PPO run's learning curve: evaluation return against environment steps and wall-clock, and the
environment steps per second of the whole run (acting, updates and evaluations included).

    python benchmarks/ppo_curve.py RUN_DIR [RUN_DIR ...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from planetrl.metrics import read_metrics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("runs", type=Path, nargs="+")
    args = parser.parse_args()
    for run in args.runs:
        records = read_metrics(run)
        points = [{"run": str(run), "env_steps": r["step"], "minutes": round(r["eval/wall_seconds"] / 60, 2),
                   "eval_return": round(r["eval/return"], 1), "eval_std": round(r["eval/return_std"], 1)}
                  for r in records if "eval/return" in r]
        for point in points:
            print(json.dumps(point))
        if points:
            last = points[-1]
            print(json.dumps({"run": str(run), "env_steps_per_s": round(last["env_steps"] / (last["minutes"] * 60), 1),
                              "first_at_or_above": {str(goal): next((p["env_steps"] for p in points
                                                                    if p["eval_return"] >= goal), None)
                                                    for goal in (-250, 1500)}}))


if __name__ == "__main__":
    main()
