"""How much of a cheetah-run run's episodes the cheetah spent on its back, or tipped onto its front.

A cheetah that flips over can still move forward on its back, and some runs settle there: a local
optimum that paid about three fifths of running upright in the run measured (results/cpu/NOTES.md).
Another stands tipped forward on its front legs and hardly moves. Each stored episode keeps
dm_control's observation, flattened in its order; the root's pitch (`position[1]`, radians; positive
lowers the front) tells upright (cos > 0) from flipped, and nose-down (45 to 90 degrees) from level.
Prints one JSON line per group: the test phases (the seed episodes, then `--per-phase` per phase, in
time order) or the training episodes in groups of `--group`, each with, per episode, the share of
decisions flipped, the share nose-down, the mean forward speed of the root (m/s) and the return.

    python benchmarks/cheetah_flips.py RUN_DIR [--which test_episodes] [--per-phase 5] [--group 10]
    python benchmarks/cheetah_flips.py VISUALIZE_OUT --which episodes --seed-episodes 0 --group 10
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from _run_episodes import add_group_options, read_groups


def pitch_column() -> int:
    """The root pitch's index in cheetah-run's flattened state (position without rootx: rootz, rooty, ...)."""
    from dm_control import suite

    spec = suite.load("cheetah", "run").observation_spec()
    if next(iter(spec)) != "position":
        raise RuntimeError(f"cheetah-run's observation does not start with 'position': {list(spec)}")
    return 1


def speed_column() -> int:
    """The root's forward velocity's index in the flattened state (after the 8 positions)."""
    from dm_control import suite

    spec = suite.load("cheetah", "run").observation_spec()
    if list(spec) != ["position", "velocity"]:
        raise RuntimeError(f"cheetah-run's observation is not (position, velocity): {list(spec)}")
    return int(spec["position"].shape[0])


POSES = ("level", "nose_down", "flipped")


def poses(pitch: np.ndarray) -> np.ndarray:
    """Each state's index in POSES: level, tipped onto its front past 45 degrees, or on its back."""
    flipped = np.cos(pitch) < 0
    nose_down = ~flipped & (np.sin(pitch) > np.sin(np.pi / 4))
    return np.where(flipped, 2, np.where(nose_down, 1, 0))


def nose_down_share(episode: dict[str, np.ndarray], column: int) -> float:
    """The share of an episode's states in which the cheetah stands tipped onto its front, past 45 degrees."""
    return float(np.mean(poses(np.asarray(episode["state"])[:, column]) == 1))


def flipped_share(episode: dict[str, np.ndarray], column: int) -> float:
    """The share of an episode's states in which the cheetah is on its back."""
    return float(np.mean(poses(np.asarray(episode["state"])[:, column]) == 2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_group_options(parser)
    args = parser.parse_args()
    column, speed = pitch_column(), speed_column()
    for name, group in read_groups(args):
        shares = [round(flipped_share(e, column), 2) for e in group]
        nose_down = [round(nose_down_share(e, column), 2) for e in group]
        print(json.dumps({"run": str(args.run_dir), "which": args.which,
                          ("phase" if args.which == "test_episodes" else "group"): name,
                          "flipped": shares, "mean_flipped": round(float(np.mean(shares)), 2),
                          "nose_down": nose_down, "mean_nose_down": round(float(np.mean(nose_down)), 2),
                          "speed": [round(float(np.mean(np.asarray(e["state"])[:, speed])), 2) for e in group],
                          "returns": [round(float(np.sum(e["reward"])), 1) for e in group]}), flush=True)


if __name__ == "__main__":
    main()
