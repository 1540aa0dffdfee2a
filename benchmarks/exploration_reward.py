"""How often exploration alone earns a paper task's reward: rewarded environment steps per action scheme.

finger-spin pays only while the spinner turns faster than 15 rad/s, so a world model learns its reward
only from the few steps where exploration happened to flick it. This runs each scheme on the task's
simulator (dm_control, no rendering, the paper's action repeat) and prints one JSON line per scheme:
the rewarded environment steps, the episodes with any reward and their returns. The schemes stand for
what the collection loop does before the reward model knows anything:

- `uniform`: the random seed episodes (uniform in the action bounds, a new action every decision);
- `gauss:S`: a plan near zero plus the planner's exploration noise Normal(0, S), clipped to [-1, 1];
- `ar:S:C`: the same noise correlated over decisions, n_t = C n_{t-1} + sqrt(1 - C^2) S e_t
  (stationary std S), clipped;
- `hold:K`: a uniform random action held for K decisions.

    python benchmarks/exploration_reward.py [--task finger-spin] [--episodes 20] [--seed 0]
        [--schemes uniform,gauss:0.3,gauss:0.6,ar:0.6:0.9,hold:8]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

import numpy as np

from planetrl.cli.common import at_least
from planetrl.envs.registry import PAPER_TASKS

Scheme = Callable[[int], np.ndarray]


def make_scheme(name: str, size: int, rng: np.random.Generator) -> Scheme:
    """A function of the decision index that returns the next action for the scheme `name`."""
    kind, *args = name.split(":")
    try:
        values = [float(a) for a in args]
    except ValueError:
        raise SystemExit(f"bad scheme {name!r}: its arguments must be numbers") from None
    state = {"noise": np.zeros(size), "held": np.zeros(size)}
    if kind == "uniform" and not values:
        return lambda t: rng.uniform(-1.0, 1.0, size)
    if kind == "gauss" and len(values) == 1:
        return lambda t: np.clip(rng.normal(0.0, values[0], size), -1.0, 1.0)
    if kind == "ar" and len(values) == 2 and 0.0 <= values[1] < 1.0:
        scale, corr = values

        def correlated(t: int) -> np.ndarray:
            state["noise"] = corr * state["noise"] + np.sqrt(1.0 - corr * corr) * scale * rng.normal(size=size)
            return np.clip(state["noise"], -1.0, 1.0)
        return correlated
    if kind == "hold" and len(values) == 1 and values[0] >= 1:
        period = int(values[0])

        def held(t: int) -> np.ndarray:
            if t % period == 0:
                state["held"] = rng.uniform(-1.0, 1.0, size)
            return state["held"]
        return held
    raise SystemExit(f"bad scheme {name!r}: use uniform, gauss:S, ar:S:C (0 <= C < 1) or hold:K (K >= 1)")


def measure(task: str, name: str, episodes: int, seed: int) -> dict[str, object]:
    """Roll `episodes` episodes of scheme `name` on `task` and count the rewarded environment steps."""
    from dm_control import suite

    domain, task_name, repeat = PAPER_TASKS[task]
    env = suite.load(domain, task_name, task_kwargs={"random": seed})
    rng = np.random.default_rng(seed)
    size = env.action_spec().shape[0]
    returns, rewarded, steps = [], 0, 0
    for _ in range(episodes):
        scheme, step, total, decision = make_scheme(name, size, rng), env.reset(), 0.0, 0
        while not step.last():
            action = scheme(decision)
            decision += 1
            for _ in range(repeat):
                step = env.step(action)
                reward = float(step.reward or 0.0)
                total, rewarded, steps = total + reward, rewarded + (reward > 0), steps + 1
                if step.last():
                    break
        returns.append(total)
    return {"task": task, "scheme": name, "action_repeat": repeat, "episodes": episodes, "seed": seed,
            "env_steps": steps, "rewarded_steps": rewarded, "episodes_with_reward": sum(r > 0 for r in returns),
            "mean_return": float(np.mean(returns)), "max_return": float(np.max(returns))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="finger-spin", choices=sorted(PAPER_TASKS))
    parser.add_argument("--episodes", type=at_least(1), default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--schemes", default="uniform,gauss:0.3,gauss:0.6,ar:0.6:0.9,hold:8")
    args = parser.parse_args()
    for name in args.schemes.split(","):
        print(json.dumps(measure(args.task, name, args.episodes, args.seed)), flush=True)


if __name__ == "__main__":
    main()
