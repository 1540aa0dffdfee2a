"""PlaNet's MPC agent: filter a belief per environment, plan with CEM, act, replan next step."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from planetrl.data.loader import preprocess_image
from planetrl.envs.spaces import action_size
from planetrl.models.rssm import State
from planetrl.models.world_model import WorldModel, autocast, resolve_precision
from planetrl.planning.cem import CEMSettings, plan, shift_plan
from planetrl.seeds import derive


class _Discounted:
    """The planner's view of the world model: expected rewards under its continuation, discounted.

    A model that filters with the posterior's mean (`model.filter_mean`) is imagined with the prior's
    mean, the input its belief was trained on; others with prior samples, as in PlaNet. `tail` adds the
    value past the horizon (`world_model.expected_rewards`)."""

    def __init__(self, model: WorldModel, discount: float, tail: bool = False) -> None:
        self.model, self.discount, self.tail = model, discount, tail
        self.sample = not model.filter_mean
        self.noise_size = model.noise_size

    def imagine(self, state: State, actions: torch.Tensor, noise: torch.Tensor | None = None) -> torch.Tensor:
        return self.model.imagine(state, actions, self.discount, noise, self.sample, self.tail)


class MPCAgent:
    """Keeps one belief per env, updated with each observation and the previous action.

    Exploration adds Normal(0, noise) to continuous actions and clips to [-1, 1]; with `correlation` c > 0
    the noise is AR(1) per env, n_t = c n_(t-1) + sqrt(1 - c^2) noise e_t, started afresh at each reset.
    For discrete actions it picks a uniform random action with probability `noise`.
    """

    def __init__(self, model: WorldModel, action_space: gym.Space, num_envs: int, settings: CEMSettings,
                 bits: int = 5, noise: float = 0.3, warm_start: bool = False, seed: int = 0,
                 precision: str = "fp32", discount: float = 1.0, correlation: float = 0.0,
                 tail: bool = False) -> None:
        self.model = model
        self.objective = _Discounted(model, discount, tail)
        self.discrete = isinstance(action_space, gym.spaces.Discrete)
        self.action_size = action_size(action_space)
        if settings.discrete != self.discrete:
            kind = "discrete" if self.discrete else "continuous"
            raise ValueError(f"CEMSettings(discrete={settings.discrete}) for a {kind} action space")
        if not 0.0 <= correlation < 1.0:
            raise ValueError(f"exploration correlation {correlation!r} must be in [0, 1)")
        if correlation and self.discrete:
            raise ValueError(f"exploration correlation {correlation!r} needs continuous actions; this action "
                             f"space is discrete, so use 0")
        self.settings = settings
        self.num_envs = num_envs
        self.bits = bits
        self.noise = noise
        self.correlation = correlation
        self.warm_start = warm_start
        self.device = next(model.parameters()).device
        self.precision = resolve_precision(precision, self.device)
        # One generator per env, for every draw (posterior, imagined priors, candidates, exploration):
        # acting on a batch equals acting on each env alone with its seed, whatever the global RNG.
        self.generators = [torch.Generator(device=self.device).manual_seed(derive(seed, "planner", i))
                           for i in range(num_envs)]
        self._rng = np.random.default_rng(seed)
        self.state: State = model.initial(num_envs)
        self.prev_action = torch.zeros(num_envs, self.action_size, device=self.device)
        self.explore_noise = torch.zeros(num_envs, self.action_size, device=self.device)  # AR(1) state
        self.plan_mean: torch.Tensor | None = None  # warm start: previous plan shifted by one step
        self.plan_std: torch.Tensor | None = None
        self.last_iterations = 0

    def reset(self, indices: Sequence[int]) -> None:
        """Forget the belief, previous action and warm-start plan of exactly these envs."""
        index = torch.as_tensor(list(indices), dtype=torch.long, device=self.device)
        for value in self.state.values():
            value[index] = 0
        self.prev_action[index] = 0
        self.explore_noise[index] = 0
        if self.plan_mean is not None and self.plan_std is not None:
            self.plan_mean[index] = self._neutral_plan(len(index))
            self.plan_std[index] = 1.0

    def _neutral_plan(self, rows: int) -> torch.Tensor:
        fill = 1.0 / self.action_size if self.discrete else 0.0
        return torch.full((rows, self.settings.horizon, self.action_size), fill, device=self.device)

    @torch.no_grad()
    def act(self, obs: dict[str, np.ndarray], explore: bool = False) -> np.ndarray:
        image = torch.tensor(obs["image"], device=self.device)  # a copy: env arrays may be read-only
        # As the original agent: the training preprocessing, one bin of uniform noise included, each env's
        # from its own generator.
        image = torch.stack([preprocess_image(row, self.bits, generator) for row, generator in
                             zip(image, self.generators, strict=True)])
        self.model.eval()
        noise = self._normal(self.model.noise_size) if self.model.noise_size else None
        self.state = self.model.filter_step(self.state, self.prev_action, image, noise)
        with autocast(self.device, self.precision):
            result = plan(self.objective, self.state, self.action_size, self.settings, self.generators,
                          self.plan_mean if self.warm_start else None, self.plan_std if self.warm_start else None)
        self.last_iterations = result.iterations
        if self.warm_start:
            self.plan_mean, self.plan_std = shift_plan(result)
        if self.discrete:
            choice = result.first_action().cpu().numpy()
            if explore and self.noise:
                random = self._rng.random(self.num_envs) < self.noise
                choice = np.where(random, self._rng.integers(0, self.action_size, self.num_envs), choice)
            self.prev_action = torch.nn.functional.one_hot(
                torch.as_tensor(choice, device=self.device), self.action_size).float()
            return choice
        action = result.first_action()
        if explore and self.noise:
            fresh = self.noise * self._normal(self.action_size)
            if self.correlation:
                fresh = self.correlation * self.explore_noise + (1.0 - self.correlation ** 2) ** 0.5 * fresh
                self.explore_noise = fresh
            action = action + fresh
        action = action.clamp(-1.0, 1.0)
        self.prev_action = action
        return action.cpu().numpy().astype(np.float32)

    def _normal(self, size: int) -> torch.Tensor:
        """(E, size) standard-normal draws, row e from env e's generator."""
        return torch.stack([torch.randn(size, generator=g, device=self.device) for g in self.generators])

    def observe(self, transition: dict[str, Any]) -> None:
        """The MPC agent learns offline from the replay, not from transitions."""
