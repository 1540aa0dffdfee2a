"""How fast a finger-spin run's training episodes turned the spinner: the seed episodes against the planner's.

finger-spin pays only while the spinner's hinge turns at -15 rad/s or faster, so a run whose reward head
stays at zero has to be read from the episodes themselves. Each stored episode keeps the task's state
(dm_control's observation, flattened in its order); this finds the hinge velocity in it, and prints one
JSON line per group of episodes (the first `--seed-episodes` are random, the rest the planner's): the
rewarded decisions, how many episodes never turned the spinner faster than 1 rad/s, and each episode's
fastest turn the way the reward counts (minus the most negative hinge velocity). A run with
`planner.mixed_noise` splits the planner's episodes by the noise each explored with. With `--tests` it reads
the test episodes instead, one line per test phase, to tell a phase whose agent spins less often from one
whose agent spins slower (`share_over_15_rad_s`: each episode's share of steps that pay).

    python benchmarks/spinner_speed.py RUN_DIR [RUN_DIR ...] [--seed-episodes 5] [--episodes N]
        [--tests [--per-phase 5]]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from _run_episodes import add_phase_options, read_groups
from planetrl import config as config_lib
from planetrl.cli.common import at_least
from planetrl.data.episodes import list_episodes, try_read_episode
from planetrl.training.planet import explores_mixed

PAYING_SPEED = 15.0  # rad/s, the hinge speed from which finger-spin rewards


def hinge_column() -> int:
    """The hinge velocity's index in finger-spin's flattened state (position, velocity, touch; hinge last)."""
    from dm_control import suite

    spec = suite.load("finger", "spin").observation_spec()
    offset = 0
    for key, array in spec.items():
        if key == "velocity":
            return offset + int(np.prod(array.shape)) - 1
        offset += int(np.prod(array.shape))
    raise RuntimeError(f"finger-spin has no 'velocity' observation: {list(spec)}")


def summary(episodes: list[dict[str, np.ndarray]], column: int) -> dict[str, object]:
    spins = [-np.asarray(e["state"])[:, column] for e in episodes]
    return {"episodes": len(episodes),
            "rewarded_decisions": int(sum((np.asarray(e["reward"]) > 0).sum() for e in episodes)),
            "episodes_spinner_under_1_rad_s": sum(float(spin.max()) < 1.0 for spin in spins),
            "fastest_spin_rad_s": [round(float(spin.max()), 1) + 0.0 for spin in spins],
            "share_over_15_rad_s": [round(float(np.mean(spin >= PAYING_SPEED)), 3) for spin in spins]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    add_phase_options(parser)
    parser.add_argument("--episodes", type=at_least(1), help="only the first N episodes of each run")
    parser.add_argument("--tests", action="store_true", help="the test episodes, one line per test phase")
    args = parser.parse_args()
    column = hinge_column()
    for run in args.runs:
        if args.tests:
            stored = argparse.Namespace(run_dir=run, which="test_episodes", seed_episodes=args.seed_episodes,
                                        per_phase=args.per_phase)
            for phase, group in read_groups(stored):
                if phase == "seed":
                    continue
                print(json.dumps({**summary(group, column), "run": str(run), "test_phase": int(phase)}), flush=True)
            continue
        paths = list_episodes(run / "train_episodes")[:args.episodes]
        episodes = [e for e in map(try_read_episode, paths) if e is not None]
        if not episodes:
            raise SystemExit(f"no readable episodes in {run / 'train_episodes'}")
        for kind, group in groups(run, episodes, args.seed_episodes):
            print(json.dumps({**summary(group, column), "run": str(run), "episodes_kind": kind}), flush=True)


def groups(run: Path, episodes: list[dict[str, np.ndarray]], seeds: int) -> list[tuple[str, list]]:
    """The seed episodes, then the planner's: split by their noise when the run mixes two."""
    planner = config_lib.load(run / "config.yaml").planner
    collected = episodes[seeds:]
    if not planner.mixed_noise:
        return [("seed", episodes[:seeds]), ("planner", collected)]
    mixed = [e for n, e in enumerate(collected) if explores_mixed(planner, n)]
    plain = [e for n, e in enumerate(collected) if not explores_mixed(planner, n)]
    return [("seed", episodes[:seeds]), (f"planner mixed_noise {planner.mixed_noise}", mixed),
            (f"planner exploration_noise {planner.exploration_noise}", plain)]


if __name__ == "__main__":
    main()
