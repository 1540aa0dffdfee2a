"""The `cpu` preset's update and decision in fp32 and in bf16 on this CPU, and whether its bf16 is native.

Why: the `cpu` presets ask for `precision: auto`, bf16 only where oneDNN has native bf16 kernels
(AVX512-BF16 or AMX). This measures what the choice is worth on the machine at hand: one JSON line per
precision, the two interleaved round by round so that both see the same machine.

    python benchmarks/precision_speed.py [--preset cpu] [--rounds 3] [--set key=value ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np
import torch

from cpu_profile import fake_batch, make_agent
from planetrl import config as C
from planetrl.cli.common import at_least
from planetrl.models.world_model import native_bf16, resolve_precision
from planetrl.training.updater import WorldModelUpdater, build_world_model

PRECISIONS = ("fp32", "bf16")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--rounds", type=at_least(1), default=3, help="timed rounds after one warm-up round")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()
    cpu = torch.device("cpu")
    steps = {}
    for precision in PRECISIONS:
        cfg = C.build(args.preset, [*args.overrides, f"optim.precision={precision}",
                                    f"planner.precision={precision}"])
        torch.manual_seed(0)
        updater = WorldModelUpdater(build_world_model(cfg, 6), cfg, cpu)
        batch = fake_batch(cfg.data.batch_size, cfg.data.chunk_length, cfg.env.image_size)
        agent = make_agent(cfg)
        size = cfg.env.image_size
        obs = {"image": np.random.default_rng(0).integers(0, 255, (1, size, size, 3), dtype=np.uint8)}
        steps[precision] = {"update": lambda u=updater, b=batch: u.update(b),
                            "decision": lambda a=agent, o=obs: a.act(o, explore=True)}
    times: dict[str, dict[str, list[float]]] = {p: {"update": [], "decision": []} for p in PRECISIONS}
    for round_index in range(args.rounds + 1):
        for precision in PRECISIONS:
            for name, step in steps[precision].items():
                start = time.perf_counter()
                step()
                if round_index:
                    times[precision][name].append(time.perf_counter() - start)
    info = {"preset": args.preset, "overrides": args.overrides, "bf16_native": native_bf16(cpu),
            "auto_resolves_to": resolve_precision("auto", cpu),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "threads": torch.get_num_threads(), "cpus": os.cpu_count(), "torch": torch.__version__}
    for precision in PRECISIONS:
        medians = {f"{name}_s": round(statistics.median(t), 4) for name, t in times[precision].items()}
        print(json.dumps({"precision": precision, **medians, **info}), flush=True)


if __name__ == "__main__":
    main()
