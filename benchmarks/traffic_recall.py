"""Whether a highway world model sees the traffic: how many of the other cars' pixels its
reconstructions keep.

The planner can only avoid a collision that its model represents. highway-env draws the ego car
yellow, the other cars light blue and crashed cars red, on a gray road, so each pixel of a
reconstruction can be read back as the nearest of those colors. Prints one JSON line per model: for
the ego car, the other cars and crashed cars, the share of their true pixels that the reconstruction
(from the posterior, the filter's view: its sample, or its mean where the run's `loss.decode_mean`
trained the decoder on the mean) gives the same color; with `--open-loop K`, also K steps after
the last posterior, with the actions taken.

    python benchmarks/traffic_recall.py RUN_DIR [--checkpoints 500,1000] [--which train_episodes]
        [--episodes 10] [--first N] [--open-loop 6] [--figure PNG]

`--figure` also writes, for the first three chosen episodes (one row each), the last two frames beside
their reconstructions from the posterior of the first (or only) checkpoint, at twice the size.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from planetrl.cli.common import at_least
from planetrl.data.episodes import list_episodes, try_read_episode
from planetrl.training.planet import load_trained
from world_model_check import episode_tensors

PALETTE = {"road": (100, 100, 100), "ego": (200, 200, 0), "traffic": (100, 200, 255), "crashed": (255, 100, 100),
           "marking": (255, 255, 255), "outline": (60, 60, 60)}
CARS = ("ego", "traffic", "crashed")


def nearest_color(images: np.ndarray) -> np.ndarray:
    """Each pixel of uint8 images (..., 3) as the index of the nearest PALETTE color."""
    colors = np.array(list(PALETTE.values()), np.float32)
    distance = ((images[..., None, :].astype(np.float32) - colors) ** 2).sum(-1)
    return distance.argmin(-1)


def to_uint8(reconstruction: torch.Tensor) -> np.ndarray:
    """Decoder output (T, H, W, 3) centred on 0 as uint8 frames."""
    return ((reconstruction.float() + 0.5).clamp(0, 1) * 255).round().byte().numpy()


def recall_counts(true_frames: np.ndarray, reconstructed: np.ndarray) -> dict[str, list[int]]:
    """Per car kind: [true pixels, pixels the reconstruction gives the same color]."""
    names = list(PALETTE)
    truth, guess = nearest_color(true_frames), nearest_color(reconstructed)
    counts = {}
    for kind in CARS:
        mask = truth == names.index(kind)
        counts[kind] = [int(mask.sum()), int((guess[mask] == names.index(kind)).sum())]
    return counts


@torch.no_grad()
def reconstruct(model, episode: dict[str, np.ndarray], bits: int, mean: bool = False) -> np.ndarray:
    """The episode's frames as the posterior (its sample, or with `mean` its mean) reconstructs them,
    uint8 (T, H, W, 3)."""
    data = episode_tensors(episode, bits)
    posterior, _ = model.observe(data["image"], data["action"], data["is_first"])
    return to_uint8(model.decode(model.features(posterior, mean))[0])


def save_figure(path: Path, model, episodes: list[dict[str, np.ndarray]], bits: int, mean: bool = False) -> None:
    """Rows of (frame T-1, its reconstruction, last frame, its reconstruction), enlarged 2x."""
    from PIL import Image

    rows = []
    for episode in episodes[:3]:
        rebuilt = reconstruct(model, episode, bits, mean)
        rows.append(np.concatenate([episode["image"][-2], rebuilt[-2], episode["image"][-1], rebuilt[-1]], 1))
    grid = np.concatenate(rows, 0).repeat(2, 0).repeat(2, 1)
    Image.fromarray(grid).save(path)


@torch.no_grad()
def episode_counts(model, episode: dict[str, np.ndarray], bits: int, open_loop: int,
                   mean: bool = False) -> dict[str, list[int]]:
    rebuilt = reconstruct(model, episode, bits, mean)
    counts = {f"posterior_{k}": v for k, v in recall_counts(episode["image"], rebuilt).items()}
    length = len(episode["image"])
    if open_loop and length > open_loop + 1:
        cut = length - open_loop
        data = episode_tensors(episode, bits)
        context, _ = model.observe(data["image"][:, :cut], data["action"][:, :cut], data["is_first"][:, :cut])
        last = {key: value[:, -1] for key, value in context.items()}
        imagined = model.dynamics.imagine_features(last, data["action"][:, cut:], sample=False)
        counts.update({f"open_loop_{k}": v for k, v in
                       recall_counts(episode["image"][cut:], to_uint8(model.decode(imagined)[0])).items()})
    return counts


def recall_summary(model, episodes: list[dict[str, np.ndarray]], bits: int, open_loop: int,
                   mean: bool = False) -> dict[str, Any]:
    """Per view and car kind over all `episodes`: `{view}_{kind}_pixels` and the share kept, `..._recall`."""
    totals: dict[str, list[int]] = {}
    for episode in episodes:
        for key, (true, kept) in episode_counts(model, episode, bits, open_loop, mean).items():
            total = totals.setdefault(key, [0, 0])
            total[0] += true
            total[1] += kept
    summary: dict[str, Any] = {}
    for key, (true, kept) in sorted(totals.items()):
        summary[f"{key}_pixels"] = true
        summary[f"{key}_recall"] = round(kept / true, 3) if true else None
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--checkpoints", default="", help="kept models by update, comma-separated; default latest")
    parser.add_argument("--which", default="train_episodes", choices=("train_episodes", "test_episodes"))
    parser.add_argument("--episodes", type=at_least(1), default=10, help="the latest this many episodes")
    parser.add_argument("--first", type=at_least(1), help="of the first N episodes (in time order), not the latest")
    parser.add_argument("--open-loop", type=at_least(0), default=0, help="also score the last K steps imagined")
    parser.add_argument("--figure", type=Path, help="write true and reconstructed last frames to this PNG")
    args = parser.parse_args()
    paths = list_episodes(args.run_dir / args.which)
    paths = paths[:args.first][-args.episodes:] if args.first else paths[-args.episodes:]
    episodes = [e for e in map(try_read_episode, paths) if e is not None]
    if not episodes:
        raise SystemExit(f"no readable episodes among the {len(paths)} chosen in {args.run_dir / args.which}")
    checkpoints = [int(c) for c in args.checkpoints.split(",") if c] or [None]
    for checkpoint in checkpoints:
        torch.manual_seed(0)  # the posterior samples: the same command gives the same figures
        cfg, model, updates = load_trained(args.run_dir, "cpu", checkpoint)
        mean = cfg.loss.decode_mean  # reconstruct as the image term was trained
        result = {"run": str(args.run_dir), "updates": updates, "which": args.which, "episodes": len(episodes),
                  "decode_mean": mean}
        result.update(recall_summary(model, episodes, cfg.data.image_bits, args.open_loop, mean))
        print(json.dumps(result), flush=True)
        if args.figure and checkpoint == checkpoints[0]:
            save_figure(args.figure, model, episodes, cfg.data.image_bits, mean)


if __name__ == "__main__":
    main()
