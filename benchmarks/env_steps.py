"""Environment steps per second from 64x64 pixels: in-process and through BatchEnv.

Prints one JSON object per (task, render, mode). Environment steps count raw
simulator steps (decisions x action repeat), the unit REFERENCE.md uses.

    python benchmarks/env_steps.py [--tasks cartpole-swingup,walker-walk,cheetah-run] [--steps 400]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

os.environ.setdefault("MUJOCO_GL", "egl")

from planetrl.cli.common import at_least
from planetrl.config import EnvConfig
from planetrl.envs.batch import BatchEnv
from planetrl.envs.make import action_repeat, make_batch_env, make_env


def measure(cfg: EnvConfig, processes: int, env_steps: int) -> float:
    """Raw env steps per second over roughly `env_steps` steps (after one warm-up step)."""
    if processes == 0:
        batch = BatchEnv([make_env(cfg, seed=0)])
    else:
        batch = make_batch_env(EnvConfig(**{**cfg.__dict__, "processes": processes}), processes)
    repeat = action_repeat(cfg)
    rng = np.random.default_rng(0)
    try:
        batch.reset()
        batch.step(rng.uniform(-1, 1, (len(batch), *batch.action_space.shape)))
        decisions = max(env_steps // (repeat * len(batch)), 1)
        start = time.perf_counter()
        for _ in range(decisions):
            actions = rng.uniform(-1, 1, (len(batch), *batch.action_space.shape))
            _, _, terminated, truncated, _ = batch.step(actions)
            done = np.flatnonzero(terminated | truncated)
            if len(done):
                batch.reset(done)
        elapsed = time.perf_counter() - start
    finally:
        batch.close()
    return decisions * repeat * len(batch) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", default="cartpole-swingup,walker-walk,cheetah-run")
    parser.add_argument("--steps", type=at_least(1), default=400, help="raw env steps per measurement")
    parser.add_argument("--processes", default="0,1,2,4", help="0 = in-process")
    args = parser.parse_args()
    for task in args.tasks.split(","):
        for fast in (False, True):
            cfg = EnvConfig(task=task, image_size=64, fast_render=fast)
            for processes in map(int, args.processes.split(",")):
                rate = measure(cfg, processes, args.steps)
                print(json.dumps({"task": task, "render": "fast" if fast else "default",
                                  "mode": "in-process" if processes == 0 else f"BatchEnv x{processes}",
                                  "env_steps_per_s": round(rate, 1), "cpus": os.cpu_count(),
                                  "machine": platform.processor() or platform.machine()}), flush=True)


if __name__ == "__main__":
    main()
