"""The uniform random policy's return per task over many episodes: the yardstick of a "2x random" goal.

A run's own 5 random seed episodes are a small sample; on reacher-easy one seed's scored 33 and another's
144. This measures the policy itself. Prints one JSON line per task.

    python benchmarks/random_policy.py --tasks reacher-easy,cup-catch [--episodes 60] [--seed 100]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from planetrl import config as C
from planetrl.agents.random import RandomAgent
from planetrl.cli.common import at_least
from planetrl.envs.make import make_batch_env
from planetrl.training.driver import Driver


def measure(task: str, episodes: int, seed: int, preset: str = "cpu", processes: int = 2) -> dict:
    """Returns of `episodes` random-policy episodes of `task` as the preset builds it (its action repeat)."""
    cfg = C.build(preset, [f"env.task={task}"])
    env = make_batch_env(cfg.env, processes, seed=seed)
    try:
        results = Driver(env, RandomAgent(env.action_space, processes, seed=seed), seed=seed).run(episodes)
    finally:
        env.close()
    returns = np.array([r.score for r in results], dtype=float)  # Driver.run returns exactly `episodes`
    return {"task": task, "preset": preset, "seed": seed, "episodes": len(returns),
            "mean": float(returns.mean()), "sem": float(returns.std(ddof=1) / np.sqrt(len(returns))),
            "sd": float(returns.std(ddof=1)), "min": float(returns.min()), "max": float(returns.max()),
            "returns": returns.round(3).tolist()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", required=True, help="comma-separated task names")
    parser.add_argument("--episodes", type=at_least(2), default=60, help="at least 2: a spread needs two")
    parser.add_argument("--seed", type=int, default=100)
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--processes", type=at_least(1), default=2)
    args = parser.parse_args()
    for task in args.tasks.split(","):
        try:
            line = measure(task, args.episodes, args.seed, args.preset, args.processes)
        except ValueError as error:  # an unknown task or preset: say which, not a traceback
            parser.error(str(error))
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
