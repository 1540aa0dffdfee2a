"""What a trained world model predicts about the episodes it was trained on: rewards, and (with a
continuation head) the end of an episode, seen from the posterior and from k steps of open loop.

    python benchmarks/world_model_check.py RUN_DIR [--episodes 20] [--which train_episodes] [--open-loop 1,3,6]
        [--checkpoint U] [--first N] [--ending collision|offroad]

Prints one JSON line: reward error and correlation along the posterior; p(continue) at terminal
steps, at the steps just before them and elsewhere; and, from the posterior k steps before each
terminal step, the predicted probability that the episode still runs after the imagined crash, with
the actions the agent really took. Where that stays near 1, the planner cannot see a crash coming.

On highway runs `--ending` keeps only the episodes that ended one way, read from the last step's
kinematics (the env's 5 x 5 `state`, ego row first; its lateral position is 0, 0.25, 0.5 and 0.75 at
the centres of the 4 lanes): a terminal step with the ego car beyond the outer lanes' edges (lateral
position below -0.125 or above 0.875) left the road, any other terminal step is a collision (those
measured had another car 0.01-0.03 ahead or behind and a reward above 0, which leaving the road never
has). Without it every episode counts.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from planetrl.cli.common import at_least
from planetrl.data.episodes import list_episodes, try_read_episode
from planetrl.data.loader import preprocess_image
from planetrl.models.world_model import WorldModel
from planetrl.training.planet import load_trained

ENDINGS = ("any", "collision", "offroad", "limit")


def ego_kinematics(episode: dict[str, np.ndarray]) -> np.ndarray:
    """The ego car's row of each step's 5 x 5 highway kinematics: (T, 5) of presence, x, y, vx, vy."""
    return episode["state"].reshape(len(episode["state"]), 5, 5)[:, 0]


def highway_ending(episode: dict[str, np.ndarray]) -> str:
    """How a highway episode ended: `limit` (no terminal step), `collision` or `offroad`."""
    if not episode["is_terminal"][-1]:
        return "limit"
    lateral = float(ego_kinematics(episode)[-1, 2])
    return "offroad" if lateral < -0.125 or lateral > 0.875 else "collision"


def episode_tensors(episode: dict[str, np.ndarray], bits: int) -> dict[str, torch.Tensor]:
    return {"image": preprocess_image(torch.as_tensor(episode["image"])[None], bits, noise=False),
            "action": torch.as_tensor(episode["action"], dtype=torch.float32)[None],
            "is_first": torch.as_tensor(episode["is_first"])[None],
            "reward": torch.as_tensor(episode["reward"], dtype=torch.float32),
            "is_terminal": torch.as_tensor(episode["is_terminal"]).bool()}


@torch.no_grad()
def observed(model: WorldModel,
             data: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    """The posterior along an episode, its features, and the reward the model predicts at each step."""
    posterior, _ = model.observe(data["image"], data["action"], data["is_first"])
    features = model.features(posterior)
    return posterior, features, model.reward(features)[0].float()


@torch.no_grad()
def check_episode(model: WorldModel, data: dict[str, torch.Tensor], open_loop: list[int]) -> dict[str, list]:
    posterior, features, predicted = observed(model, data)
    out: dict[str, list] = {"reward_true": data["reward"][1:].tolist(), "reward_pred": predicted[1:].tolist()}
    if model.continue_head is None:
        return out
    terminal = data["is_terminal"]
    p_continue = torch.sigmoid(model.continue_logits(features)[0].float())
    steps = np.arange(len(terminal))
    ends = steps[terminal.numpy()]
    out["p_terminal"] = p_continue[terminal].tolist()
    near = np.zeros(len(terminal), bool)
    for end in ends:
        near[max(end - 3, 1):end] = True
    out["p_before"] = p_continue[torch.as_tensor(near)].tolist()
    rest = ~near & ~terminal.numpy() & (steps > 0)
    out["p_elsewhere"] = p_continue[torch.as_tensor(rest)].tolist()
    for k in open_loop:
        for end in ends:
            if end - k < 1:
                continue
            start = {key: value[:, end - k] for key, value in posterior.items()}
            imagined = model.dynamics.imagine_features(start, data["action"][:, end - k + 1:end + 1], sample=False)
            out.setdefault(f"p_open_loop_{k}", []).append(float(torch.sigmoid(model.continue_logits(imagined))[0, -1]))
    return out


def summary(values: list[float]) -> float | None:
    return round(float(np.mean(values)), 4) if values else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--episodes", type=at_least(1), default=20, help="the latest this many episodes")
    parser.add_argument("--which", default="train_episodes", choices=("train_episodes", "test_episodes"))
    parser.add_argument("--open-loop", default="1,3,6")
    parser.add_argument("--checkpoint", type=at_least(0), help="the model kept at this update (train.keep_models)")
    parser.add_argument("--first", type=at_least(1), help="of the first N episodes (in time order), not the latest")
    parser.add_argument("--ending", default="any", choices=ENDINGS,
                        help="highway only: keep the episodes that ended this way")
    args = parser.parse_args()
    torch.manual_seed(0)  # the posterior samples: the same command gives the same figures
    cfg, model, updates = load_trained(args.run_dir, "cpu", args.checkpoint)
    open_loop = [int(k) for k in args.open_loop.split(",") if k]
    merged: dict[str, list] = {}
    paths = list_episodes(args.run_dir / args.which)
    paths = paths[:args.first][-args.episodes:] if args.first else paths[-args.episodes:]
    used = 0
    for path in paths:
        episode = try_read_episode(path)
        if episode is None or (args.ending != "any" and highway_ending(episode) != args.ending):
            continue
        used += 1
        for key, values in check_episode(model, episode_tensors(episode, cfg.data.image_bits), open_loop).items():
            merged.setdefault(key, []).extend(values)
    if not used:
        raise SystemExit(f"no readable {args.which} with ending {args.ending!r} among the {len(paths)} chosen")
    true, pred = np.array(merged["reward_true"]), np.array(merged["reward_pred"])
    result = {"run": str(args.run_dir), "updates": updates, "ending": args.ending, "episodes": used,
              "steps": len(true),
              "reward_mae": round(float(np.abs(true - pred).mean()), 4),
              "reward_corr": round(float(np.corrcoef(true, pred)[0, 1]), 3) if len(true) > 2 else None}
    result.update({key: summary(values) for key, values in merged.items() if key.startswith("p_")})
    result.update({f"n_{key}": len(values) for key, values in merged.items() if key.startswith("p_")})
    print(json.dumps(result))


if __name__ == "__main__":
    main()
