"""planetrl from Python, in the style of stable-baselines3: `learn`, `predict`, `save`, `load`.

    from planetrl import PlaNet

    agent = PlaNet("cartpole-swingup", preset="cpu", logdir="runs/cartpole").learn()
    agent.reset()
    action = agent.predict(observation)        # a dict with a uint8 `image`, or the image itself
    agent = PlaNet.load("runs/cartpole/run-00")

`PlaNet(make_env)` trains on your own Gymnasium environment: a function that
returns an env whose observation is a dict with a uint8 `image`, or any env
with `render_mode="rgb_array"` (its frames become the images). Such an env is
stepped in this process. Scripts that use planetrl's environment processes
need `if __name__ == "__main__":` (they are started with `spawn`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from planetrl import config as config_lib
from planetrl.atomic import write_atomic
from planetrl.envs.registry import TaskSpec, register, resolve
from planetrl.envs.wrappers import PixelObservation, resize_image
from planetrl.training.planet import PlanetRun, build_mpc_agent, load_trained
from planetrl.training.rundir import latest_checkpoint, load_latest, prepare_run_dir
from planetrl.training.runner import check_planet_config


def _is_rgb(shape: tuple[int, ...], dtype: np.dtype) -> bool:
    """Whether an image (or an image space) is what the encoder reads: (H, W, 3) uint8."""
    return len(shape) == 3 and shape[-1] == 3 and dtype == np.uint8


def _user_env(make: Callable[[], gym.Env], size: int, seed: int, fast_render: bool) -> gym.Env:
    """The env of `make`, observing a uint8 `image` of its own or its rendered frames; ValueError otherwise."""
    env = make()
    space = env.observation_space
    name = getattr(make, "__name__", "the env function")
    if isinstance(space, gym.spaces.Dict) and "image" in space.spaces:
        image = space.spaces["image"]
        if not _is_rgb(image.shape or (), image.dtype):
            env.close()
            raise ValueError(f"PlaNet({name}) needs an observation 'image' that is an (H, W, 3) uint8 Box; "
                             f"it is {image}")
        return env
    if env.render_mode != "rgb_array":
        env.close()
        raise ValueError(f"PlaNet({name}) needs an env whose observation is a dict with a uint8 'image', or one "
                         f"made with render_mode='rgb_array'; its observation space is {space} and its "
                         f"render_mode {env.render_mode!r}")
    return PixelObservation(env, size)


def register_env_function(make: Callable[[], gym.Env], name: str | None = None, action_repeat: int = 1,
                          episode_steps: int = 0) -> str:
    """Register `make` as a task (in-process only) and return its name."""
    name = name or f"python:{getattr(make, '__name__', 'env')}"
    register(TaskSpec(name, functools.partial(_user_env, make), action_repeat=action_repeat,
                      episode_steps=episode_steps, family="python", description="a Python env function"),
             overwrite=True)
    return name


class PlaNet:
    """A PlaNet agent: train it on a task, act with it, save and load it."""

    def __init__(self, task: str | Callable[[], gym.Env] | None = None, preset: str | None = "cpu",
                 logdir: str | Path = "runs/planet", overrides: Mapping[str, Any] | None = None,
                 seed: int | None = None) -> None:
        """`task` (default cartpole-swingup) and `seed` (default 0) may instead come in `overrides` as
        env.task and run.seed; given both ways with different values, they are refused, not one dropped."""
        values = dict(overrides or {})
        for key, given in (("env.task", task), ("run.seed", seed)):
            if given is not None and key in values and (callable(given) or values[key] != given):
                raise config_lib.ConfigError(f"{key} is given twice, as {given!r} and in overrides as "
                                             f"{values[key]!r}; give it once")
        if task is None:
            task = values.get("env.task", "cartpole-swingup")
        seed = values.get("run.seed", 0) if seed is None else seed
        if callable(task):
            values["env.task"] = register_env_function(task)
            values["env.processes"] = 0  # a Python function need not be importable by a child process
        else:
            resolve(task)  # a typo in the task fails here, naming the close matches, not at learn()
            values["env.task"] = task
        values["run.seed"] = seed
        base = config_lib.build(preset)
        self.cfg = config_lib.set_values(base, values)
        if callable(task):  # an env the model cannot see fails here, not after the run directory is made
            _user_env(task, self.cfg.env.image_size, seed, False).close()
        self._explicit = values
        self.run_dir = Path(logdir) / "run-00"
        self.model: Any = None
        self._agent: Any = None

    def learn(self, total_updates: int | None = None, progress: bool = True) -> PlaNet:
        """Train (or resume) in `logdir/run-00`; `total_updates` overrides the preset's length."""
        explicit = dict(self._explicit)
        if total_updates is not None:
            explicit["train.total_updates"] = total_updates
            self.cfg = config_lib.set_values(self.cfg, {"train.total_updates": total_updates})
        check_planet_config(self.cfg)  # before the run directory is made, as `planetrl train` does
        self.cfg = prepare_run_dir(self.run_dir, self.cfg, explicit)
        PlanetRun(self.run_dir, self.cfg, progress=progress).run()
        self.cfg, self.model, _ = load_trained(self.run_dir, self.cfg.run.device)
        self._agent = None
        return self

    @classmethod
    def load(cls, run_dir: str | Path, device: str = "auto") -> PlaNet:
        """The trained agent of a run directory (or of a folder written by `save`)."""
        run_dir = Path(run_dir)
        agent = cls.__new__(cls)
        agent.cfg, agent.model, _ = load_trained(run_dir, device)
        agent.run_dir, agent._explicit, agent._agent = run_dir, {}, None
        return agent

    def save(self, path: str | Path) -> Path:
        """Copy what `load` needs (config.yaml, run_info.json, the checkpoint) into the folder `path`.

        The checkpoint is the one `load` would read: the latest, or the one before it where the latest is damaged.
        """
        if self.model is None:
            raise RuntimeError("the agent has no trained model to save yet: call learn() or PlaNet.load(run_dir)")
        path = Path(path)
        _, checkpoint = load_latest(latest_checkpoint(self.run_dir), torch.device("cpu"), needs="updater")
        (path / "checkpoints").mkdir(parents=True, exist_ok=True)
        sources = {"config.yaml": self.run_dir / "config.yaml", "run_info.json": self.run_dir / "run_info.json",
                   "checkpoints/latest.pt": checkpoint}
        for name, source in sources.items():
            if source.exists():  # atomically: a kill mid-save leaves the folder loadable
                write_atomic(path / name, source.read_bytes())
        return path

    def reset(self) -> None:
        """Start a new episode: forget the belief and the previous action."""
        self._agent = None

    def predict(self, observation: Mapping[str, np.ndarray] | np.ndarray, deterministic: bool = True) -> np.ndarray:
        """The action for one observation (its uint8 image), planned by CEM from the filtered belief."""
        if self.model is None:
            raise RuntimeError("the agent has no trained model yet: call learn() or PlaNet.load(run_dir)")
        image = _image_of(observation)
        if image.shape[:2] != (self.cfg.env.image_size,) * 2:
            image = resize_image(image, self.cfg.env.image_size)
        if self._agent is None:
            space = _action_space(self.model, self.cfg)
            self._agent = build_mpc_agent(self.cfg, self.model, _OneEnv(space), seed=self.cfg.run.seed)
        with torch.no_grad():
            action = self._agent.act({"image": image[None]}, explore=not deterministic)
        return action[0]


def _image_of(observation: Mapping[str, np.ndarray] | np.ndarray) -> np.ndarray:
    """The (H, W, 3) uint8 image of an observation; anything else is a ValueError saying what came."""
    if isinstance(observation, Mapping):
        if "image" not in observation:
            raise ValueError(f"predict needs an observation with an 'image' (or the image itself); this one has "
                             f"{sorted(observation) or 'no keys'}")
        observation = observation["image"]
    image = np.asarray(observation)
    if not _is_rgb(image.shape, image.dtype):
        raise ValueError(f"predict needs an (H, W, 3) uint8 RGB image; got shape {image.shape}, dtype {image.dtype}"
                         + (" (floats in [0, 1]: pass (image * 255).astype(np.uint8))"
                            if image.dtype.kind == "f" else ""))
    return image


class _OneEnv:
    """What `build_mpc_agent` reads of an env batch: its action space and size."""

    def __init__(self, action_space: gym.Space) -> None:
        self.action_space = action_space

    def __len__(self) -> int:
        return 1


def _action_space(model: Any, cfg: config_lib.Config) -> gym.Space:
    from planetrl.envs.registry import resolve

    spec = resolve(cfg.env.task) if not cfg.env.task.startswith("python:") else None
    if spec is not None and spec.family == "gym":
        space = gym.make(cfg.env.task.split(":", 1)[1]).action_space
        if isinstance(space, gym.spaces.Discrete):
            return space
    return gym.spaces.Box(-1.0, 1.0, (model.action_size,), np.float32)
