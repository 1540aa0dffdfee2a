"""How often a highway drive ends in a collision per decision, by the ego car's speed: one JSON line per
speed quintile, pooled over the runs given.

A blind agent (one whose model does not draw the other cars) can still learn that driving faster ends
drives sooner. This measures how much sooner on the recorded drives, and what each speed pays a decision:
the two numbers a planner has to trade off. Speed is the env's normalized kinematics (the ego row of the
5 x 5 `state`), read in the state each decision was taken in; a collision is a terminal step that did not
leave the road (world_model_check.py's `highway_ending`).

    python benchmarks/highway_hazard.py RUN_DIR [RUN_DIR ...] [--which train_episodes|test_episodes|both]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from planetrl.cli.common import at_least
from planetrl.data.episodes import list_episodes, try_read_episode
from world_model_check import ego_kinematics, highway_ending


def decisions(episode: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per decision: the speed it was taken at, whether it ended the drive in a collision, its reward."""
    speed = ego_kinematics(episode)[:-1, 3]
    crash = np.zeros(len(speed))
    if highway_ending(episode) == "collision":
        crash[-1] = 1.0
    return speed, crash, episode["reward"][1:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dirs", type=Path, nargs="+")
    parser.add_argument("--which", default="both", choices=("train_episodes", "test_episodes", "both"))
    parser.add_argument("--bins", type=at_least(1), default=5, help="speed bins of equal counts")
    args = parser.parse_args()
    kinds = ("train_episodes", "test_episodes") if args.which == "both" else (args.which,)
    parts = [decisions(episode) for run in args.run_dirs for kind in kinds
             for episode in map(try_read_episode, list_episodes(run / kind)) if episode is not None]
    if not parts:
        raise SystemExit(f"no readable episodes in {', '.join(map(str, args.run_dirs))}")
    speed, crash, reward = (np.concatenate(column) for column in zip(*parts, strict=True))
    edges = np.quantile(speed, np.linspace(0, 1, args.bins + 1))
    bins = np.clip(np.searchsorted(edges, speed, side="right") - 1, 0, args.bins - 1)
    for b in range(args.bins):
        chosen = bins == b
        print(json.dumps({"speed_from": round(float(edges[b]), 3), "speed_to": round(float(edges[b + 1]), 3),
                          "drives": len(parts), "decisions": int(chosen.sum()), "collisions": int(crash[chosen].sum()),
                          "hazard": round(float(crash[chosen].mean()), 4),
                          "reward": round(float(reward[chosen].mean()), 3)}))


if __name__ == "__main__":
    main()
