"""Cross-entropy-method planning over action sequences, batched over environments.

The planner needs only a model with `imagine(state, actions) -> rewards`:
`state` is a tensor or a dict of tensors with a leading batch dimension, and
`actions` is (N, H, A). All E environments x J candidates are evaluated in
one call, so there is no Python work per candidate.

A model whose imagination samples (a stochastic latent rollout) says so with
`noise_size > 0`; the planner then draws that model's standard-normal noise,
(N, H, noise_size), from each environment's generator and passes it as
`imagine(..., noise=...)`, so that no result depends on the global RNG.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import torch

from planetrl.presets import PAPER


class ImaginationModel(Protocol):
    """Anything that predicts per-step rewards of open-loop action sequences."""

    def imagine(self, state: Any, actions: torch.Tensor) -> torch.Tensor:
        """(N, H, A) actions from an (N, ...) state -> (N, H) rewards.

        A stochastic model also has `noise_size` and takes `noise=` (see the module docstring).
        """


@dataclasses.dataclass(frozen=True)
class CEMSettings:
    """CEM hyperparameters (the paper: 12 steps, 10 iterations, 1000 candidates, top 100; docs/PAPER.md)."""

    horizon: int = PAPER["planner.horizon"]
    iterations: int = PAPER["planner.iterations"]
    candidates: int = PAPER["planner.candidates"]
    elites: int = PAPER["planner.elites"]
    min_std: float = 0.0  # stop early once every sampling std is below this (0 = never)
    discrete: bool = False  # categorical CEM over one-hot actions

    def __post_init__(self) -> None:
        if not 1 <= self.elites <= self.candidates:
            raise ValueError(f"elites must be within 1..candidates ({self.candidates}), got {self.elites}")
        if self.horizon < 1 or self.iterations < 1:
            raise ValueError(f"horizon and iterations must be at least 1, got {self.horizon}, {self.iterations}")


@dataclasses.dataclass
class Plan:
    """A planning result per environment: (E, H, A) mean (or probabilities) and std."""

    mean: torch.Tensor
    std: torch.Tensor
    iterations: int
    returns: list[torch.Tensor]  # mean predicted return of the elites (E,) after each iteration
    discrete: bool = False

    def first_action(self) -> torch.Tensor:
        """The action to execute now: the mean's first step, or the likeliest choice (E,) when discrete."""
        return self.mean[:, 0].argmax(-1) if self.discrete else self.mean[:, 0]


def repeat_state(state: Any, times: int) -> Any:
    """Repeat every row of a (dict of) tensor(s) `times` times, row by row."""
    if isinstance(state, dict):
        return {key: repeat_state(value, times) for key, value in state.items()}
    return state.repeat_interleave(times, dim=0)


def _batch_size(state: Any) -> int:
    if isinstance(state, dict):
        return _batch_size(next(iter(state.values())))
    return state.shape[0]


def _per_env(generators: Sequence[torch.Generator | None], draw: Callable[[torch.Generator | None], torch.Tensor]
             ) -> torch.Tensor:
    return torch.stack([draw(g) for g in generators])


@torch.no_grad()
def plan(model: ImaginationModel, state: Any, action_size: int, settings: CEMSettings,
         generators: Sequence[torch.Generator | None] | None = None,
         init_mean: torch.Tensor | None = None, init_std: torch.Tensor | None = None) -> Plan:
    """Search action sequences in [-1, 1]^A (or one-hot of `action_size` choices) with CEM.

    Each env draws its samples from its own generator, so planning E envs
    together gives the same result as E separate calls with the same seeds;
    the model is still called once for all E x J candidates. `init_mean` and
    `init_std` (E, H, A) warm-start the search, for example with the previous
    plan shifted by one step (`shift_plan`).
    """
    envs = _batch_size(state)
    generators = list(generators) if generators is not None else [None] * envs
    if len(generators) != envs:
        raise ValueError(f"got {len(generators)} generators for {envs} environments")
    horizon, count = settings.horizon, settings.candidates
    noise_size = getattr(model, "noise_size", 0)
    device = next(iter(state.values())).device if isinstance(state, dict) else state.device
    repeated = repeat_state(state, count)
    if settings.discrete:
        mean = torch.full((envs, horizon, action_size), 1.0 / action_size, device=device)
    else:
        mean = torch.zeros(envs, horizon, action_size, device=device)
    if init_mean is not None:
        mean = init_mean.to(device).clone()
    std = torch.ones(envs, horizon, action_size, device=device)
    if init_std is not None:
        std = init_std.to(device).clone()
    returns = []
    iteration = 0
    for iteration in range(1, settings.iterations + 1):  # noqa: B007 - read after the loop
        if settings.discrete:
            probs = mean
            choices = torch.stack([  # (E, J, H)
                torch.multinomial(probs[e], count, replacement=True, generator=g).T
                for e, g in enumerate(generators)
            ])
            actions = torch.nn.functional.one_hot(choices, action_size).float()
        else:
            noise = _per_env(generators, lambda g: torch.randn(count, horizon, action_size, generator=g,
                                                               device=device))
            actions = (mean[:, None] + std[:, None] * noise).clamp(-1.0, 1.0)
        flat = actions.reshape(envs * count, horizon, action_size)
        if noise_size:
            draws = _per_env(generators, lambda g: torch.randn(count, horizon, noise_size, generator=g, device=device))
            rewards = model.imagine(repeated, flat, noise=draws.reshape(envs * count, horizon, noise_size))
        else:
            rewards = model.imagine(repeated, flat)
        total = rewards.reshape(envs, count, horizon).sum(-1).float()
        top = total.topk(settings.elites, dim=1).indices  # (E, K)
        elites = actions.gather(1, top[..., None, None].expand(-1, -1, horizon, action_size))
        returns.append(total.gather(1, top).mean(1))
        mean = elites.mean(1)
        # As the original: the variance gets 1e-6 before the root, so agreeing elites leave a std of 1e-3.
        std = (elites.var(1, unbiased=False) + 1e-6).sqrt()
        if settings.min_std and float(std.max()) < settings.min_std:
            break
    if settings.discrete:
        std = torch.zeros_like(mean)
    return Plan(mean, std, iteration, returns, settings.discrete)


def shift_plan(plan: Plan, std_floor: float = 0.2) -> tuple[torch.Tensor, torch.Tensor]:
    """Warm start for the next step: (mean, std) without the executed step, a fresh step at the end.

    The carried std is floored at `std_floor` so the search can still move;
    the new last step starts from the neutral mean with std 1.
    """
    mean = plan.mean
    if plan.discrete:
        fresh = torch.full_like(mean[:, :1], 1.0 / mean.shape[-1])
    else:
        fresh = torch.zeros_like(mean[:, :1])
    next_mean = torch.cat([mean[:, 1:], fresh], 1)
    next_std = torch.cat([plan.std[:, 1:].clamp(min=std_floor), torch.ones_like(mean[:, :1])], 1)
    return next_mean, next_std
