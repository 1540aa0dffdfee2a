"""How much of a cartpole-swingup run's episodes the cart spent out of the camera's view, pinned at the rail's end.

A swing-up agent uses the rail: it drives the cart to one end to pump the pole. PlaNet's camera (the fixed
one, id 0) shows the whole cart up to |x| = 1.4 m, half of it at 1.6 m and none at 1.8 m, where the cart stops
at the rail's end (tests/test_benchmark_readers.py renders it). An agent that stays there, pushing against the
end, swings the pole like a pendulum for a fraction of the upright reward. Each stored episode keeps
dm_control's observation, flattened in its order (cart position, pole cos, pole sin, cart velocity, pole
angular velocity). Prints one JSON line per group: the test phases (the seed episodes, then `--per-phase` per
phase, in time order) or the training episodes in groups of `--group`, each with, per episode, the share of
decisions out of view, whether the episode ended pinned (its last `--tail` decisions all out of view on one
side) and the return.

    python benchmarks/cart_at_rail.py RUN_DIR [--which test_episodes] [--per-phase 5] [--group 10] [--tail 40]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from _run_episodes import add_group_options, read_groups
from planetrl.cli.common import at_least

OUT_OF_VIEW = 1.6  # metres from the centre: past it, less than half of the cart is in view


def cart_column() -> int:
    """The cart position's index in cartpole-swingup's flattened state."""
    from dm_control import suite

    spec = suite.load("cartpole", "swingup").observation_spec()
    if list(spec) != ["position", "velocity"] or spec["position"].shape != (3,):
        raise RuntimeError(f"cartpole-swingup's observation is not (position[3], velocity): {dict(spec)}")
    return 0


def episode_line(episode: dict[str, np.ndarray], column: int, tail: int) -> dict[str, float | bool]:
    x = np.asarray(episode["state"])[1:, column]
    out = np.abs(x) > OUT_OF_VIEW
    end = x[-tail:]
    pinned = bool(np.all(end > OUT_OF_VIEW) or np.all(end < -OUT_OF_VIEW))
    return {"out_of_view": round(float(out.mean()), 2), "pinned": pinned,
            "return": round(float(np.sum(episode["reward"])), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_group_options(parser)
    parser.add_argument("--tail", type=at_least(1), default=40, help="decisions at the end that make an episode pinned")
    args = parser.parse_args()
    column = cart_column()
    for name, episodes in read_groups(args):
        lines = [episode_line(e, column, args.tail) for e in episodes]
        print(json.dumps({"run": str(args.run_dir), "which": args.which,
                          ("phase" if args.which == "test_episodes" else "group"): name,
                          "episodes": len(lines), "pinned": sum(line["pinned"] for line in lines),
                          "mean_return": round(float(np.mean([line["return"] for line in lines])), 1),
                          "per_episode": lines}), flush=True)


if __name__ == "__main__":
    main()
