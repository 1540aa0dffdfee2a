"""Seconds per CEM plan with the imagined priors' noise from torch's global RNG against per-env generators.

    OMP_NUM_THREADS=2 python benchmarks/planner_noise.py [--rounds 20] [--threads 2]

The `cpu` preset's planner (300 candidates, 12 steps, 8 iterations, bf16) on an untrained world
model of its size; the two forms alternate round by round so both see the same machine. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from planetrl import config as C
from planetrl.cli.common import at_least
from planetrl.models.world_model import WorldModel
from planetrl.planning.cem import CEMSettings, plan


class _GlobalNoise:
    """The model as the planner saw it before: no `noise_size`, so the rollout draws from the global RNG."""

    def __init__(self, model: WorldModel) -> None:
        self.model = model

    def imagine(self, state: dict, actions: torch.Tensor) -> torch.Tensor:
        return self.model.imagine(state, actions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=at_least(3), default=20, help="the first two warm up and are not counted")
    parser.add_argument("--threads", type=at_least(1), default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    cfg = C.build("cpu")
    m, p = cfg.model, cfg.planner
    model = WorldModel(1, 64, "rssm", m.belief_size, m.state_size, m.hidden_size, depth=m.depth).eval()
    state = model.initial(1)
    settings = CEMSettings(horizon=p.horizon, iterations=p.iterations, candidates=p.candidates, elites=p.elites)
    forms = {"global_rng": _GlobalNoise(model), "generators": model}
    times: dict[str, list[float]] = {name: [] for name in forms}
    for _ in range(args.rounds):
        for name, objective in forms.items():
            start = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                plan(objective, state, 1, settings, [torch.Generator().manual_seed(0)])
            times[name].append(time.perf_counter() - start)
    print(json.dumps({"threads": args.threads, "rounds": args.rounds,
                      **{f"{name}_s": round(statistics.median(v[2:]), 4) for name, v in times.items()}}))


if __name__ == "__main__":
    main()
