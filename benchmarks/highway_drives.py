"""How each highway episode of a run went: one JSON line per episode, in time order.

Length and return, the mean throttle and steering the agent chose, the ego car's mean speed and lateral
position (the env's kinematics, normalized), and how the episode ended (`collision`, `offroad` or `limit`,
as world_model_check.py's `--ending` reads it). Shows what a driving agent learned without a video.

    python benchmarks/highway_drives.py RUN_DIR [--which train_episodes|test_episodes|both]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from planetrl.data.episodes import list_episodes, try_read_episode
from world_model_check import ego_kinematics, highway_ending


def describe(episode: dict) -> dict:
    ego = ego_kinematics(episode)
    action = episode["action"][1:]
    return {"length": len(action), "return": round(float(episode["reward"][1:].sum()), 1),
            "throttle": round(float(action[:, 0].mean()), 2), "steering": round(float(action[:, 1].mean()), 2),
            "speed": round(float(ego[:, 3].mean()), 2), "lateral": round(float(ego[:, 2].mean()), 2),
            "ending": highway_ending(episode)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--which", default="both", choices=("train_episodes", "test_episodes", "both"))
    args = parser.parse_args()
    kinds = ("train_episodes", "test_episodes") if args.which == "both" else (args.which,)
    for kind in kinds:
        for index, path in enumerate(list_episodes(args.run_dir / kind), 1):
            episode = try_read_episode(path)
            if episode is not None:
                print(json.dumps({"run": str(args.run_dir), "which": kind, "index": index, **describe(episode)}))


if __name__ == "__main__":
    main()
