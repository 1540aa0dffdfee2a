"""Task registry: a task name maps to a constructor and its defaults.

Registering a task from user code::

    from planetrl.envs.registry import TaskSpec, register

    def make_my_env(size: int, seed: int, fast_render: bool):
        return MyPixelEnv(size=size, seed=seed)   # a gymnasium.Env with an `image` observation

    register(TaskSpec("my-task", make_my_env, action_repeat=2, episode_steps=500))

The constructor must be a module-level function (environments are built in
child processes, so it has to be picklable).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import logging
from collections.abc import Callable
from typing import Any

from planetrl.config_values import did_you_mean
from planetrl.envs.mock import MockEnv

# The paper's tasks: name -> (DMC domain, DMC task, action repeat). Every DMC episode is 1000 env steps.
PAPER_TASKS: dict[str, tuple[str, str, int]] = {
    "cartpole-swingup": ("cartpole", "swingup", 8),
    "cartpole-balance": ("cartpole", "balance", 8),
    "reacher-easy": ("reacher", "easy", 4),
    "cheetah-run": ("cheetah", "run", 4),
    "finger-spin": ("finger", "spin", 2),
    "cup-catch": ("ball_in_cup", "catch", 4),
    "walker-walk": ("walker", "walk", 2),
}
PAPER_ACTION_REPEAT = {name: repeat for name, (_, _, repeat) in PAPER_TASKS.items()}
_PAPER_REPEAT_BY_DMC = {(domain, task): repeat for domain, task, repeat in PAPER_TASKS.values()}
DEFAULT_DMC_REPEAT = 2


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """How to build a task and its defaults.

    `constructor(size=, seed=, fast_render=)` returns a gymnasium.Env whose
    observation is a dict with a uint8 `image`; a `driving` family constructor also takes
    `view_meters=`, a `carla` one `host=` and `port=`. `episode_steps` counts raw
    environment steps (before action repeat); 0 means the env ends episodes itself.
    `state_constructor(seed=)`, when given, builds the task without rendering,
    observing only a float32 `state` (for model-free baselines from state).
    `requires` names the modules the constructor imports that a plain install may lack, and `extra`
    the `pip install 'planetrl[EXTRA]'` that brings them, so a run can refuse before it creates anything.
    """

    name: str
    constructor: Callable[..., Any]
    action_repeat: int = 1
    episode_steps: int = 1000
    image_size: int = 64
    family: str = "custom"
    description: str = ""
    state_constructor: Callable[..., Any] | None = None
    requires: tuple[str, ...] = ()
    extra: str = ""


def check_requirements(spec: TaskSpec) -> None:
    """Raise ImportError naming the first module `spec` needs that is not installed, and how to get it."""
    for module in spec.requires:
        if importlib.util.find_spec(module) is None:
            how = f"pip install 'planetrl[{spec.extra}]'" if spec.extra else f"install the '{module}' package"
            raise ImportError(f"task '{spec.name}' needs the '{module}' module, which is not installed: {how}")


_REGISTRY: dict[str, TaskSpec] = {}


def register(spec: TaskSpec, overwrite: bool = False) -> TaskSpec:
    """Add a task to the registry; names are unique unless `overwrite`."""
    if spec.name in _REGISTRY and not overwrite:
        raise ValueError(f"task '{spec.name}' is already registered")
    if spec.action_repeat < 1:
        raise ValueError(f"task '{spec.name}': action_repeat must be at least 1, got {spec.action_repeat}")
    if spec.episode_steps < 0:
        raise ValueError(f"task '{spec.name}': episode_steps must be at least 0 (0: the env ends its episodes), "
                         f"got {spec.episode_steps}")
    _REGISTRY[spec.name] = spec
    return spec


def make_dmc(domain: str, task: str, size: int, seed: int, fast_render: bool) -> Any:
    """Constructor for DeepMind Control Suite tasks."""
    from planetrl.envs.dmc import DMCEnv

    return DMCEnv(domain, task, size=size, seed=seed, fast_render=fast_render)


def make_gym_task(env_id: str, size: int, seed: int, fast_render: bool) -> Any:
    """Constructor for `gym:ID` tasks."""
    from planetrl.envs.gym import make_gym

    return make_gym(env_id, size=size)


def make_dmc_state(domain: str, task: str, seed: int) -> Any:
    """DMC task observed through its proprioceptive state, without rendering."""
    from planetrl.envs.dmc import DMCEnv

    return DMCEnv(domain, task, seed=seed, render=False)


def make_gym_state(env_id: str, seed: int) -> Any:
    """Gymnasium task observed through its own (flattened) observation, without rendering."""
    from planetrl.envs.gym import make_gym

    return make_gym(env_id, pixels=False)


def make_highway_task(size: int, seed: int, fast_render: bool, view_meters: float = 40.0) -> Any:
    """Constructor for the offline driving task."""
    from planetrl.envs.driving import make_highway

    return make_highway(size, seed, fast_render, view_meters=view_meters)


def make_carla(town: str, size: int, seed: int, fast_render: bool, host: str = "localhost",
               port: int = 2000) -> Any:
    """Constructor for `carla:TOWN` tasks; needs a running CARLA server."""
    from planetrl.envs.carla import CarlaEnv

    return CarlaEnv(host=host, port=port, town=town, size=size, seed=seed)


def make_mock(size: int, seed: int, fast_render: bool) -> Any:
    """Constructor for the `mock` task: 50-step episodes, 2-d actions."""
    return MockEnv(durations=(50,), image_size=size)


def make_mock_3d(size: int, seed: int, fast_render: bool) -> Any:
    """Constructor for the `mock-3d` task: 30-step episodes, 3-d actions."""
    return MockEnv(durations=(30,), image_size=size, action_size=3)


def _dmc_spec(name: str, domain: str, task: str) -> TaskSpec:
    """A DMC task; it gets the paper's action repeat where the paper has one, else 2."""
    repeat = _PAPER_REPEAT_BY_DMC.get((domain, task), DEFAULT_DMC_REPEAT)
    return TaskSpec(
        name, functools.partial(make_dmc, domain, task), action_repeat=repeat,
        episode_steps=1000, family="dmc", description=f"DeepMind Control Suite {domain} {task}",
        state_constructor=functools.partial(make_dmc_state, domain, task),
    )


def _gym_spec(name: str) -> TaskSpec:
    import gymnasium

    env_id = name.split(":", 1)[1]
    try:
        registered = gymnasium.spec(env_id)
    except gymnasium.error.Error as error:
        raise ValueError(f"unknown Gymnasium id '{env_id}' in task '{name}': {error}") from error
    steps = registered.max_episode_steps or 1000
    return TaskSpec(name, functools.partial(make_gym_task, env_id), action_repeat=1, episode_steps=steps,
                    family="gym", description=f"Gymnasium {env_id}, pixels from render()",
                    state_constructor=functools.partial(make_gym_state, env_id))


for _name, (_domain, _task, _) in PAPER_TASKS.items():
    register(_dmc_spec(_name, _domain, _task))
register(TaskSpec("highway", make_highway_task, action_repeat=1, episode_steps=150, image_size=64,
                  family="driving", description="offline driving: highway-env top-down, 20 cars, continuous",
                  requires=("highway_env",), extra="driving"))
register(TaskSpec("mock-3d", make_mock_3d, action_repeat=1, episode_steps=0, image_size=16, family="mock",
                  description="MockEnv with 3-d actions and 30-step episodes (a second task for sweeps)"))
register(TaskSpec("mock", make_mock, action_repeat=1, episode_steps=0, image_size=16, family="mock",
                  description="deterministic MockEnv for tests and the debug preset"))


def _split_dmc(name: str) -> tuple[str, str]:
    """`dmc:domain-task` -> (domain, task); a paper alias after `dmc:` (dmc:cup-catch) maps to its DMC names."""
    body = name[4:]
    if body in PAPER_TASKS:
        domain, task, _ = PAPER_TASKS[body]
        return domain, task
    if "-" not in body:
        raise ValueError(f"task '{name}' is not of the form dmc:domain-task (for example dmc:ball_in_cup-catch)")
    domain, task = body.split("-", 1)
    from planetrl.envs.dmc import check_dmc_task

    check_dmc_task(domain, task)
    return domain, task


ENTRY_POINT_GROUP = "planetrl.tasks"
_plugins_loaded = False


def import_task_modules(modules: tuple[str, ...] | list[str]) -> None:
    """Import modules that register tasks; a module that fails to import is an error naming it."""
    import importlib

    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise ValueError(f"cannot import task module '{module}': {error}") from error
        except Exception as error:  # the module's own bug (a syntax error, a raise): named, traceback on -v
            raise ValueError(f"task module '{module}' failed while importing: {type(error).__name__}: "
                             f"{error}") from error


def load_task_plugins() -> None:
    """Load the `planetrl.tasks` entry points of installed packages, once: each registers its tasks."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from importlib.metadata import entry_points

    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            entry.load()
        except Exception as error:  # noqa: BLE001 - one broken package must not take the other tasks down
            logging.getLogger(__name__).warning(
                "task plugin %r (%s) failed to load, so its tasks are not registered: %s: %s",
                entry.name, entry.value, type(error).__name__, error)


def task_names() -> list[str]:
    """Names of the registered tasks (families like `gym:ID` resolve on demand)."""
    return sorted(_REGISTRY)


def resolve(name: str) -> TaskSpec:
    """Find a task by name: registered names, `gym:ID`, or any DMC `domain-task`."""
    if name in _REGISTRY:
        return _REGISTRY[name]
    if not _plugins_loaded and ":" not in name:
        load_task_plugins()
        if name in _REGISTRY:
            return _REGISTRY[name]
    if name.startswith("gym:"):
        return _gym_spec(name)
    if name.startswith("dmc:"):
        return _dmc_spec(name, *_split_dmc(name))
    if name.startswith("carla:"):
        town = name.split(":", 1)[1] or "Town01"
        return TaskSpec(name, functools.partial(make_carla, town), action_repeat=1, episode_steps=1000,
                        image_size=128, family="carla", description=f"CARLA {town}, RGB camera, synchronous",
                        requires=("carla",), extra="carla")
    raise ValueError(
        f"unknown task '{name}'.{did_you_mean(name, _REGISTRY)} Registered: {', '.join(task_names())}; "
        "also any Gymnasium id as gym:ID, any DMC task as dmc:domain-task, and carla:TOWN; tasks of your own "
        "module load with --import MODULE."
    )
