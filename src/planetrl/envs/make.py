"""Build wrapped environments, in-process or in their own processes, and batches of them."""

from __future__ import annotations

import functools
import math
from typing import Any

from planetrl.config import EnvConfig
from planetrl.envs import wrappers
from planetrl.envs.batch import BatchEnv
from planetrl.envs.process import ExternalProcess
from planetrl.envs.registry import TaskSpec, resolve
from planetrl.seeds import derive


def action_repeat(cfg: EnvConfig, spec: TaskSpec | None = None) -> int:
    """The configured action repeat, or the task's default when it is 0."""
    spec = spec or resolve(cfg.task)
    return cfg.action_repeat or spec.action_repeat


def episode_steps(cfg: EnvConfig, spec: TaskSpec | None = None) -> int:
    """The configured episode length in env steps, or the task's default when it is 0; 0 if unlimited."""
    return cfg.episode_steps or (spec or resolve(cfg.task)).episode_steps


def decisions_per_episode(cfg: EnvConfig, spec: TaskSpec | None = None) -> int:
    """Agent decisions per episode (episode env steps / action repeat), 0 if unlimited."""
    spec = spec or resolve(cfg.task)
    steps = episode_steps(cfg, spec)
    return math.ceil(steps / action_repeat(cfg, spec)) if steps else 0


def _family_options(cfg: EnvConfig, family: str) -> dict[str, Any]:
    """Keyword options that only one family's constructors take; a driving option set elsewhere is an error."""
    if family == "driving":
        return {"view_meters": cfg.view_meters}
    if cfg.view_meters != EnvConfig.view_meters:
        raise ValueError(f"env.view_meters={cfg.view_meters} applies to driving tasks (highway) only; "
                         f"task '{cfg.task}' is of the {family} family")
    if family == "carla":
        return {"host": cfg.carla_host, "port": cfg.carla_port}
    return {}


def make_env(cfg: EnvConfig, seed: int = 0, spec: TaskSpec | None = None) -> Any:
    """The task's env with the standard wrapper stack, in this process."""
    spec = spec or resolve(cfg.task)
    if not cfg.pixels:
        if spec.state_constructor is not None:
            env = spec.state_constructor(seed=seed)
        else:
            env = wrappers.DropImage(spec.constructor(size=cfg.image_size, seed=seed, fast_render=True))
    else:
        extra = _family_options(cfg, spec.family)
        env = spec.constructor(size=cfg.image_size, seed=seed, fast_render=cfg.fast_render, **extra)
        if env.observation_space["image"].shape[:2] != (cfg.image_size, cfg.image_size):
            env = wrappers.ResizeImage(env, cfg.image_size)
    repeat = action_repeat(cfg, spec)
    if repeat > 1:
        env = wrappers.ActionRepeat(env, repeat)
    duration = decisions_per_episode(cfg, spec)
    if duration:
        env = wrappers.TimeLimit(env, duration)
    env = wrappers.NormalizeActions(env)
    env = wrappers.ConvertTo32Bit(env)
    return wrappers.CheckSpaces(env)


def _make_process(cfg: EnvConfig, seed: int, spec: TaskSpec) -> ExternalProcess:
    return ExternalProcess(functools.partial(make_env, cfg, seed, spec), start_method=cfg.start_method,
                           timeout=cfg.answer_timeout or None)


def make_robust_env(cfg: EnvConfig, seed: int = 0, in_process: bool | None = None) -> wrappers.RestartOnException:
    """One env behind restart-on-exception, in its own process unless `cfg.processes == 0`."""
    spec = resolve(cfg.task)
    in_process = cfg.processes == 0 if in_process is None else in_process
    if in_process:
        constructor = functools.partial(make_env, cfg, seed, spec)
    else:
        constructor = functools.partial(_make_process, cfg, seed, spec)
    return wrappers.RestartOnException(constructor, cfg.max_restarts, cfg.restart_window)


def make_batch_env(cfg: EnvConfig, count: int, seed: int = 0) -> BatchEnv:
    """`count` envs with distinct seeds; in processes when `cfg.processes > 0`."""
    if count < 1:
        raise ValueError(f"a batch needs at least one environment, got {count}")
    envs: list[Any] = []
    try:
        for index in range(count):
            envs.append(make_robust_env(cfg, seed=derive(seed, "env-in-batch", index)))
    except BaseException:
        for env in envs:
            env.close()
        raise
    return BatchEnv(envs)
