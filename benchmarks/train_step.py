"""World-model training step time and FLOPs: fp32, bf16, bf16+channels_last, compiled (fp32 or bf16).

    python benchmarks/train_step.py [--batch 50] [--length 50] [--size 64] [--steps 4] [--modes ...] [--set k=v ...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import torch
from torch.utils.flop_counter import FlopCounterMode

from planetrl import config as C
from planetrl.cli.common import at_least
from planetrl.training.updater import WorldModelUpdater, build_world_model, resolve_device

MODES = {
    "fp32": ["optim.precision=fp32", "optim.channels_last=false"],
    "bf16": ["optim.precision=bf16", "optim.channels_last=false"],
    "bf16+channels_last": ["optim.precision=bf16", "optim.channels_last=true"],
    "fp32+channels_last": ["optim.precision=fp32", "optim.channels_last=true"],
    "bf16+channels_last+compile": ["optim.precision=bf16", "optim.channels_last=true", "optim.compile=true"],
    "fp32+compile": ["optim.precision=fp32", "optim.channels_last=false", "optim.compile=true"],
}


def fake_batch(batch: int, length: int, size: int, actions: int, device: torch.device) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    is_first = torch.zeros(batch, length, dtype=torch.bool)
    is_first[:, 0] = True
    data = {"image": torch.rand(batch, length, size, size, 3, generator=g) - 0.5,
            "action": torch.rand(batch, length, actions, generator=g) * 2 - 1,
            "reward": torch.rand(batch, length, generator=g), "is_first": is_first}
    return {k: v.to(device) for k, v in data.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch", type=at_least(1), default=50)
    parser.add_argument("--length", type=at_least(1), default=50)
    parser.add_argument("--size", type=at_least(1), default=64)
    parser.add_argument("--steps", type=at_least(1), default=4, help="timed steps after two warm-up steps")
    parser.add_argument("--modes", default="fp32,bf16,bf16+channels_last")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--preset", default="paper")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()
    device = resolve_device(args.device)
    for mode in args.modes.split(","):
        cfg = C.build(args.preset, [*args.overrides, *MODES[mode], f"env.image_size={args.size}"])
        torch.manual_seed(0)
        updater = WorldModelUpdater(build_world_model(cfg, 6), cfg, device)
        batch = fake_batch(args.batch, args.length, args.size, 6, device)
        start = time.perf_counter()
        updater.update(batch)
        first = time.perf_counter() - start
        updater.update(batch)
        times = []
        for _ in range(args.steps):
            if device.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            updater.update(batch)
            if device.type == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
        with FlopCounterMode(display=False) as counter:
            updater.update(batch)
        flops = counter.get_total_flops()
        median = statistics.median(times)
        print(json.dumps({"mode": mode, "batch": args.batch, "length": args.length, "image": args.size,
                          "step_s_median": round(median, 3), "step_s_min": round(min(times), 3),
                          "first_step_s": round(first, 1), "gflop_per_step": round(flops / 1e9, 1),
                          "gflop_per_s": round(flops / 1e9 / median, 1), "device": str(device),
                          "threads": torch.get_num_threads(), "cpus": os.cpu_count(),
                          "torch": torch.__version__, "machine": platform.machine(),
                          "overrides": args.overrides}), flush=True)


if __name__ == "__main__":
    main()
