"""Whether standing in its data makes a walker-walk model value standing and its agent stand.

Every walker-walk record's agent scoots crouched, and `walker_valuation.py` finds its reward head rating a
walking walker at the crouch's value, having seen standing in about 1% of its decisions. If that is the
cause, a model that is shown standing should value it and its agent should stand; if it is shown standing
and still crouches, the cause lies elsewhere. Two steps test it on a finished run:

- `drive RUN OUT`: episodes of the perfect-model MPC agent (the run's CEM search scoring its candidates on
  the true simulator, as `perfect_model_mpc.py`) from the task's own random starts, rendered as the run
  renders and written in the replay's episode format to OUT, each `--copies` times so that they carry a
  chosen share of the sampled chunks (the replay samples chunk starts uniformly over all stored steps).
  Prints one JSON line per episode (return, share of decisions at standing height, seconds).
- `extend RUN OUT [--add DIR]`: a copy of the finished run at OUT whose schedule runs `--updates` more
  (its collection and test phases included), with DIR's episodes added to its training data when given,
  then trains it to the new end. Extended with and without the episodes, the same run gives a control and
  a treatment that differ only in the added data (same weights, replay and random streams at the start).

    python benchmarks/walker_demonstrations.py drive RUN OUT [--episodes 4] [--decisions 100] [--seed 100]
        [--copies 5]
    python benchmarks/walker_demonstrations.py extend RUN OUT [--updates 1000] [--add DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import numpy as np
import torch
import yaml

from perfect_model_mpc import physics_objective
from planetrl import config as config_lib
from planetrl.cli.common import at_least
from planetrl.data.episodes import list_episodes, write_episode
from planetrl.envs.make import action_repeat, make_env
from planetrl.planning.cem import CEMSettings, plan

LEFT_BEHIND = ("DONE", "FAIL", "PING", "claims.jsonl", "videos")  # a finished run's markers, and bulk not needed


def demonstration(env, repeat: int, decisions: int, settings: CEMSettings, seed: int) -> tuple[dict, dict]:
    """One perfect-model episode from the task's start `seed`, in the replay's format, and its summary."""
    from dm_control.suite import walker

    obs, _ = env.reset(seed=seed)
    physics = env.unwrapped._env.physics
    action_size = int(env.action_space.shape[0])
    objective = physics_objective("walker", "walk", repeat, physics.get_state())
    generator = torch.Generator().manual_seed(seed)
    steps = {"image": [obs["image"]], "state": [obs["state"]], "action": [np.zeros(action_size, np.float32)],
             "reward": [0.0]}
    heights, start = [], time.perf_counter()
    terminal = False
    for _ in range(decisions):
        objective.state = physics.get_state()
        action = plan(objective, torch.zeros(1, 1), action_size, settings, [generator]).first_action()[0]
        action = action.numpy().astype(np.float32)
        obs, reward, terminated, truncated, _ = env.step(action)
        for key, value in (("image", obs["image"]), ("state", obs["state"]), ("action", action),
                           ("reward", float(reward))):
            steps[key].append(value)
        heights.append(float(physics.torso_height()))
        terminal = bool(terminated)
        if terminated or truncated:
            break
    length = len(steps["reward"])
    episode = {"image": np.stack(steps["image"]).astype(np.uint8), "state": np.stack(steps["state"]),
               "action": np.stack(steps["action"]), "reward": np.asarray(steps["reward"], np.float32),
               "is_first": np.arange(length) == 0, "is_last": np.arange(length) == length - 1,
               "is_terminal": (np.arange(length) == length - 1) & terminal}
    summary = {"seed": seed, "decisions": length - 1, "return": round(float(episode["reward"].sum()), 2),
               "standing_share": round(float(np.mean(np.asarray(heights) >= walker._STAND_HEIGHT)), 3),
               "seconds": round(time.perf_counter() - start, 1)}
    return episode, summary


def drive(args: argparse.Namespace) -> None:
    cfg = config_lib.load(args.run / "config.yaml")
    if not cfg.env.task.startswith("walker"):
        raise SystemExit(f"{args.run} trained on {cfg.env.task!r}; this drives a walker task's episodes")
    p = cfg.planner
    settings = CEMSettings(horizon=p.horizon, iterations=p.iterations, candidates=p.candidates, elites=p.elites,
                           min_std=p.min_std)
    env = make_env(cfg.env, seed=args.seed)
    for index in range(args.episodes):
        episode, summary = demonstration(env, action_repeat(cfg.env), args.decisions, settings, args.seed + index)
        for _ in range(args.copies):
            write_episode(args.out, episode)
        print(json.dumps({"run": str(args.run), "copies": args.copies, **summary}), flush=True)
    env.close()


def extend(args: argparse.Namespace) -> None:
    from planetrl.cli import main

    source = args.run
    if not (source / "config.yaml").exists() or not (source / "checkpoints" / "latest.pt").exists():
        raise SystemExit(f"{source} is not a run with a checkpoint (config.yaml, checkpoints/latest.pt)")
    target = args.out / source.name
    if target.exists():
        raise SystemExit(f"{target} exists; extend into a new directory (a run there resumes with "
                         f"`planetrl train --logdir {args.out}`)")
    added = list_episodes(args.add) if args.add is not None else []
    if args.add is not None and not added:
        raise SystemExit(f"{args.add} holds no episode files")
    shutil.copytree(source, target, ignore=lambda _, names: [n for n in names if n in LEFT_BEHIND])
    config = yaml.safe_load((target / "config.yaml").read_text())
    before = int(config["train"]["total_updates"])
    config["train"]["total_updates"] = before + args.updates
    (target / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    for path in added:
        shutil.copy2(path, target / "train_episodes" / path.name)
    # The schedule counts the files beyond the seed episodes as collected; the added ones join the seed
    # count, so both arms collect the same episodes.
    marker = target / "seed_episodes.json"
    marker.write_text(json.dumps({"train": json.loads(marker.read_text())["train"] + len(added)}) + "\n")
    print(json.dumps({"run": str(source), "out": str(target), "total_updates": [before, before + args.updates],
                      "added_episodes": len(added)}), flush=True)
    if main(["train", "--logdir", str(args.out), "--no-progress"]) != 0:
        raise SystemExit(f"training {target} failed")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("drive", "extend"))
    parser.add_argument("run", type=Path, help="a finished walker-walk run directory (run-NN)")
    parser.add_argument("out", type=Path, help="drive: the episodes' directory; extend: the new run's logdir")
    parser.add_argument("--episodes", type=at_least(1), default=4, help="drive: perfect-model episodes")
    parser.add_argument("--decisions", type=at_least(1), default=100, help="drive: decisions per episode at most")
    parser.add_argument("--seed", type=int, default=100,
                        help="drive: the first episode's start seed (away from the run's own, 0 and up)")
    parser.add_argument("--copies", type=at_least(1), default=5, help="drive: files written per episode")
    parser.add_argument("--updates", type=at_least(1), default=1000, help="extend: updates past the run's end")
    parser.add_argument("--add", type=Path, default=None, help="extend: a directory of episodes to add")
    args = parser.parse_args(argv)
    drive(args) if args.command == "drive" else extend(args)


if __name__ == "__main__":
    main()
