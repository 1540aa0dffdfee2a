"""planetrl from Python: the exported names, the SB3-style agent, the runnable example, a script's guard."""

import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

import planetrl

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "quickstart.py"


def test_the_package_exports_the_api_lazily():
    code = "import sys, planetrl; assert 'torch' not in sys.modules; print(planetrl.PlaNet.__name__)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "PlaNet"
    assert planetrl.build_config("debug").env.task == "mock"
    for name in planetrl.__all__:
        assert getattr(planetrl, name) is not None


def test_learn_predict_save_load_on_a_registered_task(tmp_path):
    agent = planetrl.PlaNet("mock", preset="debug", logdir=tmp_path / "exp").learn(progress=False)
    image = np.zeros((64, 64, 3), np.uint8)
    agent.reset()
    torch.manual_seed(0)  # the belief filter samples the posterior from torch's generator
    action = agent.predict({"image": image})
    assert action.shape == (2,) and np.all(np.abs(action) <= 1)
    frozen = image.copy()
    frozen.setflags(write=False)  # frames from env processes can be read-only: no torch warning about it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        agent.predict(frozen)
    saved = agent.save(tmp_path / "saved")
    again = planetrl.PlaNet.load(saved)
    torch.manual_seed(0)
    np.testing.assert_allclose(again.predict(image), action, atol=1e-5)  # same weights, same seeds: same plan
    assert (tmp_path / "exp" / "run-00" / "config.yaml").exists()  # eval and visualize work on the run
    checkpoints = tmp_path / "exp" / "run-00" / "checkpoints"
    (checkpoints / "latest.pt").write_bytes(b"torn")  # load falls back to the one before; so does save
    from_previous = planetrl.PlaNet.load(tmp_path / "exp" / "run-00").save(tmp_path / "saved-again")
    assert (from_previous / "checkpoints" / "latest.pt").read_bytes() == (checkpoints / "previous.pt").read_bytes()
    planetrl.PlaNet.load(from_previous)
    with pytest.raises(RuntimeError, match="no trained model to save yet"):
        planetrl.PlaNet("mock", preset="debug", logdir=tmp_path / "fresh").save(tmp_path / "nothing")
    assert not (tmp_path / "nothing").exists()


def test_predict_names_what_is_wrong_with_an_observation_it_cannot_plan_from(tmp_path):
    """A (64, 64) array failed deep in torch's conv, a dict without 'image' as KeyError('image'), and a float
    image in [0, 1] was planned from as if it were a black uint8 frame."""
    agent = planetrl.PlaNet("mock", preset="debug", logdir=tmp_path / "exp").learn(progress=False)
    with pytest.raises(ValueError, match=r"\(H, W, 3\) uint8 RGB image; got shape \(64, 64\), dtype uint8"):
        agent.predict(np.zeros((64, 64), np.uint8))
    with pytest.raises(ValueError, match=r"dtype float32 \(floats in \[0, 1\]: pass \(image \* 255\)"):
        agent.predict(np.zeros((64, 64, 3), np.float32))
    with pytest.raises(ValueError, match=r"an 'image' .*this one has \['state'\]"):
        agent.predict({"state": np.zeros(3)})
    assert agent.predict(np.zeros((100, 100, 3), np.uint8)).shape == (2,)  # another size is resized


class _StateOnly(gym.Env):
    observation_space = gym.spaces.Box(-1, 1, (3,), np.float32)
    action_space = gym.spaces.Box(-1, 1, (1,), np.float32)

    def reset(self, seed=None, options=None):
        return np.zeros(3, np.float32), {}

    def step(self, action):
        return np.zeros(3, np.float32), 0.0, False, False, {}


class _FloatImage(_StateOnly):
    observation_space = gym.spaces.Dict({"image": gym.spaces.Box(0, 1, (64, 64, 3), np.float32)})


def test_an_env_function_the_model_cannot_see_fails_at_construction_and_creates_nothing(tmp_path):
    """A state-only env failed inside PixelObservation, and a float image after the seed episodes, each after
    the run directory was made."""
    with pytest.raises(ValueError, match=r"PlaNet\(_StateOnly\) needs an env whose observation is a dict with a "
                                         r"uint8 'image', or one made with render_mode='rgb_array'; its "
                                         r"observation space is Box.* and its render_mode None"):
        planetrl.PlaNet(_StateOnly, preset="debug", logdir=tmp_path / "state")
    with pytest.raises(ValueError, match=r"PlaNet\(_FloatImage\) needs an observation 'image' that is an "
                                         r"\(H, W, 3\) uint8 Box; it is Box\(0.0, 1.0, \(64, 64, 3\), float32\)"):
        planetrl.PlaNet(_FloatImage, preset="debug", logdir=tmp_path / "float")
    assert not list(tmp_path.iterdir())


def test_the_quickstart_example_trains_on_a_python_env_and_acts(tmp_path):
    result = subprocess.run([sys.executable, str(EXAMPLE), "--logdir", str(tmp_path / "qs")], capture_output=True,
                            text=True, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "return over one episode:" in result.stdout and "loaded action:" in result.stdout
    assert "XDG_RUNTIME_DIR" not in result.stderr


def test_a_script_without_a_main_guard_is_told_what_to_do(tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text(textwrap.dedent("""
        import functools
        from planetrl.envs.mock import MockEnv
        from planetrl.envs.process import ExternalProcess
        ExternalProcess(functools.partial(MockEnv))
    """))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert result.returncode != 0
    assert 'if __name__ == "__main__":' in result.stderr


def test_the_own_model_example_plans_towards_the_goal():
    result = subprocess.run([sys.executable, str(EXAMPLE.parent / "own_model.py")], capture_output=True, text=True,
                            check=True, timeout=300)
    first = float(result.stdout.split("first action: ")[1].split()[0])
    assert first > 0.8


def test_a_typo_in_the_task_fails_at_construction_naming_the_close_matches(tmp_path):
    from planetrl import PlaNet

    with pytest.raises(ValueError, match=r"unknown task 'cartpol'. Did you mean: cartpole-swingup"):
        PlaNet("cartpol", logdir=tmp_path / "runs")
    assert not (tmp_path / "runs").exists()


def test_task_and_seed_come_from_the_arguments_or_the_overrides_and_never_both_differently(tmp_path):
    """The arguments replaced env.task and run.seed in overrides silently (seed 0 won over run.seed 3)."""
    from planetrl import PlaNet

    agent = PlaNet(preset="debug", logdir=tmp_path, overrides={"env.task": "mock", "run.seed": 3})
    assert (agent.cfg.env.task, agent.cfg.run.seed) == ("mock", 3)
    assert PlaNet("mock", preset="debug", logdir=tmp_path, overrides={"run.seed": 3}, seed=3).cfg.run.seed == 3
    assert (PlaNet(preset="debug", logdir=tmp_path).cfg.env.task, PlaNet(preset="debug").cfg.run.seed) == (
        "cartpole-swingup", 0)
    with pytest.raises(ValueError, match=r"run.seed is given twice, as 5 and in overrides as 3"):
        PlaNet("mock", preset="debug", logdir=tmp_path, overrides={"run.seed": 3}, seed=5)
    with pytest.raises(ValueError, match=r"env.task is given twice, as 'mock' and in overrides as 'cheetah-run'"):
        PlaNet("mock", preset="debug", logdir=tmp_path, overrides={"env.task": "cheetah-run"})
    assert not any(tmp_path.iterdir())
