"""The RSSM training loop (fused `observe`, forward and backward) in float32 and in bf16, by batch size.

Why: training runs this loop in float32 with autocast off, on the ground that at the old preset's batch of 8
bf16's casts cost more than its arithmetic saves. The preset now trains on 16 chunks; this measures the
choice at each batch size asked for. One JSON line per batch size, the two dtypes interleaved round by round
so that both see the same machine; `max_abs_diff` is how far bf16's posterior means land from float32's on
the same inputs, with the states carried as means (no sampling): torch draws a different normal stream in
bf16 than in float32 for some sizes (1,500 numbers, batch 50, differ by up to 2.9), which would measure the
noise and not the precision.

    python benchmarks/rssm_loop_precision.py [--preset cpu] [--batches 8,16] [--rounds 30] [--set key=value ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch

from planetrl import config as C
from planetrl.cli.common import at_least
from planetrl.models import fused_rssm
from planetrl.models.world_model import native_bf16
from planetrl.training.updater import build_world_model

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
ACTION_SIZE = 6  # walker-walk and cheetah-run, the largest of the paper's tasks


def loop_inputs(dynamics: torch.nn.Module, batch: int, length: int) -> tuple[torch.Tensor, ...]:
    """Embeddings (with gradients, as the encoder's are), actions and episode starts for one chunk batch."""
    g = torch.Generator().manual_seed(batch)
    embed_size = dynamics.posterior_hidden.in_features - dynamics.belief_size
    embeds = torch.randn(batch, length, embed_size, generator=g).requires_grad_()
    actions = torch.rand(batch, length, ACTION_SIZE, generator=g) * 2 - 1
    is_first = torch.zeros(batch, length, dtype=torch.bool)
    is_first[:, 0] = True
    return embeds, actions, is_first


def forward_backward(dynamics: torch.nn.Module, inputs: tuple[torch.Tensor, ...], dtype: torch.dtype,
                     sample: bool = True) -> torch.Tensor:
    """One loop forward and backward through a loss that reads every output; returns the posterior means."""
    torch.manual_seed(0)
    posterior, prior = fused_rssm.observe(dynamics, *inputs, state=None, sample=sample, dtype=dtype)
    loss = sum(value.float().square().mean() for value in (*posterior.values(), prior["mean"], prior["std"]))
    loss.backward()
    return posterior["mean"].detach().float()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--batches", default="8,16", help="comma list of batch sizes")
    parser.add_argument("--rounds", type=at_least(1), default=30, help="timed rounds after two warm-up rounds")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()
    try:
        batches = [int(b) for b in args.batches.split(",")]
    except ValueError:
        batches = []
    if not batches or min(batches) < 1:
        parser.error(f"--batches must be a comma list of batch sizes of at least 1, got {args.batches!r}")
    cfg = C.build(args.preset, args.overrides)
    torch.manual_seed(0)
    dynamics = build_world_model(cfg, ACTION_SIZE).dynamics
    info = {"preset": args.preset, "overrides": args.overrides, "length": cfg.data.chunk_length,
            "bf16_native": native_bf16(torch.device("cpu")),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "threads": torch.get_num_threads(), "cpus": os.cpu_count(), "torch": torch.__version__}
    for batch in batches:
        inputs = loop_inputs(dynamics, batch, cfg.data.chunk_length)
        means = {name: forward_backward(dynamics, inputs, dtype, sample=False) for name, dtype in DTYPES.items()}
        times: dict[str, list[float]] = {name: [] for name in DTYPES}
        for round_index in range(args.rounds + 2):
            for name, dtype in DTYPES.items():
                dynamics.zero_grad(set_to_none=True)
                start = time.perf_counter()
                forward_backward(dynamics, inputs, dtype)
                if round_index >= 2:
                    times[name].append(time.perf_counter() - start)
        medians = {f"{name}_ms": round(1000 * statistics.median(t), 2) for name, t in times.items()}
        print(json.dumps({"batch": batch, **medians,
                          "bf16_over_fp32": round(medians["bf16_ms"] / medians["fp32_ms"], 3),
                          "max_abs_diff": round((means["bf16"] - means["fp32"]).abs().max().item(), 4),
                          "rounds": args.rounds, **info}), flush=True)


if __name__ == "__main__":
    main()
