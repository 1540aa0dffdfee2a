"""How many CEM iterations warm start saves at equal planning return, on the point-mass model.

For each of several start positions: plan cold from the first state, execute the first action,
then plan again from the next state cold and warm (previous plan shifted by one step); count the
iterations each needs until its elite return is within `--tolerance` of the optimum.

    python benchmarks/cem_warm_start.py [--trials 20] [--tolerance 0.3]
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch

from planetrl.cli.common import at_least
from planetrl.planning.cem import CEMSettings, plan, shift_plan


class PointMass:
    """x' = x + a, a in [-1, 1]; reward -|x' - goal|."""

    def __init__(self, goal: float) -> None:
        self.goal = goal

    def imagine(self, state: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return -(state[:, :1] + actions[..., 0].cumsum(1) - self.goal).abs()


def optimum(start: float, goal: float, horizon: int) -> float:
    x, total = start, 0.0
    for _ in range(horizon):
        x += max(-1.0, min(1.0, goal - x))
        total -= abs(x - goal)
    return total


def needed(returns: list[torch.Tensor], target: float) -> int:
    return next((i + 1 for i, r in enumerate(returns) if r.item() >= target), len(returns) + 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=at_least(1), default=20)
    parser.add_argument("--tolerance", type=float, default=0.3)
    parser.add_argument("--iterations", type=at_least(1), default=40)
    args = parser.parse_args()
    settings = CEMSettings(iterations=args.iterations)
    cold_counts, warm_counts = [], []
    for trial in range(args.trials):
        goal = 2.0 + 0.25 * trial
        model = PointMass(goal)
        first = plan(model, torch.zeros(1, 1), 1, settings, [torch.Generator().manual_seed(trial)])
        state = first.first_action()[:, :1].clone()
        target = optimum(state.item(), goal, settings.horizon) - args.tolerance
        seed = 1000 + trial
        cold = plan(model, state, 1, settings, [torch.Generator().manual_seed(seed)])
        warm = plan(model, state, 1, settings, [torch.Generator().manual_seed(seed)], *shift_plan(first))
        cold_counts.append(needed(cold.returns, target))
        warm_counts.append(needed(warm.returns, target))
    print(json.dumps({"trials": args.trials, "tolerance": args.tolerance, "candidates": settings.candidates,
                      "cold_iterations_mean": statistics.fmean(cold_counts),
                      "warm_iterations_mean": statistics.fmean(warm_counts),
                      "iterations_saved_mean": statistics.fmean(c - w for c, w in zip(cold_counts, warm_counts,
                                                                                       strict=True)),
                      "cold": cold_counts, "warm": warm_counts}))


if __name__ == "__main__":
    main()
