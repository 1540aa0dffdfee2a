"""How a walker-walk run's walker moved in its stored episodes: standing, crouched, sitting or lying.

walker-walk pays for a torso near standing height (1.2 m, with a soft margin of 0.6 m below it) and
upright, times forward speed; standing still pays about a third of a decision's best (0.33 of 2 at action
repeat 2). A return therefore does not say whether the agent walked tall, scooted along crouched or sat
still. Each stored episode keeps dm_control's observation, flattened in its order (orientations, height,
velocity); this reads the torso's height, its uprightness (the cosine of its tilt) and the root's forward
speed from it. Prints one JSON line per group: the test phases (the seed episodes, then `--per-phase` per
phase, in time order) or the training episodes in groups of `--group`, each with, per episode, the median
torso height (m), the mean uprightness, the mean forward speed (m/s), the share of decisions that pay at
least standing still's 0.3 (`paying_share`, what tells an episode in which the walker got going from one
in which it did not) and the return, and how many episodes got going (at least a fifth of their decisions
paying).

    python benchmarks/walker_gaits.py RUN_DIR [--which train_episodes] [--per-phase 5] [--group 10]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from _run_episodes import add_group_options, read_groups

STANDING_PAY = 0.3  # a decision's reward for standing still upright is 2 x 1/6 (walk speed unmet)
GOING_SHARE = 0.2  # an episode "got going" when at least this share of its decisions pays STANDING_PAY


def state_columns() -> dict[str, int]:
    """Indices in walker-walk's flattened state: the torso's tilt cosine, its height, the root's forward speed."""
    from dm_control import suite

    spec = suite.load("walker", "walk").observation_spec()
    if list(spec) != ["orientations", "height", "velocity"]:
        raise RuntimeError(f"walker-walk's observation is not (orientations, height, velocity): {list(spec)}")
    height = int(spec["orientations"].shape[0])
    # orientations: (xx, xz) of each body's rotation after the world, the torso first; velocity: qvel, whose
    # joints are rootz, rootx, rooty, ...
    return {"upright": 0, "height": height, "speed": height + 1 + 1}


def gait(episode: dict[str, np.ndarray], columns: dict[str, int]) -> dict[str, float]:
    """One episode's median torso height, mean uprightness and forward speed, paying share and return."""
    state = np.asarray(episode["state"])
    reward = np.asarray(episode["reward"])[1:]  # the first step's reward is the reset's placeholder
    return {"height": round(float(np.median(state[:, columns["height"]])), 2),
            "upright": round(float(np.mean(state[:, columns["upright"]])), 2),
            "speed": round(float(np.mean(state[:, columns["speed"]])), 2),
            "paying_share": round(float(np.mean(reward >= STANDING_PAY)), 2),
            "return": round(float(np.sum(reward)), 1)}


def got_going(gaits: list[dict[str, float]]) -> int:
    """How many of the episodes got going: at least GOING_SHARE of their decisions paid STANDING_PAY."""
    return sum(g["paying_share"] >= GOING_SHARE for g in gaits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_group_options(parser)
    args = parser.parse_args()
    columns = state_columns()
    for name, group in read_groups(args):
        gaits = [gait(e, columns) for e in group]
        line = {"run": str(args.run_dir), "which": args.which,
                ("phase" if args.which == "test_episodes" else "group"): name}
        line.update({key: [g[key] for g in gaits] for key in ("height", "upright", "speed", "paying_share",
                                                               "return")})
        line["got_going"] = got_going(gaits)
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
