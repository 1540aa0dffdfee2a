"""Whether a later kept model predicts worse than an earlier one, on episodes neither trained on.

A test return that falls from one phase to the next (results/cpu/NOTES.md: cartpole-swingup seed 0, 333
at 6000 updates, 243 at 7000) is either a worse world model or a planner that lands elsewhere with a model
as good. For each kept model (`--checkpoints`) this scores the same held-out test episodes (`--phases`,
1 = the first phase after the seed episodes; test episodes are never trained on):

- `image_mse`: the posterior's reconstruction error per pixel value, in the preprocessed [-0.5, 0.5] units;
- `reward_mae`: the posterior's reward error per decision;
- `open_loop`: from the posterior at every decision, the planner's view: `--horizon` decisions imagined with
  the actions really taken, prior states sampled as the planner samples them (`--samples` draws each).
  It reports the mean absolute error of the predicted horizon return (`return_mae`), its mean bias
  (`return_bias`, predicted minus true), and the correlation of predicted and true horizon returns across
  start decisions (`return_corr`), which is what ranking plans needs. `--split D` reports the first D
  decisions of each episode (for cartpole-swingup the swing-up) apart from the rest;
- `by_step`: the same imagination's reward error and correlation at each step 1..H of the horizon, which
  tells how much a planner can trust the far end of its plans (`planner.tail` weighs step H most);
- with `--first-reward`, `first_reward`: whether the model foresees a sparse reward before it comes (the
  first catch of a cup-catch episode): the reward of each episode's first rewarded decision as imagined
  from k = 1..H decisions before it with the actions taken (`predicted`, mean over episodes), beside its
  true reward (`true`) and how many episodes have a start k decisions before it (`episodes`). A model that
  imagines it only one decision ahead leaves a planner nothing to steer towards.

Prints one JSON line per model.

    python benchmarks/model_drift.py RUN_DIR --checkpoints 5000,6000,7000 --phases 6,7 [--horizon 12]
        [--samples 4] [--split 30] [--first-reward]
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from _run_episodes import add_checkpoint_options, phase_paths
from planetrl.cli.common import at_least
from planetrl.data.episodes import list_episodes, try_read_episode
from planetrl.models.world_model import WorldModel
from planetrl.training.planet import load_trained
from world_model_check import episode_tensors


@torch.no_grad()
def imagined_rewards(model: WorldModel, states: dict[str, torch.Tensor], plans: torch.Tensor, samples: int
                     ) -> np.ndarray:
    """The predicted (N, H) rewards of each (N, H, A) plan from its (N, ...) state: the mean over `samples` prior
    draws, sampled as the planner samples them."""
    repeated = {key: value.repeat_interleave(samples, 0) for key, value in states.items()}
    features = model.dynamics.imagine_features(repeated, plans.repeat_interleave(samples, 0), sample=True)
    rewards = model.reward(features).float()
    return rewards.reshape(len(plans), samples, rewards.shape[-1]).mean(1).numpy()


def imagined_returns(model: WorldModel, states: dict[str, torch.Tensor], plans: torch.Tensor, samples: int
                     ) -> np.ndarray:
    """The predicted return of each plan: `imagined_rewards` summed over the horizon."""
    return imagined_rewards(model, states, plans, samples).sum(-1)


@torch.no_grad()
def horizon_rewards(model: WorldModel, data: dict[str, torch.Tensor], posterior: dict[str, torch.Tensor],
                    horizon: int, samples: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Predicted (mean over `samples` prior draws) and true rewards of the `horizon` decisions after each start.

    Returns (predicted (N, H), true (N, H), start index (N)) for every start with a whole horizon after it.
    """
    steps = data["action"].shape[1]
    starts = np.arange(0, steps - horizon)
    windows = torch.stack([data["action"][0, s + 1:s + 1 + horizon] for s in starts])
    predicted = imagined_rewards(model, {key: value[0, starts] for key, value in posterior.items()}, windows, samples)
    rewards = data["reward"].numpy()
    true = np.stack([rewards[s + 1:s + 1 + horizon] for s in starts])
    return predicted, true, starts


def first_reward_ahead(predicted: np.ndarray, true: np.ndarray, starts: np.ndarray, rewards: np.ndarray
                       ) -> dict[int, tuple[float, float]]:
    """The first rewarded decision of one episode as imagined k = 1..H decisions before it: {k: (predicted,
    true)} from `horizon_rewards`' (N, H) rewards and starts, for each k with a start there; {} where
    nothing pays. A start s imagines decisions s+1..s+H, so the first reward f sits at column k-1 of start f-k."""
    paying = np.nonzero(rewards > 0)[0]
    if not len(paying):
        return {}
    first, out = int(paying[0]), {}
    for k in range(1, true.shape[1] + 1):
        row = np.nonzero(starts == first - k)[0]
        if len(row):
            out[k] = (float(predicted[row[0], k - 1]), float(true[row[0], k - 1]))
    return out


def _corr(predicted: np.ndarray, true: np.ndarray) -> float | None:
    """Pearson correlation, None where either side is constant (a reward that never pays in these episodes)."""
    if len(true) < 3 or predicted.std() == 0 or true.std() == 0:
        return None
    return round(float(np.corrcoef(predicted, true)[0, 1]), 3)


def step_scores(predicted: np.ndarray, true: np.ndarray) -> dict[str, list]:
    """Reward error and correlation across starts at each step 1..H of (N, H) predicted and true rewards."""
    return {"reward_mae": [round(float(np.abs(predicted[:, k] - true[:, k]).mean()), 4) for k in range(true.shape[1])],
            "reward_corr": [_corr(predicted[:, k], true[:, k]) for k in range(true.shape[1])]}


def scores(predicted: np.ndarray, true: np.ndarray) -> dict[str, float | int | None]:
    return {"starts": len(true), "return_mae": round(float(np.abs(predicted - true).mean()), 3),
            "return_bias": round(float((predicted - true).mean()), 3), "return_corr": _corr(predicted, true)}


@torch.no_grad()
def score_model(model: WorldModel, episodes: list[dict[str, np.ndarray]], bits: int, horizon: int, samples: int,
                split: int, first_reward: bool = False) -> dict:
    image_errors, reward_errors, predicted, true, starts, ahead = [], [], [], [], [], []
    for episode in episodes:
        data = episode_tensors(episode, bits)
        posterior, _ = model.observe(data["image"], data["action"], data["is_first"])
        features = model.features(posterior)
        image_errors.append(float(((model.decode(features).float() - data["image"]) ** 2).mean()))
        reward_errors.append(float((model.reward(features)[0, 1:].float() - data["reward"][1:]).abs().mean()))
        p, t, s = horizon_rewards(model, data, posterior, horizon, samples)
        if first_reward:
            ahead.append(first_reward_ahead(p, t, s, data["reward"].numpy()))
        predicted.append(p)
        true.append(t)
        starts.append(s)
    steps_predicted, steps_true, starts_all = map(np.concatenate, (predicted, true, starts))
    predicted_all, true_all = steps_predicted.sum(-1), steps_true.sum(-1)
    out = {"image_mse": round(float(np.mean(image_errors)), 5), "reward_mae": round(float(np.mean(reward_errors)), 4),
           "open_loop": scores(predicted_all, true_all), "by_step": step_scores(steps_predicted, steps_true)}
    if split:
        early = starts_all < split
        out[f"open_loop_first_{split}"] = scores(predicted_all[early], true_all[early])
        out[f"open_loop_after_{split}"] = scores(predicted_all[~early], true_all[~early])
    if first_reward:
        ks = range(1, horizon + 1)
        out["first_reward"] = {
            "predicted": [_mean([e[k][0] for e in ahead if k in e]) for k in ks],
            "true": [_mean([e[k][1] for e in ahead if k in e]) for k in ks],
            "episodes": [sum(k in e for e in ahead) for k in ks]}
    return out


def _mean(values: list[float]) -> float | None:
    return round(float(np.mean(values)), 3) if values else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_checkpoint_options(parser)
    parser.add_argument("--horizon", type=at_least(1), default=12, help="decisions imagined (the planner's horizon)")
    parser.add_argument("--samples", type=at_least(1), default=4, help="prior draws per start")
    parser.add_argument("--split", type=at_least(0), default=0, help="report the first this many decisions apart")
    parser.add_argument("--first-reward", action="store_true",
                        help="also score each episode's first rewarded decision as imagined 1..H decisions ahead")
    args = parser.parse_args()
    paths = list_episodes(args.run_dir / "test_episodes")
    phases = [int(p) for p in args.phases.split(",")]
    chosen = [path for phase in phases for path in phase_paths(paths, phase, args)]
    episodes = [e for e in map(try_read_episode, chosen) if e is not None]
    if not episodes:
        raise SystemExit(f"no readable test episodes for phases {args.phases} in {args.run_dir}")
    returns = [round(float(np.sum(e["reward"])), 1) for e in episodes]
    for checkpoint in (int(c) for c in args.checkpoints.split(",")):
        torch.manual_seed(0)  # the posterior and prior samples: the same command gives the same figures
        cfg, model, updates = load_trained(args.run_dir, "cpu", checkpoint)
        line = {"run": str(args.run_dir), "model": updates, "phases": phases, "episodes": len(episodes),
                "episode_returns": returns, "horizon": args.horizon, "samples": args.samples,
                **score_model(model, episodes, cfg.data.image_bits, args.horizon, args.samples, args.split,
                              args.first_reward)}
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
