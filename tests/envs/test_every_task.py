"""Every task name planetrl offers (registry, presets, PPO configs, README) builds, resets and steps."""

import re
from pathlib import Path

import numpy as np
import pytest

from planetrl.cli import main
from planetrl.config import PPO_CONFIGS, PRESETS, Config, PPORunConfig, set_values
from planetrl.envs import registry
from planetrl.envs.make import make_env

README = Path(__file__).resolve().parents[2] / "README.md"


def _readme_tasks() -> set[str]:
    """Task names the README uses: `--task NAME` and the backticked names of its Tasks section."""
    text = README.read_text()
    names = set(re.findall(r"--task\s+([\w:.\-]+)", text))
    section = text.split("### Tasks", 1)[1].split("###", 1)[0]
    names |= {n for n in re.findall(r"`([\w\-]+-[\w\-]+)`", section) if n in registry.task_names()}
    return {n for n in names if not n.startswith("carla:")}  # CARLA needs a server: see test_carla.py


def _offered() -> dict[str, dict]:
    """name -> the overrides it is offered with (a PPO config observes state instead of pixels)."""
    offered: dict[str, dict] = {name: {} for name in registry.task_names()}
    offered.update({name: {} for name in _readme_tasks()})
    for block in PRESETS.values():
        if "env.task" in block:
            offered.setdefault(block["env.task"], {})
    for block in PPO_CONFIGS.values():
        offered[f"ppo:{block['env.task']}"] = {k: v for k, v in block.items() if k.startswith("env.")}
    return offered


OFFERED = _offered()


def test_offered_names_cover_the_paper_tasks_and_every_ppo_config():
    paper = {"cartpole-swingup", "reacher-easy", "cheetah-run", "finger-spin", "cup-catch", "walker-walk"}
    assert paper <= set(OFFERED)
    assert len([n for n in OFFERED if n.startswith("ppo:")]) == len({b["env.task"] for b in PPO_CONFIGS.values()})


@pytest.mark.parametrize("name", sorted(OFFERED))
def test_offered_task_builds_resets_and_steps(name):
    overrides = dict(OFFERED[name])
    task = overrides.pop("env.task", name)
    base = PPORunConfig() if name.startswith("ppo:") else Config()
    cfg = set_values(base, {"env.task": task, "env.image_size": 32, "env.fast_render": True, **overrides})
    env = make_env(cfg.env, seed=0)
    try:
        obs, _ = env.reset(seed=0)
        key = "image" if cfg.env.pixels else "state"
        assert np.all(np.isfinite(obs[key]))
        for _ in range(3):
            obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            assert np.isfinite(reward)
            if terminated or truncated:
                obs, _ = env.reset()
        if cfg.env.pixels:
            assert obs["image"].shape == (32, 32, 3) and obs["image"].std() > 0
    finally:
        env.close()


def test_cup_catch_is_dmc_ball_in_cup_catch_at_repeat_4():
    spec = registry.resolve("cup-catch")
    assert spec.action_repeat == 4
    assert spec.constructor.args == ("ball_in_cup", "catch")


@pytest.mark.parametrize("name, repeat", [("dmc:ball_in_cup-catch", 4), ("dmc:cheetah-run", 4),
                                          ("dmc:walker-walk", 2), ("dmc:cup-catch", 4), ("dmc:hopper-hop", 2)])
def test_dmc_names_get_the_papers_action_repeat_where_it_has_one(name, repeat):
    assert registry.resolve(name).action_repeat == repeat


def test_unknown_dmc_task_is_refused_when_resolved():
    with pytest.raises(ValueError, match="unknown DMC task 'ball_in_cup-spin'"):
        registry.resolve("dmc:ball_in_cup-spin")


def test_a_misspelt_dmc_task_is_refused_with_the_names_it_is_close_to():
    with pytest.raises(ValueError, match=r"unknown DMC task 'cartpol-swingup'\. Did you mean: cartpole-swingup,"):
        registry.resolve("dmc:cartpol-swingup")


def test_the_tasks_table_is_not_interleaved_with_library_noise(tmp_path):
    import os
    import subprocess
    import sys

    # A fresh matplotlib cache: on a new machine highway's import builds its font list and says so at INFO.
    env = dict(os.environ, MPLCONFIGDIR=str(tmp_path))
    result = subprocess.run([sys.executable, "-m", "planetrl.cli", "tasks", "cup-catch", "highway"],
                            capture_output=True, text=True, check=True, env=env)
    assert "INFO" not in result.stderr and "settotalmass" not in result.stderr, result.stderr
    assert len(result.stdout.strip().splitlines()) == 5  # header, two tasks, a blank line, the "also" line


def test_tasks_command_lists_every_registered_task_with_its_spaces(capsys):
    assert main(["tasks"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines()[1:] if line and not line.startswith("also")}
    assert set(registry.task_names()) <= set(rows)
    assert rows["cup-catch"].split()[1] == "4" and "image (64, 64, 3) uint8" in rows["cup-catch"]
