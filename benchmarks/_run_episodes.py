"""A run's stored episodes as the analysis scripts read them: the random seed episodes first, then the test
phases (or groups of training episodes), in time order; and the command-line options that choose them."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from planetrl.cli.common import at_least
from planetrl.data.episodes import list_episodes, try_read_episode


def add_group_options(parser: argparse.ArgumentParser) -> None:
    """RUN_DIR, --which, --seed-episodes, --per-phase and --group, for `read_groups`."""
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--which", default="test_episodes", choices=("train_episodes", "test_episodes", "episodes"),
                        help="a run's folder, or `episodes`, the one `planetrl visualize --out DIR` keeps (with "
                             "--seed-episodes 0 --group N)")
    add_phase_options(parser)
    parser.add_argument("--group", type=at_least(1), default=10, help="training episodes per line")


def add_phase_options(parser: argparse.ArgumentParser) -> None:
    """--seed-episodes and --per-phase, which locate a test phase among the stored episodes."""
    parser.add_argument("--seed-episodes", type=at_least(0), default=5, help="random episodes stored first")
    parser.add_argument("--per-phase", type=at_least(1), default=5, help="test episodes per phase")


def add_checkpoint_options(parser: argparse.ArgumentParser) -> None:
    """RUN_DIR, --checkpoints and --phases (with `add_phase_options`), for the scripts that score kept models."""
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--checkpoints", required=True, help="comma-separated updates of kept models")
    parser.add_argument("--phases", required=True, help="comma-separated test phases, 1 = the first")
    add_phase_options(parser)


def read_groups(args: argparse.Namespace) -> list[tuple[str, list[dict[str, np.ndarray]]]]:
    """("seed", the seed episodes; left out when there are none), then ("1", the first phase or group), ... of
    the readable episodes."""
    paths = list_episodes(args.run_dir / args.which)
    episodes = [e for e in map(try_read_episode, paths) if e is not None]
    if not episodes:
        raise SystemExit(f"no readable episodes in {args.run_dir / args.which}")
    size = args.per_phase if args.which == "test_episodes" else args.group
    rest = episodes[args.seed_episodes:]
    return [("seed", episodes[:args.seed_episodes])] * (args.seed_episodes > 0) + [
        (str(i // size + 1), rest[i:i + size]) for i in range(0, len(rest), size)]


def phase_paths(paths: list[Path], phase: int, args: argparse.Namespace) -> list[Path]:
    """The stored test episodes of one phase (1 = the first after the seed episodes)."""
    start = args.seed_episodes + (phase - 1) * args.per_phase
    return paths[start:start + args.per_phase]
