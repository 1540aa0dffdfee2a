"""Named override blocks: the presets (`--preset NAME`) and the PPO configs (`ppo train --config NAME`).

Plain dicts of dotted keys, validated when applied (config.build); docs/PAPER.md gives their sources.
"""

from __future__ import annotations

from typing import Any

PAPER = {
    "env.image_size": 64, "env.fast_render": False, "env.action_repeat": 0, "env.episode_steps": 1000,
    "data.batch_size": 50, "data.chunk_length": 50, "data.image_bits": 5,
    "model.variant": "rssm", "model.belief_size": 200, "model.state_size": 30, "model.hidden_size": 200,
    "model.min_std": 0.1, "model.depth": 32, "model.reward_layers": 2, "model.reward_units": 200,
    "model.init": "tf", "model.continuation": False, "planner.discount": 1.0,
    "loss.free_nats": 3.0, "loss.kl_scale": 1.0, "loss.reward_scale": 10.0, "loss.overshooting": 0,
    "optim.lr": 1e-3, "optim.eps": 1e-4, "optim.grad_clip": 1000.0, "optim.precision": "fp32",
    "planner.horizon": 12, "planner.iterations": 10, "planner.candidates": 1000, "planner.elites": 100,
    "planner.min_std": 0.0, "planner.warm_start": False, "planner.exploration_noise": 0.3,
    "planner.exploration_correlation": 0.0, "planner.precision": "auto",
    "train.seed_episodes": 5, "train.collect_every": 100, "train.total_updates": 100_000,
}

PRESETS: dict[str, dict[str, Any]] = {
    "paper": PAPER,
    "debug": {
        "env.task": "mock", "env.image_size": 64, "env.processes": 0, "env.episode_steps": 12,
        "data.batch_size": 3, "data.chunk_length": 6, "data.prefetch": 1,
        "model.belief_size": 16, "model.state_size": 4, "model.hidden_size": 16, "model.depth": 4,
        "model.reward_layers": 1, "model.reward_units": 16,
        "planner.horizon": 3, "planner.iterations": 2, "planner.candidates": 16, "planner.elites": 4,
        "train.seed_episodes": 2, "train.total_updates": 12, "train.collect_every": 4, "train.test_every": 6,
        "train.test_episodes": 2, "train.log_every": 2, "train.openloop_context": 2,
        "train.openloop_length": 8, "run.device": "cpu",
    },
    "carla128": {
        "env.task": "highway", "env.image_size": 128, "data.batch_size": 40, "data.chunk_length": 50,
        "data.max_episodes": 100, "data.cross_episodes": True, "model.continuation": True,
        "planner.tail": True, "planner.discount": 0.99,
    },
    "cpu128": {
        "env.task": "highway", "env.image_size": 128, "env.processes": 1, "model.continuation": True,
        "data.batch_size": 8, "data.cross_episodes": True, "data.prefetch": 0,
        "data.chunk_length": 24, "data.max_episodes": 100, "model.depth": 16, "optim.precision": "auto",
        "planner.precision": "auto", "planner.candidates": 300, "planner.elites": 30, "planner.iterations": 8,
        "planner.horizon": 24, "planner.tail": True, "planner.discount": 0.99,
        "train.collect_every": 50, "train.total_updates": 6000, "train.test_every": 500,
        "train.test_episodes": 5, "train.keep_models": True, "train.log_every": 25, "run.device": "cpu",
    },
    "cpu": {
        "env.fast_render": True, "env.processes": 1,
        # batch 16: on top of averaging it met five tasks' goals where batch 8 met four (results/cpu/NOTES.md)
        "data.batch_size": 16, "data.chunk_length": 32, "data.prefetch": 0,
        "model.depth": 16, "model.belief_size": 200, "model.state_size": 30,
        "optim.precision": "auto", "planner.precision": "auto",
        "optim.average": 0.99,  # plan with averaged weights: it held the gains, measured in results/cpu/NOTES.md
        "planner.candidates": 300, "planner.elites": 30, "planner.iterations": 8,
        "train.collect_every": 100, "train.total_updates": 7000, "train.test_every": 1000,
        "train.log_every": 50, "train.keep_models": True, "run.device": "cpu",
    },
}
"""Named override blocks, applied before `--set` overrides."""

_PPO_STATE = {"env.pixels": False, "env.processes": 0, "env.action_repeat": 1, "run.device": "cpu"}
PPO_CONFIGS: dict[str, dict[str, Any]] = {
    # batch-ppo's configs (agents/scripts/configs.py), on the current Gymnasium versions of its tasks.
    "pendulum": {**_PPO_STATE, "env.task": "gym:Pendulum-v1", "ppo.total_steps": 1_000_000,
                 "ppo.chunk_length": 50, "ppo.batch_size": 20},
    "cartpole": {**_PPO_STATE, "env.task": "gym:CartPole-v1", "ppo.total_steps": 200_000},
    "reacher": {**_PPO_STATE, "env.task": "gym:Reacher-v5", "ppo.total_steps": 5_000_000, "ppo.discount": 0.985,
                "ppo.update_every": 60},
    "cheetah": {**_PPO_STATE, "env.task": "gym:HalfCheetah-v5", "ppo.total_steps": 10_000_000,
                "ppo.discount": 0.99},
    "walker": {**_PPO_STATE, "env.task": "gym:Walker2d-v5", "ppo.total_steps": 10_000_000},
    "hopper": {**_PPO_STATE, "env.task": "gym:Hopper-v5", "ppo.total_steps": 10_000_000, "ppo.update_every": 60},
    "ant": {**_PPO_STATE, "env.task": "gym:Ant-v5", "ppo.total_steps": 20_000_000},
    "humanoid": {**_PPO_STATE, "env.task": "gym:Humanoid-v5", "ppo.total_steps": 50_000_000,
                 "ppo.update_every": 60},
    # The variant this project ran before it followed batch-ppo (tanh MLPs, linear mean, GAE(0.95) with
    # bootstrap, ten minibatch steps per epoch); BENCHMARKS.md compares the two on pendulum.
    "pendulum-variant": {**_PPO_STATE, "env.task": "gym:Pendulum-v1", "ppo.total_steps": 1_000_000,
                         "ppo.activation": "tanh", "ppo.squash_mean": False, "ppo.advantage": "gae",
                         "ppo.chunk_length": 20, "ppo.batch_size": 30, "ppo.shuffle": "epoch"},
    "debug": {**_PPO_STATE, "env.task": "mock", "env.episode_steps": 10, "ppo.num_envs": 3,
              "ppo.update_every": 3, "ppo.epochs": 2, "ppo.total_steps": 150, "ppo.eval_every": 2,
              "ppo.eval_episodes": 2, "ppo.policy_layers": (16,), "ppo.value_layers": (16,)},
}
"""The PPO configs of the agents library (`planetrl ppo train --config NAME`), from state."""
