"""Whether a world model ranks plans rightly from a state its agent was in: the model's predicted return of
each plan against the simulator's, from the very same state. For cartpole-swingup and finger-spin.

Both tasks' state is fully known from the stored observation (cartpole: cart position, pole cos and sin,
both velocities; finger: the two finger joints, the tip's position relative to the spinner, which gives the
hinge angle, and the three velocities), so the simulator can be set to any decision of a stored episode and
run each candidate plan from there. For each chosen decision of one test episode this draws `--candidates`
plans as CEM's first iteration does (Normal(0, 1) per action, clipped), adds the plan the run's own planner
finds there with the kept model and the actions the agent really took next, and prints one JSON line with:

- `corr`: the correlation of predicted and true horizon returns over the random candidates (ranking);
- `best_true`: the simulator's best return among them, and `model_pick_true`: the true return of the one
  the model rates highest;
- `planner`: the planner's plan, predicted and true; `taken`: the actions the agent took, predicted and true;
- what the state is: cartpole's `x`, the cart position, and `out_of_view` (|x| > 1.6 m, beyond the
  camera's view); finger's `hinge_velocity` and `paying` (turning at -15 rad/s or faster);
- with `--true-horizons 12,24`, `true_cem`: the same CEM search run on the simulator itself (a perfect
  model) at each horizon: its plan's true return over the model's horizon and over its own, and its first
  action, which tells whether even a perfect model's plan of that horizon leaves the state.

The simulator is checked first: set to each stored state, the action taken next must reproduce the stored
reward of that decision (the script stops where more than 1% of the decisions differ). Over a whole
horizon a contact-rich task such as finger drifts from the stored episode, so each line also gives
`taken.stored`, the stored return of the actions taken, beside `taken.true`, the simulator's.

    python benchmarks/plan_ranking.py RUN_DIR --checkpoint U --episode I --decisions 20,60,80
        [--candidates 300] [--samples 4] [--true-horizons 12,24]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from cart_at_rail import OUT_OF_VIEW
from model_drift import imagined_returns
from planetrl.cli.common import at_least
from planetrl.data.episodes import list_episodes, try_read_episode
from planetrl.envs.make import action_repeat
from planetrl.models.world_model import autocast
from planetrl.planning.cem import plan
from planetrl.training.planet import build_mpc_agent, load_trained
from spinner_speed import PAYING_SPEED
from world_model_check import episode_tensors


class Simulator:
    """A dm_control task set to a stored state and stepped with a plan at the run's action repeat."""

    domain, task = "", ""

    def __init__(self, repeat: int, domain: str = "", task: str = "") -> None:
        from dm_control import suite

        self.domain, self.task = domain or self.domain, task or self.task
        self.env = suite.load(self.domain, self.task, task_kwargs={"random": 0})
        self.env.reset()
        self.repeat = repeat
        self.substeps = round(self.env.control_timestep() / self.env.physics.timestep())
        self.action_size = int(self.env.action_spec().shape[0])

    def set_state(self, state: np.ndarray) -> None:
        raise NotImplementedError

    def describe(self, state: np.ndarray) -> dict:
        """What a reader needs to know of the state a line scores plans from."""
        raise NotImplementedError

    def step(self, action: np.ndarray) -> float:
        """One control step as `Environment.step` takes it, without its time limit, which would reset the
        simulator to a random state every 1000 steps."""
        task, physics = self.env.task, self.env.physics
        task.before_step(action, physics)
        physics.step(self.substeps)
        task.after_step(physics)
        return float(task.get_reward(physics))

    def returns(self, state: np.ndarray, plans: np.ndarray) -> np.ndarray:
        """Per-decision rewards (N, H) of (N, H, A) plans, each run from `state`."""
        out = np.zeros(plans.shape[:2])
        for n, actions in enumerate(plans):
            self.set_state(state)
            for h, action in enumerate(actions):
                for _ in range(self.repeat):
                    out[n, h] += self.step(action)
        return out


class CartpoleSimulator(Simulator):
    """cartpole-swingup: the state is (x, cos, sin, x velocity, angular velocity)."""

    domain, task = "cartpole", "swingup"

    def set_state(self, state: np.ndarray) -> None:
        physics = self.env.physics
        with physics.reset_context():
            physics.named.data.qpos["slider"] = state[0]
            physics.named.data.qpos["hinge_1"] = np.arctan2(state[2], state[1])
            physics.named.data.qvel["slider"] = state[3]
            physics.named.data.qvel["hinge_1"] = state[4]

    def describe(self, state: np.ndarray) -> dict:
        return {"x": round(float(state[0]), 2), "out_of_view": bool(abs(state[0]) > OUT_OF_VIEW)}


class FingerSimulator(Simulator):
    """finger-spin: the state is (proximal, distal, tip x, tip z, their three velocities, two touches); the
    tip's position relative to the spinner's centre is at angle -hinge from straight up."""

    domain, task = "finger", "spin"

    def set_state(self, state: np.ndarray) -> None:
        physics = self.env.physics
        with physics.reset_context():
            physics.named.data.qpos["proximal"] = state[0]
            physics.named.data.qpos["distal"] = state[1]
            physics.named.data.qpos["hinge"] = -np.arctan2(state[2], state[3])
            physics.named.data.qvel[["proximal", "distal", "hinge"]] = state[4:7]

    def describe(self, state: np.ndarray) -> dict:
        return {"hinge_velocity": round(float(state[6]), 2), "paying": bool(state[6] <= -PAYING_SPEED)}


SIMULATORS: dict[str, type[Simulator]] = {"cartpole-swingup": CartpoleSimulator, "finger-spin": FingerSimulator}


class SimulatorObjective:
    """CEM's view of the simulator: every candidate run from the one state the planner was given."""

    noise_size = 0

    def __init__(self, sim: Simulator, state: np.ndarray) -> None:
        self.sim, self.state = sim, state

    def imagine(self, state: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return torch.as_tensor(self.sim.returns(self.state, actions.double().numpy()), dtype=torch.float32)


class OneEnvBatch:
    """One env of the task's actions (in [-1, 1]), as `build_mpc_agent` reads an env batch."""

    def __init__(self, action_size: int) -> None:
        self.action_space = gym.spaces.Box(-1.0, 1.0, (action_size,), np.float32)

    def __len__(self) -> int:
        return 1


def _rounded(action: np.ndarray) -> float | list[float]:
    """An action for the JSON line: a number where the task has one action, as cartpole's records have it."""
    return round(float(action[0]), 2) if len(action) == 1 else np.round(action, 2).tolist()


def _correlation(predicted: np.ndarray, true: np.ndarray) -> float | None:
    """Their correlation, or None where every candidate truly returns the same (no ranking to get right)."""
    if np.ptp(true) == 0 or np.ptp(predicted) == 0:
        return None
    return round(float(np.corrcoef(predicted, true)[0, 1]), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--checkpoint", type=at_least(0), required=True, help="the kept model's updates")
    parser.add_argument("--episode", type=at_least(0), required=True, help="index into the run's test episodes")
    parser.add_argument("--decisions", required=True, help="comma-separated decisions of that episode")
    parser.add_argument("--candidates", type=at_least(1), default=300)
    parser.add_argument("--samples", type=at_least(1), default=4, help="prior draws per predicted return")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--true-horizons", default="", help="comma-separated horizons to plan on the simulator")
    args = parser.parse_args()
    cfg, model, updates = load_trained(args.run_dir, "cpu", args.checkpoint)
    if cfg.env.task not in SIMULATORS:
        raise SystemExit(f"{args.run_dir} trained {cfg.env.task!r}; this script sets the simulator of "
                         f"{', '.join(SIMULATORS)}")
    episode = try_read_episode(list_episodes(args.run_dir / "test_episodes")[args.episode])
    if episode is None:
        raise SystemExit(f"test episode {args.episode} of {args.run_dir} is unreadable")
    states, rewards = np.asarray(episode["state"], np.float64), np.asarray(episode["reward"])
    actions = np.asarray(episode["action"], np.float64)
    horizon = cfg.planner.horizon
    sim = SIMULATORS[cfg.env.task](action_repeat(cfg.env))
    replay = np.array([sim.returns(states[t], actions[None, t + 1:t + 2])[0, 0] for t in range(len(actions) - 1)])
    wrong = np.flatnonzero(~np.isclose(replay, rewards[1:], atol=1e-3))
    if len(wrong) > 0.01 * len(replay):
        raise SystemExit(f"the simulator does not reproduce the stored rewards: {len(wrong)} of {len(replay)} "
                         f"decisions differ, the first {wrong[0] + 1} ({replay[wrong[0]]:.4f}, stored "
                         f"{rewards[wrong[0] + 1]:.4f})")
    data = episode_tensors(episode, cfg.data.image_bits)
    torch.manual_seed(args.seed)
    posterior, _ = model.observe(data["image"], data["action"], data["is_first"])
    # the run's planner: its settings and objective
    agent = build_mpc_agent(cfg, model, OneEnvBatch(sim.action_size), seed=args.seed)
    settings = agent.settings
    rng = np.random.default_rng(args.seed)
    for t in (int(d) for d in args.decisions.split(",")):
        if t + horizon >= len(actions):
            raise SystemExit(f"decision {t} leaves no whole horizon of {horizon} decisions in an episode of "
                             f"{len(actions) - 1}")
        start = {key: value[:, t] for key, value in posterior.items()}
        candidates = np.clip(rng.normal(size=(args.candidates, horizon, sim.action_size)), -1, 1)
        generator = torch.Generator().manual_seed(args.seed + t)
        with autocast(agent.device, agent.precision):
            planned = plan(agent.objective, start, sim.action_size, settings, [generator]).mean
        planned = planned.float().numpy().astype(np.float64)
        taken = actions[None, t + 1:t + 1 + horizon]
        plans = np.concatenate([candidates, planned, taken])
        predicted = imagined_returns(model, {key: value.expand(len(plans), *value.shape[1:]) for key, value in
                                             start.items()}, torch.as_tensor(plans, dtype=torch.float32), args.samples)
        true = sim.returns(states[t], plans).sum(-1)
        n = args.candidates
        true_cem = {}
        for length in (int(h) for h in args.true_horizons.split(",") if h):
            search = dataclasses.replace(settings, horizon=length)
            best = plan(SimulatorObjective(sim, states[t]), torch.zeros(1, 1), sim.action_size, search,
                        [torch.Generator().manual_seed(args.seed + t)]).mean.numpy().astype(np.float64)
            earned = sim.returns(states[t], best)[0]
            true_cem[str(length)] = {"true": round(float(earned[:horizon].sum()), 2),
                                     "true_own_horizon": round(float(earned.sum()), 2),
                                     "first_action": _rounded(best[0, 0])}
        print(json.dumps({
            "run": str(args.run_dir), "model": updates, "episode": args.episode, "decision": t,
            **sim.describe(states[t]),
            "corr": _correlation(predicted[:n], true[:n]),
            "best_true": round(float(true[:n].max()), 2),
            "model_pick_true": round(float(true[:n][np.argmax(predicted[:n])]), 2),
            "planner": {"predicted": round(float(predicted[n]), 2), "true": round(float(true[n]), 2),
                        "first_action": _rounded(planned[0, 0])},
            "taken": {"predicted": round(float(predicted[n + 1]), 2), "true": round(float(true[n + 1]), 2),
                      "stored": round(float(rewards[t + 1:t + 1 + horizon].sum()), 2)},
            **({"true_cem": true_cem} if true_cem else {}),
        }), flush=True)


if __name__ == "__main__":
    main()
