"""CEM time per action with a preset's world model and planner; by default the paper's: 1000 candidates x 12
steps x 10 iterations.

Modes: eager (fp32), bf16 (autocast), compiled (torch.compile of the rollout, fp32),
compiled+bf16. `--agreement` also measures how far bf16 moves the chosen action,
against how far a different seed moves it in fp32 (the planner's own noise).

    python benchmarks/cem_speed.py [--envs 1,4] [--modes eager,bf16] [--repeats 5] [--agreement] [--device cuda]
        [--preset cpu --set model.reward_units=300 ... --action-dims 2]
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
from planetrl.models.world_model import autocast
from planetrl.planning.cem import CEMSettings, plan
from planetrl.training.updater import build_world_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--envs", default="1,4")
    parser.add_argument("--modes", default="eager,bf16")
    parser.add_argument("--repeats", type=at_least(1), default=5)
    parser.add_argument("--candidates", type=at_least(1), default=None, help="default: the preset's")
    parser.add_argument("--preset", default="paper", help="model and planner sizes (planetrl's presets)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="config override on top of the preset, as `planetrl train --set` takes it")
    parser.add_argument("--action-dims", type=at_least(1), default=6,
                        help="6: cheetah-run and walker-walk; 2: finger-spin")
    parser.add_argument("--agreement", action="store_true")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    args = parser.parse_args()
    device = torch.device(args.device)
    cfg = C.build(args.preset, args.set)
    torch.manual_seed(0)
    dims = args.action_dims
    model = build_world_model(cfg, dims).to(device).eval()
    p = cfg.planner
    settings = CEMSettings(horizon=p.horizon, iterations=p.iterations, candidates=args.candidates or p.candidates,
                           elites=p.elites)
    if args.agreement:
        measure_agreement(model, settings, device, dims)
    eager_rollout = model.dynamics.imagine_features
    for mode in args.modes.split(","):
        model.dynamics.imagine_features = torch.compile(eager_rollout) if "compiled" in mode else eager_rollout
        for envs in map(int, args.envs.split(",")):
            state = {k: torch.randn_like(v) for k, v in model.initial(envs).items()}
            state["std"] = state["std"].abs()
            generators = [torch.Generator(device=device).manual_seed(e) for e in range(envs)]
            times = []
            for _ in range(args.repeats + 1):
                start = time.perf_counter()
                with torch.inference_mode(), autocast(device, "bf16" if "bf16" in mode else "fp32"):
                    result = plan(model, state, dims, settings, generators)
                    result.first_action().cpu()  # waits for the GPU, as an agent's step does
                times.append(time.perf_counter() - start)
            median = statistics.median(times[1:])
            print(json.dumps({"mode": mode, "envs": envs, "s_per_plan": round(median, 3),
                              "s_per_action_per_env": round(median / envs, 3),
                              "candidates": settings.candidates, "horizon": settings.horizon,
                              "iterations": settings.iterations, "preset": args.preset, "overrides": args.set,
                              "action_dims": dims, "threads": torch.get_num_threads(),
                              "cpus": os.cpu_count(), "device": str(device)}), flush=True)


def measure_agreement(model: torch.nn.Module, settings: CEMSettings, device: torch.device, dims: int,
                      states: int = 20) -> None:
    """Mean |a_bf16 - a_fp32| with equal seeds, against mean |a_fp32(seed) - a_fp32(other seed)|."""
    bf16_gap, seed_gap = [], []
    for index in range(states):
        torch.manual_seed(100 + index)
        state = {k: torch.randn_like(v) for k, v in model.initial(1).items()}
        state["std"] = state["std"].abs()
        actions = {}
        for name, precision, seed in (("fp32", "fp32", 0), ("bf16", "bf16", 0), ("other", "fp32", 1)):
            torch.manual_seed(7)  # the model's own state sampling
            with torch.inference_mode(), autocast(device, precision):
                result = plan(model, state, dims, settings, [torch.Generator(device=device).manual_seed(seed)])
            actions[name] = result.first_action().float()
        bf16_gap.append((actions["bf16"] - actions["fp32"]).abs().mean().item())
        seed_gap.append((actions["other"] - actions["fp32"]).abs().mean().item())
    print(json.dumps({"agreement_states": states,
                      "mean_abs_action_diff_bf16_vs_fp32": round(statistics.mean(bf16_gap), 4),
                      "mean_abs_action_diff_fp32_other_seed": round(statistics.mean(seed_gap), 4)}), flush=True)


if __name__ == "__main__":
    main()
