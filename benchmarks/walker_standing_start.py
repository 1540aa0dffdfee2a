"""Whether a walker-walk run's agent keeps its walker up when it is given one standing.

Every walker-walk record's agent ends in a crouched scoot (torso at 0.4-0.7 m) and never stands, while the
same planner on the true simulator stands (`perfect_model_mpc.py`). Two stories fit: the learned model
values the crouch above standing, so its planner would let a standing walker down; or it values standing
but never learned how to get up, which its data never shows. This tells them apart. Each episode starts
either from the task's own start (`task`: joints at random angles, falling from 1.3 m, as the test episodes
start) or from the walker's rest pose (`standing`: torso at 1.3 m, upright, legs straight, at rest), and the
run's agent acts without exploration noise, as in a test phase; with `--baseline` a walker that applies no
torque is run from the same starts, since a passive walker takes some decisions to fold. Prints one JSON
line per episode (start, policy, return, decisions until the torso first drops under 1.0 m, the share of
decisions at the reward's standing height of 1.2 m, the median torso height and the mean forward speed)
and one summary line per start and policy.

    python benchmarks/walker_standing_start.py RUN_DIR [--checkpoint U] [--episodes 3] [--decisions 150]
        [--seed 0] [--starts standing,task] [--baseline] [--noise S [--correlation C]]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import gymnasium as gym
import numpy as np

from plan_ranking import OneEnvBatch
from planetrl.cli.common import at_least
from planetrl.envs.make import make_env
from planetrl.training.planet import build_mpc_agent, load_trained

STARTS = ("standing", "task")
HELD_HEIGHT = 1.0  # m: above it walker-walk's standing term still pays 0.78 of its best (1.2 m, margin 0.6)


def stand_up(physics) -> None:
    """Put a walker in its model's rest pose: every joint at 0 (torso at 1.3 m, upright, legs straight), still."""
    with physics.reset_context():
        physics.data.qpos[:] = 0.0
        physics.data.qvel[:] = 0.0


def held_decisions(heights: list[float], threshold: float = HELD_HEIGHT) -> int:
    """Decisions before the torso first drops under `threshold` (all of them if it never does)."""
    return next((i for i, height in enumerate(heights) if height < threshold), len(heights))


def run_episode(env: gym.Env, agent, start: str, seed: int, decisions: int, explore: bool = False) -> dict:
    """One episode of the agent (None: no torque) from `start`, with its exploration noise when `explore`;
    heights and speeds are read after each decision."""
    from dm_control.suite import walker

    obs, _ = env.reset(seed=seed)
    inner = env.unwrapped
    physics = inner._env.physics
    if start == "standing":
        stand_up(physics)
        obs = {**obs, "image": inner.render()}
    if agent is not None:
        agent.reset([0])
    rewards, heights, speeds = [], [], []
    for _ in range(decisions):
        if agent is None:
            action = np.zeros(env.action_space.shape, np.float32)
        else:
            action = agent.act({"image": np.ascontiguousarray(obs["image"])[None]}, explore=explore)[0]
        obs, reward, terminated, truncated, _ = env.step(action)
        rewards.append(float(reward))
        heights.append(float(physics.torso_height()))
        speeds.append(float(physics.horizontal_velocity()))
        if terminated or truncated:
            break
    return {"start": start, "policy": "zero" if agent is None else "agent", "seed": seed,
            "decisions": len(rewards), "return": round(float(sum(rewards)), 1),
            "held_decisions": held_decisions(heights),
            "standing_share": round(float(np.mean(np.asarray(heights) >= walker._STAND_HEIGHT)), 3),
            "median_height": round(float(np.median(heights)), 2), "mean_speed": round(float(np.mean(speeds)), 2)}


def summary(lines: list[dict]) -> dict:
    """Means over one start's and policy's episodes."""
    return {"start": lines[0]["start"], "policy": lines[0]["policy"], "episodes": len(lines),
            **{f"mean_{key}": round(float(np.mean([line[key] for line in lines])), 3)
               for key in ("return", "held_decisions", "standing_share", "median_height")}}


def parse_starts(text: str) -> list[str]:
    """The comma list of starts, each one of STARTS."""
    starts = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in starts if s not in STARTS]
    if bad or not starts:
        raise argparse.ArgumentTypeError(f"--starts takes a comma list of {', '.join(STARTS)}; got {text!r}")
    return starts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--checkpoint", type=at_least(0), default=None,
                        help="a kept model's updates (default: the latest checkpoint)")
    parser.add_argument("--episodes", type=at_least(1), default=3, help="episodes per start")
    parser.add_argument("--decisions", type=at_least(1), default=150, help="decisions per episode at most")
    parser.add_argument("--seed", type=int, default=0, help="the first episode's start seed")
    parser.add_argument("--starts", type=parse_starts, default=list(STARTS))
    parser.add_argument("--baseline", action="store_true", help="also run a walker that applies no torque")
    parser.add_argument("--noise", type=float, default=None,
                        help="act with exploration noise of this scale, as collection does (default: none, as tests)")
    parser.add_argument("--correlation", type=float, default=0.0,
                        help="the exploration noise's correlation over decisions, in [0, 1); with --noise")
    args = parser.parse_args(argv)
    if args.noise is not None and args.noise <= 0:
        parser.error(f"--noise must be above 0; got {args.noise}")
    if not 0.0 <= args.correlation < 1.0:
        parser.error(f"--correlation must be in [0, 1); got {args.correlation}")
    if args.correlation and args.noise is None:
        parser.error("--correlation needs --noise")
    cfg, model, updates = load_trained(args.run_dir, "cpu", args.checkpoint)
    if not cfg.env.task.startswith("walker"):
        parser.error(f"{args.run_dir} trained on {cfg.env.task!r}; this reads a walker task's run")
    env = make_env(cfg.env, seed=args.seed)
    agent = build_mpc_agent(cfg, model, OneEnvBatch(int(env.action_space.shape[0])), seed=args.seed,
                            noise=args.noise, correlation=args.correlation)
    explore = args.noise is not None
    scheme = {"noise": args.noise, "correlation": args.correlation} if explore else {}
    for start in args.starts:
        for policy in [agent, None] if args.baseline else [agent]:
            lines = []
            for episode in range(args.episodes):
                line = {"run": str(args.run_dir), "updates": updates, **(scheme if policy is agent else {}),
                        **run_episode(env, policy, start, args.seed + episode, args.decisions,
                                      explore and policy is agent)}
                lines.append(line)
                print(json.dumps(line), flush=True)
            print(json.dumps({"run": str(args.run_dir), "updates": updates, **(scheme if policy is agent else {}),
                              **summary(lines)}), flush=True)
    env.close()


if __name__ == "__main__":
    main()
