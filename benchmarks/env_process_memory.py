"""Resident memory of one environment process, after a reset and a few rendered steps: what eval, visualize and a
test phase hold per episode they run side by side.

    MUJOCO_GL=egl python benchmarks/env_process_memory.py --task walker-walk [--envs 4] [--steps 10]
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

from planetrl.cli.common import at_least
from planetrl.config import EnvConfig
from planetrl.envs.make import make_batch_env


def rss_mb(pid: int) -> float:
    """Resident set size of process `pid` in MiB, from /proc."""
    with open(f"/proc/{pid}/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def pss_mb(pid: int) -> float:
    """Proportional set size of process `pid` in MiB (shared pages divided among their sharers), from /proc."""
    with open(f"/proc/{pid}/smaps_rollup") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("Pss:")) / 1024


def env_workers() -> list[int]:
    """Process ids of this process's env workers: its spawned children, not multiprocessing's resource tracker."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                command = handle.read()
        except OSError:  # ended meanwhile
            continue
        if parent == os.getpid() and b"spawn_main" in command:
            found.append(int(entry))
    return sorted(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--task", default="walker-walk")
    parser.add_argument("--envs", type=at_least(1), default=4, help="env processes side by side")
    parser.add_argument("--steps", type=at_least(0), default=10, help="rendered steps after the reset")
    parser.add_argument("--size", type=at_least(16), default=64, help="image size")
    args = parser.parse_args()
    env = make_batch_env(EnvConfig(task=args.task, image_size=args.size, processes=1), args.envs, seed=0)
    try:
        env.reset()
        space = env.action_space
        for _ in range(args.steps):
            env.step([space.sample() for _ in range(args.envs)])
        workers = env_workers()
        each = [round(rss_mb(pid), 1) for pid in workers]
        shared_out = [round(pss_mb(pid), 1) for pid in workers]
    finally:
        env.close()
    print(json.dumps({"task": args.task, "image_size": args.size, "envs": args.envs, "steps": args.steps,
                      "rss_mb_each": each, "rss_mb_mean": round(float(np.mean(each)), 1),
                      "pss_mb_each": shared_out, "pss_mb_mean": round(float(np.mean(shared_out)), 1),
                      "rss_mb_parent": round(rss_mb(os.getpid()), 1)}), flush=True)


if __name__ == "__main__":
    main()
