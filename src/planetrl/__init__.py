"""planetrl: PlaNet world models and latent-space planning from pixels, in PyTorch.

The names below load on first use, so `import planetrl` stays light (environment
processes import it too):

- `PlaNet`: train, act, save and load, in the style of stable-baselines3 (`planetrl.api`);
- `TaskSpec`, `register`: bring your own task (`planetrl.envs.registry`);
- `build_config`, `Config`: configurations and presets (`planetrl.config`);
- `WorldModel`, `plan`, `CEMSettings`, `MPCAgent`: the world model and the planner for your own code.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "PlaNet": "planetrl.api", "TaskSpec": "planetrl.envs.registry", "register": "planetrl.envs.registry",
    "Config": "planetrl.config", "WorldModel": "planetrl.models.world_model",
    "plan": "planetrl.planning.cem", "CEMSettings": "planetrl.planning.cem", "MPCAgent": "planetrl.agents.mpc",
}
__all__ = [*_EXPORTS, "build_config", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "build_config":
        return importlib.import_module("planetrl.config").build
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'planetrl' has no attribute {name!r}")
