"""The PPO recipe: collect a batch of episodes from N envs, update, evaluate now and then; resumable."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from planetrl import config as config_lib
from planetrl.agents.ppo import PPOAgent, PPOSettings
from planetrl.envs.batch import BatchEnv
from planetrl.envs.make import action_repeat, decisions_per_episode, make_batch_env
from planetrl.envs.registry import import_task_modules
from planetrl.metrics import MetricsLogger
from planetrl.seeds import derive
from planetrl.training.driver import Driver
from planetrl.training.progress import duration
from planetrl.training.rundir import Checkpoint, latest_checkpoint, load_latest
from planetrl.training.updater import resolve_device

log = logging.getLogger(__name__)


def ppo_settings(cfg: config_lib.PPORunConfig) -> PPOSettings:
    """The algorithm's settings from the `ppo` config section."""
    p = cfg.ppo
    names = [f.name for f in dataclasses.fields(PPOSettings)]
    return PPOSettings(**{name: getattr(p, name) for name in names})


def build_agent(cfg: config_lib.PPORunConfig, env: BatchEnv) -> PPOAgent:
    if "state" not in env.observation_space.spaces:
        raise ValueError(f"PPO learns from state, but task '{cfg.env.task}' offers only images")
    obs_size = int(np.prod(env.observation_space["state"].shape))
    return PPOAgent(obs_size, env.action_space, len(env), ppo_settings(cfg), seed=cfg.run.seed,
                    device=resolve_device(cfg.run.device), max_length=decisions_per_episode(cfg.env))


LINE_EVERY_S = 60.0
"""Without a bar, a line after the first update that ends this long after the last line (and at each evaluation)."""


def progress_line(name: str, env_steps: int, total_steps: int, train_return: float, last: dict[str, float],
                  steps_now: int, seconds: float) -> str:
    """`run-00 step 18000/1000000 | train return -1265.2 | eval return - | 168 steps/s | 1.8 min | ETA 1h37m`.

    The rate counts the steps of this session only, so a resumed run's ETA is not flattered by the steps before.
    """
    rate = steps_now / seconds if seconds > 0 else 0.0
    evaluated = f"{last['eval/return']:.1f} +- {last['eval/return_std']:.1f}" if last else "-"
    eta = duration((total_steps - env_steps) / rate if rate > 0 else float("inf"))
    return (f"{name} step {env_steps}/{total_steps} | train return {train_return:.1f} | eval return {evaluated} | "
            f"{rate:.0f} steps/s | {seconds / 60:.1f} min | ETA {eta}")


class PPORun:
    """One PPO run in one directory; `run()` starts or resumes it."""

    def __init__(self, run_dir: Path, cfg: config_lib.PPORunConfig, progress: bool = True,
                 fence: Callable[[], None] = lambda: None) -> None:
        """`fence()` raises when this worker no longer holds the run; it is called before every write."""
        import_task_modules(cfg.run.imports)
        self.fence = fence
        self.run_dir = Path(run_dir)
        self.cfg = cfg
        self.progress = progress
        self.checkpoint_path = latest_checkpoint(self.run_dir)

    def run(self) -> dict[str, float]:
        from tqdm import tqdm

        cfg, p = self.cfg, self.cfg.ppo
        env = make_batch_env(cfg.env, p.num_envs, seed=cfg.run.seed)
        repeat = action_repeat(cfg.env)
        agent = build_agent(cfg, env)
        updates = env_steps = 0
        state = Checkpoint(self.checkpoint_path, agent.device, parts={"agent": agent}, needs="agent")
        checkpoint = state.restore()
        if checkpoint is not None:
            updates, env_steps = int(checkpoint["updates"]), int(checkpoint["env_steps"])
            log.info("resumed %s at update %d (%d env steps)", self.run_dir, updates, env_steps)
        logger = MetricsLogger(self.run_dir, keep_through=env_steps if checkpoint is not None else -1,
                               wandb_project=cfg.run.wandb_project, config=config_lib.to_dict(cfg))
        bar = tqdm(total=p.total_steps, initial=min(env_steps, p.total_steps), desc=self.run_dir.name,
                   unit="step", unit_scale=True, disable=not self.progress, dynamic_ncols=True)
        start = last_line = time.time()
        first_steps = env_steps
        last: dict[str, float] = {}
        try:
            while env_steps < p.total_steps:
                results = Driver(env, agent, seed=derive(cfg.run.seed, "ppo-batch", updates)).run(p.update_every)
                steps = sum(r.length for r in results) * repeat
                metrics = agent.update()
                updates += 1
                env_steps += steps
                bar.update(steps)
                self.fence()
                logger.scalars(env_steps, {**{f"train/{k}": v for k, v in metrics.items()},
                                           "train/updates": updates, "train/wall_seconds": time.time() - start})
                shown = {"train_return": f"{metrics['return']:.1f}"}
                if last:
                    shown["eval_return"] = f"{last['eval/return']:.1f}"
                bar.set_postfix(shown)
                evaluate = updates % p.eval_every == 0 or env_steps >= p.total_steps
                if evaluate:
                    evaluated = Driver(env, agent, seed=derive(cfg.run.seed, "test", updates)).run(
                        p.eval_episodes, explore=False)  # the mean action; nothing is buffered
                    returns = np.array([r.score for r in evaluated])
                    last = {"eval/return": float(returns.mean()), "eval/return_std": float(returns.std())}
                    logger.scalars(env_steps, {**last, "eval/wall_seconds": time.time() - start})
                    bar.set_postfix({**shown, "eval_return": f"{returns.mean():.1f}"})
                if not self.progress and (evaluate or time.time() - last_line >= LINE_EVERY_S):
                    last_line = time.time()
                    print(progress_line(self.run_dir.name, env_steps, p.total_steps, metrics["return"], last,
                                        env_steps - first_steps, last_line - start), flush=True)
                self.fence()
                state.save(updates=updates, env_steps=env_steps, config=config_lib.to_dict(cfg))
        finally:
            bar.close()
            env.close()
            logger.close()
        return last


def load_trained_ppo(run_dir: Path, cfg: config_lib.PPORunConfig, env: BatchEnv) -> PPOAgent:
    """A PPO agent with the latest checkpoint of a run, for an env batch of any size."""
    checkpoint, _ = load_latest(latest_checkpoint(run_dir), torch.device("cpu"), needs="agent")
    if checkpoint is None:
        raise FileNotFoundError(f"{run_dir} has no checkpoint yet")
    agent = build_agent(cfg, env)
    agent.load_state_dict(checkpoint["agent"])
    return agent
