"""The planner's ceiling on a paper task: the MPC agent with the simulator itself as its model.

A learned agent that falls short of a goal is short in its model, its planner or its schedule. This removes
the model: at every decision the CEM search (the `cpu` preset's settings unless overridden) scores its
candidates by running each from a copy of the true physics state, exactly, and the agent executes the
first action of the plan, as `planetrl`'s MPC agent does. The episode's return is what the planner can
earn with a perfect model; a learned agent cannot be expected above it, and a run far below it is short
in its model or its schedule, not in the search.

Prints one JSON line per episode (return, rewarded decisions, seconds; on walker-walk also the share of
decisions with the torso at standing height and the mean forward speed, which its reward pays for, and the
decisions before the torso first drops under 1.0 m) and a last summary line. With `--standing` a walker
starts from its rest pose, upright and still, as `walker_standing_start.py` gives it to a learned agent.

    python benchmarks/perfect_model_mpc.py finger-spin [--episodes 3] [--decisions 250] [--seed 0]
        [--candidates 300 --elites 30 --iterations 8 --horizon 12] [--standing]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from plan_ranking import Simulator, SimulatorObjective
from planetrl.cli.common import at_least
from planetrl.envs.registry import PAPER_TASKS
from planetrl.planning.cem import CEMSettings, plan
from planetrl.presets import PAPER, PRESETS
from walker_standing_start import held_decisions, stand_up


class PhysicsSimulator(Simulator):
    """A dm_control task set to a full physics state (`physics.get_state()`), exactly, not from an observation."""

    def set_state(self, state: np.ndarray) -> None:
        physics = self.env.physics
        with physics.reset_context():
            physics.set_state(state)


def physics_objective(domain: str, task: str, repeat: int, snapshot: np.ndarray) -> SimulatorObjective:
    """CEM's view of the true simulator: each candidate runs from the saved physics state `snapshot`."""
    return SimulatorObjective(PhysicsSimulator(repeat, domain, task), snapshot)


def walker_pose(physics) -> tuple[bool, float]:
    """Whether a walker's torso is at the height its reward counts as standing (1.2 m), and its forward speed."""
    from dm_control.suite import walker

    return bool(physics.torso_height() >= walker._STAND_HEIGHT), float(physics.horizontal_velocity())


def run_episode(task: str, seed: int, decisions: int, settings: CEMSettings, standing: bool = False) -> dict:
    """One episode of the perfect-model MPC agent from the task's own random start (`seed`), or with
    `standing` from a walker's rest pose."""
    from dm_control import suite

    domain, name, repeat = PAPER_TASKS[task]
    if standing and domain != "walker":
        raise ValueError(f"a standing start is a walker's; {task!r} is not a walker task")
    world = suite.load(domain, name, task_kwargs={"random": seed})
    world.reset()
    if standing:
        stand_up(world.physics)
    objective = physics_objective(domain, name, repeat, world.physics.get_state())
    action_size = int(world.action_spec().shape[0])
    generator = torch.Generator().manual_seed(seed)
    rewards, poses, heights, start = [], [], [], time.perf_counter()
    for _ in range(decisions):
        objective.state = world.physics.get_state()
        action = plan(objective, torch.zeros(1, 1), action_size, settings, [generator]).first_action()[0]
        earned = 0.0
        for _ in range(repeat):
            step = world.step(action.numpy().astype(np.float64))
            earned += float(step.reward or 0.0)
        rewards.append(earned)
        if domain == "walker":
            poses.append(walker_pose(world.physics))
            heights.append(float(world.physics.torso_height()))
        if step.last():
            break
    line = {"task": task, "seed": seed, **({"start": "standing"} if standing else {}), "decisions": len(rewards),
            "return": round(float(sum(rewards)), 2),
            "rewarded_decisions": int(np.count_nonzero(rewards)), "seconds": round(time.perf_counter() - start, 1)}
    if poses:
        line["standing_share"] = round(float(np.mean([tall for tall, _ in poses])), 3)
        line["mean_speed"] = round(float(np.mean([speed for _, speed in poses])), 3)
        line["held_decisions"] = held_decisions(heights)
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", choices=sorted(PAPER_TASKS))
    parser.add_argument("--episodes", type=at_least(1), default=3)
    parser.add_argument("--decisions", type=at_least(0), default=0,
                        help="decisions per episode (0 = the whole episode)")
    parser.add_argument("--seed", type=int, default=0, help="the first episode's start seed")
    cpu = {**PAPER, **PRESETS["cpu"]}
    for key in ("candidates", "elites", "iterations", "horizon"):
        parser.add_argument(f"--{key}", type=at_least(1), default=cpu[f"planner.{key}"])
    parser.add_argument("--standing", action="store_true", help="start a walker from its rest pose")
    args = parser.parse_args()
    if args.standing and PAPER_TASKS[args.task][0] != "walker":
        parser.error(f"--standing starts a walker upright; {args.task} is not a walker task")
    settings = CEMSettings(horizon=args.horizon, iterations=args.iterations, candidates=args.candidates,
                           elites=args.elites)
    repeat = PAPER_TASKS[args.task][2]
    decisions = args.decisions or 1000 // repeat
    returns = []
    for episode in range(args.episodes):
        line = run_episode(args.task, args.seed + episode, decisions, settings, args.standing)
        returns.append(line["return"])
        print(json.dumps(line), flush=True)
    print(json.dumps({"task": args.task, "settings": vars(args), "mean_return": round(float(np.mean(returns)), 2),
                      "std_return": round(float(np.std(returns)), 2)}), flush=True)


if __name__ == "__main__":
    main()
