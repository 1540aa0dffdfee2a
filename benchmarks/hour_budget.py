"""Where an hour of a preset goes, per task: seconds per update, per decision, per test phase, and the shares
of planning, training and simulation in a whole run. Prints one JSON line per task; run it on an idle machine.

    python benchmarks/hour_budget.py --tasks cartpole-swingup,cheetah-run [--preset cpu] [--updates 200]
        [--set data.batch_size=16 ...]

It trains the preset (with any `--set` overrides, as `planetrl train` takes them) for `--updates` updates
in a temporary directory (two collected episodes, one test phase) and reads the run's own timings, then
times the simulator alone with random actions.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from planetrl import config as C
from planetrl.agents.random import RandomAgent
from planetrl.cli.common import at_least
from planetrl.envs.make import decisions_per_episode, make_batch_env
from planetrl.metrics import read_json_lines
from planetrl.models.world_model import native_bf16
from planetrl.training.driver import Driver
from planetrl.training.planet import PlanetRun
from planetrl.training.results import RATE_KEYS
from planetrl.training.rundir import prepare_run_dir


def simulation_seconds(cfg: C.Config) -> float:
    """Seconds per decision of the env alone (its process, action repeat and rendering), random actions."""
    env = make_batch_env(cfg.env, 1, seed=123)
    try:
        start = time.perf_counter()
        steps = sum(r.length for r in Driver(env, RandomAgent(env.action_space, 1, seed=0)).run(1))
        return (time.perf_counter() - start) / max(steps, 1)
    finally:
        env.close()


def run_seconds(cfg: C.Config, update_s: float, decision_s: float, test_phase_s: float,
                seed_s: float) -> dict[str, float]:
    """A whole run of `cfg` priced at these rates: its updates, collected episodes and test phases."""
    train = cfg.train
    episodes = train.total_updates // train.collect_every
    phases = train.total_updates // train.test_every
    parts = {"training": train.total_updates * update_s,
             "collect": episodes * decisions_per_episode(cfg.env) * decision_s, "testing": phases * test_phase_s}
    return {**parts, "total": seed_s + sum(parts.values()), "episodes": episodes, "phases": phases}


def measure(task: str, preset: str, updates: int, overrides: tuple[str, ...] = ()) -> dict[str, float | str]:
    cfg = C.build(preset, [*overrides, f"env.task={task}", f"train.total_updates={updates}",
                           f"train.test_every={updates}", f"train.collect_every={updates // 2}",
                           f"train.log_every={max(updates // 8, 1)}"])
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run-00"
        prepare_run_dir(run_dir, cfg, {})
        start = time.time()
        with contextlib.redirect_stdout(sys.stderr):  # the run's progress lines; stdout holds only JSON
            PlanetRun(run_dir, cfg, progress=False).run()
        metrics = read_json_lines(run_dir / "metrics.jsonl")
        tests = read_json_lines(run_dir / "tests.jsonl")
    seed_s = metrics[0]["time"] - start  # the parameter counts are logged once seeding is done
    rates = [m["train/updates_per_s"] for m in metrics if "train/updates_per_s" in m][1:]  # first: warm-up
    update_s = 1 / float(np.median(rates))
    decision_s = float(np.mean([m["train/seconds_per_action"] for m in metrics if "train/seconds_per_action" in m]))
    test_decision_s = float(np.mean([m["test/seconds_per_action"] for m in metrics if "test/seconds_per_action" in m]))
    per_episode = decisions_per_episode(cfg.env)
    test_phase_s = test_decision_s * per_episode
    sim_s = simulation_seconds(cfg)
    full = C.build(preset, [*overrides, f"env.task={task}"])
    parts = run_seconds(full, update_s, decision_s, test_phase_s, seed_s)
    training, collect, testing, total = parts["training"], parts["collect"], parts["testing"], parts["total"]
    episodes, phases = parts["episodes"], parts["phases"]
    simulation = (episodes + phases) * per_episode * sim_s  # test episodes step in parallel processes
    return {
        "task": task, "preset": preset, "overrides": list(overrides),
        "update_s": round(update_s, 4), "decision_s": round(decision_s, 4),
        "test_phase_s": round(test_phase_s, 1), "seed_s": round(seed_s, 1),
        "simulation_s_per_decision": round(sim_s, 4),
        "decisions_per_episode": per_episode, "run_minutes": round(total / 60, 1),
        "share_training": round(training / total, 3),
        "share_planning": round((collect + testing - simulation) / total, 3),
        "share_simulation": round(simulation / total, 3), "share_seeding": round(seed_s / total, 3),
        "test_returns": tests[-1]["returns"] if tests else None, "cpus": os.cpu_count(),
        "cpu_bf16_native": native_bf16(torch.device("cpu")),
    }


def rates_of(result: dict) -> dict[str, float | bool]:
    """The idle rates `planetrl results table` prices a run's minutes with, from one task's line.

    With them goes whether the CPU had native bf16: the `cpu` preset runs about 1.9x slower in fp32 on a
    CPU without it (BENCHMARKS.md), so the table says which kind its minutes are for.
    """
    rates = {k: result[k] for k in RATE_KEYS}
    if "cpu_bf16_native" in result:
        rates["cpu_bf16_native"] = result["cpu_bf16_native"]
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default="cartpole-swingup,reacher-easy,cheetah-run,finger-spin,cup-catch,"
                                           "walker-walk")
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--updates", type=at_least(1), default=200)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a config override on top of the preset, as `planetrl train --set` takes it")
    parser.add_argument("--rates", help="also write {task: rates} for `planetrl results table` to this JSON file")
    args = parser.parse_args()
    if args.rates and args.set:  # rates.json prices the preset's own records; a variant's rates would misprice them
        parser.error(f"--rates writes the preset's idle rates, so it does not take --set ({', '.join(args.set)})")
    rates = {}
    for task in args.tasks.split(","):
        result = measure(task.strip(), args.preset, args.updates, tuple(args.set))
        print(json.dumps(result), flush=True)
        rates[result["task"]] = rates_of(result)
    if args.rates:
        Path(args.rates).write_text(json.dumps(rates, indent=1) + "\n")


if __name__ == "__main__":
    main()
