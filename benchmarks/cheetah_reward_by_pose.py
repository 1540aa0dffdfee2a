"""What a cheetah-run model predicts a decision pays, by the cheetah's pose: level, tipped onto its front,
or on its back.

A planner that settles in a poor pose (results/cpu/NOTES.md: a back-flip on seed 0, a nose-down stand on
seed 1) does so either because its reward head overvalues that pose or undervalues running, which it
may never have seen. For each kept model (`--checkpoints`) and each test phase (`--phases`, 1 = the first
phase after the seed episodes), the posterior's predicted reward is compared with the true reward, split
by pose (`cheetah_flips.py`'s definitions). Prints one JSON line per model and phase.

With `--before-flip 6,12` it also asks whether the model sees a back-flip coming: from the posterior k
decisions before each episode's first flipped state, it imagines the decisions up to 12 after it with the
actions really taken, and prints the predicted and true mean reward before and after the flip.

    python benchmarks/cheetah_reward_by_pose.py RUN_DIR --checkpoints 2000,3000 --phases 2,3 [--per-phase 5]
        [--before-flip 6,12]
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from _run_episodes import add_checkpoint_options, phase_paths
from cheetah_flips import POSES, pitch_column, poses
from planetrl.data.episodes import list_episodes, try_read_episode
from planetrl.models.world_model import WorldModel
from planetrl.training.planet import load_trained
from world_model_check import episode_tensors, observed

AFTER_FLIP = 12


def by_pose(true: np.ndarray, predicted: np.ndarray, pose: np.ndarray) -> dict[str, dict]:
    """Steps, mean true and mean predicted reward per pose (poses that never occur are left out)."""
    out = {}
    for index, name in enumerate(POSES):
        mask = pose == index
        if mask.any():
            out[name] = {"steps": int(mask.sum()), "true": round(float(true[mask].mean()), 3),
                         "predicted": round(float(predicted[mask].mean()), 3)}
    return out


@torch.no_grad()
def around_flip(model: WorldModel, data: dict[str, torch.Tensor], posterior: dict[str, torch.Tensor], flip: int,
                before: int) -> dict[str, float] | None:
    """Open-loop predicted and true mean reward for the `before` decisions up to a flip and the 12 after it."""
    start_step, end = flip - before, flip + AFTER_FLIP
    if start_step < 1 or end >= data["action"].shape[1]:
        return None
    start = {key: value[:, start_step] for key, value in posterior.items()}
    imagined = model.dynamics.imagine_features(start, data["action"][:, start_step + 1:end + 1], sample=False)
    predicted = model.reward(imagined)[0].float().numpy()
    true = data["reward"][start_step + 1:end + 1].numpy()
    return {"predicted_before": float(predicted[:before].mean()), "true_before": float(true[:before].mean()),
            "predicted_after": float(predicted[before:].mean()), "true_after": float(true[before:].mean())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_checkpoint_options(parser)
    parser.add_argument("--before-flip", default="", help="comma-separated decisions before a flip to imagine from")
    args = parser.parse_args()
    before_flip = [int(k) for k in args.before_flip.split(",") if k]
    paths = list_episodes(args.run_dir / "test_episodes")
    column = pitch_column()
    for checkpoint in (int(c) for c in args.checkpoints.split(",")):
        torch.manual_seed(0)  # the posterior samples: the same command gives the same figures
        cfg, model, updates = load_trained(args.run_dir, "cpu", checkpoint)
        for phase in (int(p) for p in args.phases.split(",")):
            episodes = [e for e in map(try_read_episode, phase_paths(paths, phase, args)) if e is not None]
            if not episodes:
                raise SystemExit(f"no readable test episodes for phase {phase} in {args.run_dir}")
            true, predicted, pose = [], [], []
            flips: dict[int, list[dict[str, float]]] = {k: [] for k in before_flip}
            for episode in episodes:
                data = episode_tensors(episode, cfg.data.image_bits)
                posterior, _, rewards = observed(model, data)
                true += data["reward"][1:].tolist()
                predicted += rewards[1:].tolist()
                episode_poses = poses(np.asarray(episode["state"])[:, column])
                pose.append(episode_poses[1:])
                flipped = np.flatnonzero(episode_poses == 2)
                for k in before_flip:
                    window = around_flip(model, data, posterior, int(flipped[0]), k) if len(flipped) else None
                    if window is not None:
                        flips[k].append(window)
            line = {"run": str(args.run_dir), "model": updates, "phase": phase, "episodes": len(episodes),
                    **by_pose(np.array(true), np.array(predicted), np.concatenate(pose))}
            for k, windows in flips.items():
                if windows:
                    line[f"flip_open_loop_{k}"] = {"flips": len(windows), **{
                        key: round(float(np.mean([w[key] for w in windows])), 3) for key in windows[0]}}
            print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
