"""What a walker-walk run's model makes of a walker that stands and walks: its reward head, its dynamics and
its ranking of plans, each on the very states the run's agent never reaches.

`walker_standing_start.py` showed that a learned agent lets a standing walker down, where the same search on
the true simulator keeps it up and walks (`perfect_model_mpc.py --standing`). This asks the model why. The
perfect-model MPC agent drives the walker from its rest pose for `--decisions` decisions (an episode that
stands and walks, rendered as the run's env renders it), and the run's model is then asked:

- `posterior`: shown every frame, the reward its head predicts at each decision against the true reward.
  Low here: the encoder or reward head does not value standing even when it sees it.
- `walking`: from its belief at a decision, the predicted return of the next `horizon` actions the walking
  agent really took, against their true return. Low here with a good posterior: the dynamics do not
  foresee the walker staying up.
- `agent`: the plan the run's own planner picks from the same belief, predicted and true (run on the
  simulator from the same physics state). A plan it predicts above the walking one that truly earns less
  is the ranking that makes the agent crouch.
- `corr`: over `--candidates` random plans from that state (CEM's first draw), the correlation of predicted
  and true returns.
- `own_tests` (summary): the reward head on the run's own test episodes of the checkpoint's phase, filtered
  as `posterior` is: how well it knows the states its agent does reach.

One JSON line per scored decision (every `--every`th), then a summary line. The walking episode costs
about 6 s of search per decision at one thread; `--episode-file` keeps it (npz) so other checkpoints and
runs are scored on the same episode.

    python benchmarks/walker_valuation.py RUN_DIR [--checkpoint U] [--decisions 40] [--every 4]
        [--candidates 100] [--samples 4] [--seed 0] [--episode-file walking.npz]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from model_drift import horizon_rewards, imagined_returns
from perfect_model_mpc import PhysicsSimulator, physics_objective
from plan_ranking import OneEnvBatch, _correlation
from planetrl.cli.common import at_least
from planetrl.data.episodes import list_episodes, try_read_episode
from planetrl.envs.make import action_repeat, make_env
from planetrl.models.world_model import autocast
from planetrl.planning.cem import CEMSettings, plan
from planetrl.training.planet import build_mpc_agent, load_trained
from planetrl.training.runfiles import read_tests
from walker_standing_start import stand_up
from world_model_check import episode_tensors, observed


def walking_episode(env, repeat: int, decisions: int, settings: CEMSettings, seed: int) -> dict[str, np.ndarray]:
    """The perfect-model MPC agent from the walker's rest pose, stored as an episode (action and reward at
    index t lead to image t, index 0 is the start) with the physics state and torso height of every index."""
    env.reset(seed=seed)
    inner = env.unwrapped
    physics = inner._env.physics
    stand_up(physics)
    action_size = int(env.action_space.shape[0])
    objective = physics_objective("walker", "walk", repeat, physics.get_state())
    generator = torch.Generator().manual_seed(seed)
    images, actions, rewards = [inner.render()], [np.zeros(action_size, np.float32)], [0.0]
    snapshots, heights = [physics.get_state()], [float(physics.torso_height())]
    for _ in range(decisions):
        objective.state = snapshots[-1]
        action = plan(objective, torch.zeros(1, 1), action_size, settings, [generator]).first_action()[0]
        obs, reward, terminated, truncated, _ = env.step(action.numpy().astype(np.float32))
        images.append(np.ascontiguousarray(obs["image"]))
        actions.append(action.numpy().astype(np.float32))
        rewards.append(float(reward))
        snapshots.append(physics.get_state())
        heights.append(float(physics.torso_height()))
        if terminated or truncated:
            break
    steps = len(images)
    return {"image": np.stack(images), "action": np.stack(actions), "reward": np.asarray(rewards, np.float32),
            "is_first": np.arange(steps) == 0, "is_terminal": np.zeros(steps, bool),
            "physics": np.stack(snapshots), "height": np.asarray(heights, np.float32)}


def load_or_drive(path: Path | None, env, repeat: int, decisions: int, settings: CEMSettings,
                  seed: int) -> dict[str, np.ndarray]:
    """The walking episode from `path` where it holds one of at least `decisions`, else driven (and saved)."""
    if path is not None and path.exists():
        with np.load(path) as stored:
            episode = {key: stored[key] for key in stored.files}
        kept = {"seed": int(episode.pop("seed", -1)), "repeat": int(episode.pop("repeat", -1)),
                "image": episode["image"].shape[1:]}
        wanted = {"seed": seed, "repeat": repeat, "image": env.observation_space["image"].shape}
        if kept != wanted:
            raise SystemExit(f"{path} holds a walking episode of {kept}, not of this run and --seed: {wanted}")
        if len(episode["action"]) - 1 >= decisions:
            return {key: value[:decisions + 1] for key, value in episode.items()}
    episode = walking_episode(env, repeat, decisions, settings, seed)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_suffix(".part"), "wb") as out:
            np.savez(out, **episode, seed=seed, repeat=repeat)
        path.with_suffix(".part").replace(path)
    return episode


def phase_episodes(run_dir: Path, updates: int) -> list[dict[str, np.ndarray]]:
    """The stored test episodes of the test phase at `updates`, found by their returns in tests.jsonl."""
    returns = [r for phase in read_tests(run_dir) if phase["updates"] == updates for r in phase["returns"]]
    found = []
    for path in list_episodes(Path(run_dir) / "test_episodes"):
        episode = try_read_episode(path)
        if episode is not None and np.isclose(episode["reward"].sum(), returns, atol=1e-2).any():
            found.append(episode)
    return found


def posterior_rewards(model, episodes: list[dict[str, np.ndarray]], bits: int, seed: int) -> dict:
    """The reward head on the filtered belief of each episode's decisions, against the true rewards."""
    torch.manual_seed(seed)
    predicted, true = [], []
    for episode in episodes:
        predicted.append(observed(model, episode_tensors(episode, bits))[2].numpy()[1:])
        true.append(np.asarray(episode["reward"][1:], np.float64))
    predicted, true = np.concatenate(predicted), np.concatenate(true)
    return {"predicted": round(float(predicted.mean()), 3), "true": round(float(true.mean()), 3),
            "corr": _correlation(predicted, true)}


def score(cfg, model, episode: dict[str, np.ndarray], every: int, candidates: int, samples: int, seed: int
          ) -> tuple[list[dict], dict]:
    """The per-decision lines and the summary for one model on one walking episode."""
    from dm_control.suite import walker

    repeat, horizon = action_repeat(cfg.env), cfg.planner.horizon
    data = episode_tensors(episode, cfg.data.image_bits)
    torch.manual_seed(seed)
    posterior = observed(model, data)[0]
    predicted, true, starts = horizon_rewards(model, data, posterior, horizon, samples)
    sim = PhysicsSimulator(repeat, "walker", "walk")
    agent = build_mpc_agent(cfg, model, OneEnvBatch(sim.action_size), seed=seed)
    rng = np.random.default_rng(seed)
    lines = []
    for index in range(0, len(starts), every):
        t = int(starts[index])
        belief = {key: value[:, t] for key, value in posterior.items()}
        generator = torch.Generator().manual_seed(seed + t)
        with autocast(agent.device, agent.precision):
            planned = plan(agent.objective, belief, sim.action_size, agent.settings, [generator]).mean
        planned = planned.float().numpy().astype(np.float64)
        draws = np.clip(rng.normal(size=(candidates, horizon, sim.action_size)), -1, 1)
        taken = episode["action"][None, t + 1:t + 1 + horizon].astype(np.float64)
        plans = np.concatenate([draws, planned, taken])
        model_returns = imagined_returns(model, {key: value.expand(len(plans) - 1, *value.shape[1:])
                                                 for key, value in belief.items()},
                                         torch.as_tensor(plans[:-1], dtype=torch.float32), samples)
        true_returns = sim.returns(episode["physics"][t], plans).sum(-1)
        if not np.isclose(true_returns[-1], true[index].sum(), atol=1e-3):
            raise SystemExit(f"the simulator set to the stored physics state of decision {t} does not reproduce "
                             f"the walking episode's rewards ({true_returns[-1]:.4f} against {true[index].sum():.4f})")
        lines.append({
            "decision": t, "height": round(float(episode["height"][t]), 2),
            "walking": {"predicted": round(float(predicted[index].sum()), 2),
                        "true": round(float(true[index].sum()), 2)},
            "agent": {"predicted": round(float(model_returns[-1]), 2), "true": round(float(true_returns[-2]), 2)},
            "corr": _correlation(model_returns[:candidates], true_returns[:candidates]),
            "random_mean": {"predicted": round(float(model_returns[:candidates].mean()), 2),
                            "true": round(float(true_returns[:candidates].mean()), 2)},
        })
    rewards = episode["reward"][1:]

    def mean(key: str, side: str) -> float:
        return round(float(np.mean([line[key][side] for line in lines])), 2)

    summary = {
        "decisions": len(rewards), "walking_return": round(float(rewards.sum()), 2),
        "standing_share": round(float(np.mean(episode["height"][1:] >= walker._STAND_HEIGHT)), 3),
        "posterior": posterior_rewards(model, [episode], cfg.data.image_bits, seed),
        "walking": {"predicted": mean("walking", "predicted"), "true": mean("walking", "true")},
        "agent": {"predicted": mean("agent", "predicted"), "true": mean("agent", "true")},
        "agent_below_walking_predicted": int(sum(line["agent"]["predicted"] < line["walking"]["predicted"]
                                                 for line in lines)),
        "scored": len(lines),
        "mean_corr": round(float(np.mean([line["corr"] for line in lines if line["corr"] is not None])), 3)
        if any(line["corr"] is not None for line in lines) else None,
    }
    return lines, summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--checkpoint", type=at_least(0), default=None,
                        help="a kept model's updates (default: the latest checkpoint)")
    parser.add_argument("--decisions", type=at_least(1), default=40, help="decisions of the walking episode")
    parser.add_argument("--every", type=at_least(1), default=4, help="score every n-th decision")
    parser.add_argument("--candidates", type=at_least(2), default=100, help="random plans per scored decision")
    parser.add_argument("--samples", type=at_least(1), default=4, help="prior draws per predicted return")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--episode-file", type=Path, default=None,
                        help="npz to keep the walking episode in (read where it holds enough decisions)")
    args = parser.parse_args(argv)
    cfg, model, updates = load_trained(args.run_dir, "cpu", args.checkpoint)
    if not cfg.env.task.startswith("walker-walk"):
        parser.error(f"{args.run_dir} trained on {cfg.env.task!r}; this scores a walker-walk run's model")
    if args.decisions <= cfg.planner.horizon:
        parser.error(f"--decisions {args.decisions} leaves no whole horizon of {cfg.planner.horizon} to score")
    env = make_env(cfg.env, seed=args.seed)
    repeat = action_repeat(cfg.env)
    settings = CEMSettings(horizon=cfg.planner.horizon, iterations=cfg.planner.iterations,
                           candidates=cfg.planner.candidates, elites=cfg.planner.elites)
    episode = load_or_drive(args.episode_file, env, repeat, args.decisions, settings, args.seed)
    env.close()
    lines, summary = score(cfg, model, episode, args.every, args.candidates, args.samples, args.seed)
    own = phase_episodes(args.run_dir, updates)
    if own:  # the same head on the run's own test episodes of that phase: what it knows
        summary["own_tests"] = {"episodes": len(own), **posterior_rewards(model, own, cfg.data.image_bits, args.seed)}
    for line in lines:
        print(json.dumps({"run": str(args.run_dir), "updates": updates, **line}), flush=True)
    print(json.dumps({"run": str(args.run_dir), "updates": updates, "summary": summary}), flush=True)


if __name__ == "__main__":
    main()
