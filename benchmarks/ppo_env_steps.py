"""PPO environment steps per second from state with N envs in 1, 2 and 8 processes (or in-process).

Acting included (the policy runs every step), updates excluded.

    python benchmarks/ppo_env_steps.py [--config pendulum] [--processes 0,1,2,8] [--episodes 8]
"""

from __future__ import annotations

import argparse
import json
import os
import time

from planetrl import config as C
from planetrl.cli.common import at_least
from planetrl.envs.make import make_batch_env
from planetrl.training.driver import Driver
from planetrl.training.ppo import build_agent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", default="pendulum", choices=sorted(C.PPO_CONFIGS))
    parser.add_argument("--processes", default="0,1,2,8")
    parser.add_argument("--episodes", type=at_least(1), default=8)
    args = parser.parse_args()
    for processes in map(int, args.processes.split(",")):
        envs = max(processes, 1) if processes else 8
        cfg = C.set_values(C.PPORunConfig(), {**C.PPO_CONFIGS[args.config], "env.processes": processes})
        env = make_batch_env(cfg.env, envs, seed=0)
        try:
            agent = build_agent(cfg, env)
            Driver(env, agent, seed=0).run(envs, explore=False)  # warm-up
            start = time.perf_counter()
            results = Driver(env, agent, seed=1).run(args.episodes, explore=False)
            elapsed = time.perf_counter() - start
        finally:
            env.close()
        steps = sum(r.length for r in results)
        print(json.dumps({"config": args.config, "processes": processes, "envs": envs,
                          "mode": "in-process" if processes == 0 else "one env per process",
                          "env_steps_per_s": round(steps / elapsed, 1), "cpus": os.cpu_count()}), flush=True)


if __name__ == "__main__":
    main()
