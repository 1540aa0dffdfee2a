"""The `paper` preset against REFERENCE.md's hyperparameter table, value by value."""

import torch

from planetrl import config as C
from planetrl.envs.make import action_repeat, decisions_per_episode
from planetrl.training.updater import build_world_model

# REFERENCE.md, "PlaNet hyperparameters (the paper preset)".
REFERENCE = {
    "env.image_size": 64, "data.image_bits": 5, "data.batch_size": 50, "data.chunk_length": 50,
    "model.belief_size": 200, "model.state_size": 30, "model.hidden_size": 200, "model.min_std": 0.1,
    "model.reward_layers": 2, "model.reward_units": 200,
    "loss.kl_scale": 1.0, "loss.free_nats": 3.0, "loss.reward_scale": 10.0, "loss.overshooting": 0,
    "optim.lr": 1e-3, "optim.eps": 1e-4, "optim.grad_clip": 1000.0,
    "planner.horizon": 12, "planner.iterations": 10, "planner.candidates": 1000, "planner.elites": 100,
    "planner.exploration_noise": 0.3, "planner.warm_start": False, "planner.min_std": 0.0,
    "planner.exploration_correlation": 0.0,  # the paper's noise is independent from decision to decision
    "train.seed_episodes": 5, "train.collect_every": 100, "train.total_updates": 1000 * 100,
}
REPEATS = {"cartpole-swingup": 8, "reacher-easy": 4, "cheetah-run": 4, "finger-spin": 2, "cup-catch": 4,
           "walker-walk": 2, "cartpole-balance": 8}


def test_paper_preset_matches_reference():
    cfg = C.build("paper")
    flat = {f"{s}.{k}": v for s, values in C.to_dict(cfg).items() for k, v in values.items()}
    mismatches = {k: (flat[k], v) for k, v in REFERENCE.items() if flat[k] != v}
    assert not mismatches


def test_paper_action_repeats_and_1000_step_episodes():
    for task, repeat in REPEATS.items():
        env = C.set_values(C.build("paper"), {"env.task": task}).env
        assert action_repeat(env) == repeat
        assert decisions_per_episode(env) == 1000 // repeat + (1000 % repeat > 0)


def test_paper_architecture():
    model = build_world_model(C.build("paper"), action_size=6)
    convs = [m for m in model.encoder.modules() if isinstance(m, torch.nn.Conv2d)]
    assert [c.out_channels for c in convs] == [32, 64, 128, 256] and model.encoder.embed_size == 1024
    assert model.dynamics.gru.hidden_size == 200 and model.dynamics.state_size == 30
    linears = [m for m in model.reward_head.modules() if isinstance(m, torch.nn.Linear)]
    assert [m.out_features for m in linears] == [200, 200, 1]


def test_every_preset_resolves_and_carla128_is_the_notes_setup():
    for name in C.PRESETS:
        C.build(name)
    for block in C.PPO_CONFIGS.values():
        C.set_values(C.PPORunConfig(), block)
    cfg = C.build("carla128")
    assert (cfg.env.image_size, cfg.data.batch_size, cfg.data.chunk_length, cfg.data.max_episodes) == (128, 40, 50, 100)
    assert cfg.env.task == "highway"
