"""Returns of fixed policies (a constant action, or uniform random) on a task: the baselines a planner must beat.

    python benchmarks/fixed_policies.py [--preset cpu128] [--task highway] [--episodes 20]
        [--actions "zero=0,0;throttle+0.5=0.5,0;throttle-0.5=-0.5,0"] [--set k=v ...]

Episode i starts from `reset(seed=1000 + i)` for every policy, so the policies meet the same traffic.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from planetrl import config as C
from planetrl.cli.common import at_least
from planetrl.envs.make import make_env


def parse_actions(text: str) -> dict[str, np.ndarray]:
    """"name=a,b;name2=c,d" -> {name: array}."""
    actions = {}
    for item in filter(None, text.split(";")):
        name, _, values = item.partition("=")
        try:
            actions[name.strip()] = np.array([float(v) for v in values.split(",")], np.float32)
        except ValueError:
            raise ValueError(f"bad action {item!r}; expected NAME=V1,V2,... with numbers") from None
    return actions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="cpu128")
    parser.add_argument("--task", default=None, help="the preset's task unless given")
    parser.add_argument("--episodes", type=at_least(1), default=20)
    parser.add_argument("--actions", default="zero=0,0;throttle+0.5=0.5,0;throttle-0.5=-0.5,0")
    parser.add_argument("--image-size", type=at_least(1), default=64,
                        help="rendered size (the returns do not depend on it)")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()
    overrides = [*args.overrides, f"env.image_size={args.image_size}"]
    if args.task:
        overrides.append(f"env.task={args.task}")
    cfg = C.build(args.preset, overrides)
    env = make_env(cfg.env, seed=0)
    size = env.action_space.shape[0]
    try:
        constants = parse_actions(args.actions)
    except ValueError as error:
        parser.error(str(error))
    for name, action in constants.items():
        if action.shape != (size,):
            parser.error(f"action {name!r} has {action.size} values; the task takes {size}")
    policies = {name: (lambda rng, a=action: a) for name, action in constants.items()}
    policies["random"] = lambda rng: rng.uniform(-1, 1, size).astype(np.float32)
    result = {}
    for name, policy in policies.items():
        rng = np.random.default_rng(0)
        returns, lengths, terminal = [], [], 0
        for episode in range(args.episodes):
            env.reset(seed=1000 + episode)
            total, steps = 0.0, 0
            while True:
                _, reward, terminated, truncated, _ = env.step(policy(rng))
                total += float(reward)
                steps += 1
                if terminated or truncated:
                    terminal += bool(terminated)
                    break
            returns.append(total)
            lengths.append(steps)
        result[name] = {"return_mean": round(float(np.mean(returns)), 1),
                        "return_stderr": round(float(np.std(returns) / np.sqrt(len(returns))), 1),
                        "length_mean": round(float(np.mean(lengths)), 1), "terminal_episodes": terminal,
                        "returns": [round(r, 1) for r in returns]}
    env.close()
    print(json.dumps({"task": cfg.env.task, "episodes": args.episodes, "decisions_per_episode_limit":
                      cfg.env.episode_steps or None, "policies": result}))


if __name__ == "__main__":
    main()
