"""What a driving model's planner sees for a constant throttle: imagined returns with and without the tail.

From the posterior at every `--every`-th step of a run's latest drives, imagine `--horizon` decisions of
one constant throttle (steering 0) with prior samples, as the planner does, and average over the start
states: the summed predicted rewards, the predicted probability of still driving at the horizon, the
continuation-weighted return the planner ranks plans by (PlaNet's sum times the head), and the same with
`planner.tail`'s value past the horizon at `--discount`. One JSON line per throttle. Where the weighted
return is flat across throttles, the planner cannot tell a slow drive that lasts from a fast one that ends.

    python benchmarks/throttle_probe.py RUN_DIR --checkpoint U [--which test_episodes] [--episodes 10]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from planetrl.cli.common import at_least
from planetrl.data.episodes import list_episodes, try_read_episode
from planetrl.models.world_model import expected_rewards
from planetrl.training.planet import load_trained
from world_model_check import episode_tensors

THROTTLES = (-1.0, -0.5, 0.0, 0.5, 1.0)


@torch.no_grad()
def probe(model, start: dict, throttle: float, horizon: int, discount: float) -> tuple[float, float, float, float]:
    actions = torch.zeros(1, horizon, 2)
    actions[..., 0] = throttle
    features = model.dynamics.imagine_features(start, actions, True)
    rewards = model.reward(features).float()
    continues = torch.sigmoid(model.continue_logits(features).float())
    weighted = expected_rewards(rewards, continues, 1.0).sum().item()
    tailed = expected_rewards(rewards, continues, discount, tail=True).sum().item()
    return rewards.sum().item(), continues.prod().item(), weighted, tailed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--checkpoint", type=at_least(0), help="the model kept at this update (train.keep_models)")
    parser.add_argument("--which", default="test_episodes", choices=("train_episodes", "test_episodes"))
    parser.add_argument("--episodes", type=at_least(1), default=10, help="the latest this many episodes")
    parser.add_argument("--every", type=at_least(1), default=5, help="start states: every this many steps")
    parser.add_argument("--horizon", type=at_least(1), default=24)
    parser.add_argument("--discount", type=float, default=0.99)
    args = parser.parse_args()
    torch.manual_seed(0)
    cfg, model, updates = load_trained(args.run_dir, "cpu", args.checkpoint)
    if model.continue_head is None:
        raise SystemExit(f"{args.run_dir} has no continuation head (model.continuation is off)")
    results: dict[float, list] = {throttle: [] for throttle in THROTTLES}
    for path in list_episodes(args.run_dir / args.which)[-args.episodes:]:
        episode = try_read_episode(path)
        if episode is None:
            continue
        data = episode_tensors(episode, cfg.data.image_bits)
        with torch.no_grad():
            posterior, _ = model.observe(data["image"], data["action"], data["is_first"])
        for t in range(1, data["image"].shape[1], args.every):
            start = {key: value[:, t] for key, value in posterior.items()}
            for throttle in THROTTLES:
                results[throttle].append(probe(model, start, throttle, args.horizon, args.discount))
    for throttle, rows in results.items():
        values = np.array(rows)
        print(json.dumps({"run": str(args.run_dir), "updates": updates, "throttle": throttle, "starts": len(values),
                          "reward_sum": round(float(values[:, 0].mean()), 2),
                          "p_alive_at_horizon": round(float(values[:, 1].mean()), 3),
                          "weighted": round(float(values[:, 2].mean()), 2),
                          "with_tail": round(float(values[:, 3].mean()), 2)}))


if __name__ == "__main__":
    main()
