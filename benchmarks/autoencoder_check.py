"""Whether the world model's convolutions alone can draw the traffic: a plain autoencoder on a run's frames.

The highway world models keep none of the other cars' pixels (traffic_recall.py). This separates the
two places the cars could be lost: the image path (the run's own ConvEncoder and ConvDecoder, same sizes)
or the latent dynamics between them (the posterior, the KL, the recurrent state). It trains encoder ->
one linear layer to the model's feature size -> decoder on single frames of the run's `train_episodes`,
with the world model's image loss (a unit-variance Gaussian, summed over pixels) and optimizer, and every
`--every` steps prints one JSON line: the loss and the share of each car kind's pixels the reconstruction
keeps on the run's held-out `test_episodes` (and, as `train_*`, on as many of the frames it trains on).
No KL, no recurrence: if this draws the cars, the image path can, and the world model loses them in its
latent state.

`--code N` narrows the linear layer to N units, and `--stochastic` makes those N a Gaussian sample, as
the RSSM's stochastic state is: mean and softplus std (plus the model's min_std) from the linear layer,
a KL against a unit Gaussian with the world model's free nats and KL scale, the mean at evaluation.
`--code 30 --stochastic` is the RSSM's per-frame bottleneck without the recurrence and with a fixed
prior; `--code 30` alone is its width without the noise. `--min-std` and `--kl-scale` replace the run's
`model.min_std` and `loss.kl_scale`, to tell the noise's share from the KL's.

    python benchmarks/autoencoder_check.py RUN_DIR [--steps 1000] [--every 250] [--batch 32] [--held-out 10]
        [--depth 32] [--lr 3e-4] [--code 30] [--stochastic] [--min-std 0.01] [--kl-scale 0]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from planetrl import config as C
from planetrl.cli.common import at_least
from planetrl.data.episodes import list_episodes, try_read_episode
from planetrl.data.loader import preprocess_image
from planetrl.losses import gaussian_kl
from planetrl.models.networks import ConvDecoder, ConvEncoder
from traffic_recall import CARS, recall_counts, to_uint8


def frames_of(directory: Path, last: int | None = None) -> np.ndarray:
    """All uint8 frames (N, H, W, 3) of the readable episodes in `directory` (the latest `last` episodes)."""
    paths = list_episodes(directory)
    episodes = [e for e in map(try_read_episode, paths[-last:] if last else paths) if e is not None]
    if not episodes:
        raise SystemExit(f"no readable episodes in {directory}")
    return np.concatenate([e["image"] for e in episodes])


class Autoencoder(nn.Module):
    """The world model's encoder and decoder, joined by one linear layer (the model's feature size by
    default), optionally a Gaussian sample of `code_size` units with a KL to a unit Gaussian."""

    def __init__(self, image_size: int, depth: int, code_size: int, stochastic: bool = False,
                 min_std: float = 0.1) -> None:
        super().__init__()
        self.stochastic, self.min_std = stochastic, min_std
        self.encoder = ConvEncoder(image_size, depth)
        self.bottleneck = nn.Linear(self.encoder.embed_size, 2 * code_size if stochastic else code_size)
        self.decoder = ConvDecoder(code_size, image_size, depth)

    def encode(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The code, and per frame its KL to a unit Gaussian (zero for a deterministic code)."""
        code = self.bottleneck(self.encoder(image))
        if not self.stochastic:
            return code, torch.zeros(code.shape[0])
        mean, raw_std = code.chunk(2, -1)
        std = F.softplus(raw_std) + self.min_std
        kl = gaussian_kl({"mean": mean, "std": std}, {"mean": torch.zeros_like(mean), "std": torch.ones_like(std)})
        return (mean + std * torch.randn_like(std) if self.training else mean), kl

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.encode(image)[0])


@torch.no_grad()
def frame_recall(model: Autoencoder, frames: np.ndarray, bits: int) -> dict[str, float | None]:
    """Per car kind, the share of its true pixels that the reconstruction gives the same color."""
    rebuilt = np.concatenate([to_uint8(model(preprocess_image(torch.as_tensor(chunk), bits, noise=False)))
                              for chunk in np.array_split(frames, max(1, len(frames) // 64))])
    counts = recall_counts(frames, rebuilt)
    return {f"{kind}_recall": round(counts[kind][1] / counts[kind][0], 3) if counts[kind][0] else None
            for kind in CARS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--steps", type=at_least(1), default=1000)
    parser.add_argument("--every", type=at_least(1), default=250)
    parser.add_argument("--batch", type=at_least(1), default=32, help="frames per step")
    parser.add_argument("--held-out", type=at_least(1), default=10, help="the latest this many test episodes")
    parser.add_argument("--depth", type=at_least(1),
                        help="channels of the first conv layer; default the run's model.depth")
    parser.add_argument("--lr", type=float, help="Adam's learning rate; default the run's optim.lr")
    parser.add_argument("--code", type=at_least(1), help="units of the code; default the model's feature size")
    parser.add_argument("--stochastic", action="store_true", help="a Gaussian code with a KL, as the RSSM's state")
    parser.add_argument("--min-std", type=float, help="the stochastic code's least std; default model.min_std")
    parser.add_argument("--kl-scale", type=float, help="the KL's weight; default loss.kl_scale")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    cfg = C.load(args.run_dir / "config.yaml")
    train = frames_of(args.run_dir / "train_episodes")
    held_out = frames_of(args.run_dir / "test_episodes", args.held_out)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    train_sample = train[rng.choice(len(train), size=min(len(train), len(held_out)), replace=False)]
    depth, lr = args.depth or cfg.model.depth, args.lr or cfg.optim.lr
    code = args.code or cfg.model.belief_size + cfg.model.state_size
    min_std = cfg.model.min_std if args.min_std is None else args.min_std
    kl_scale = cfg.loss.kl_scale if args.kl_scale is None else args.kl_scale
    model = Autoencoder(cfg.env.image_size, depth, code, args.stochastic, min_std)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, eps=cfg.optim.eps)
    bits, total, kl_total, window, start = cfg.data.image_bits, 0.0, 0.0, 0, time.perf_counter()
    for step in range(1, args.steps + 1):
        image = preprocess_image(torch.as_tensor(train[rng.integers(len(train), size=args.batch)]), bits)
        code_sample, kl = model.encode(image)
        loss = 0.5 * (model.decoder(code_sample) - image).pow(2).sum((1, 2, 3)).mean()  # NLL up to its constant
        kl_term = kl_scale * torch.clamp(kl, min=cfg.loss.free_nats).mean() if args.stochastic else 0.0
        optimizer.zero_grad(set_to_none=True)
        (loss + kl_term).backward()
        nn.utils.clip_grad_norm_(model.parameters(), cfg.optim.grad_clip)
        optimizer.step()
        total, window, kl_total = total + loss.item(), window + 1, kl_total + kl.mean().item()
        if step % args.every == 0 or step == args.steps:
            model.eval()
            line = {"run": str(args.run_dir), "depth": depth, "lr": lr, "code": code, "stochastic": args.stochastic,
                    **({"min_std": min_std, "kl_scale": kl_scale} if args.stochastic else {}),
                    "steps": step, "train_frames": len(train),
                    "held_out_frames": len(held_out), "seconds": round(time.perf_counter() - start, 1),
                    "image_nll": round(total / window, 2), "kl": round(kl_total / window, 2),
                    **frame_recall(model, held_out, bits),
                    **{f"train_{k}": v for k, v in frame_recall(model, train_sample, bits).items()}}
            model.train()
            print(json.dumps(line), flush=True)
            total, kl_total, window = 0.0, 0.0, 0


if __name__ == "__main__":
    main()
