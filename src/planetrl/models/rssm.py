"""Latent dynamics: the RSSM and the paper's two ablations.

A state is a dict of (B, ...) tensors: `deter` (the GRU belief), `stoch`
(a sample), `mean` and `std` (its Gaussian). Variants:

- `rssm`: deterministic GRU belief plus a 30-d diagonal Gaussian (the paper's model).
- `ssm`: purely stochastic; the transition sees only the previous sample and action.
- `deterministic`: the GRU belief only, with no stochastic part and so no KL; an
  observation corrects the belief through a learned residual, and imagination
  runs the GRU without corrections.

Convention: `actions[:, t]` is the action that led to observation t (zero at
an episode's first step), so prior_t = transition(posterior_{t-1}, actions[:, t]).
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn
from torch.nn import functional as F

State = dict[str, torch.Tensor]
Variant = Literal["rssm", "ssm", "deterministic"]
VARIANTS = ("rssm", "ssm", "deterministic")


class LatentDynamics(nn.Module):
    """Prior (transition) and posterior (filter) steps, sequence observe, open-loop imagine."""

    def __init__(self, action_size: int, embed_size: int, variant: Variant = "rssm", belief_size: int = 200,
                 state_size: int = 30, hidden_size: int = 200, min_std: float = 0.1) -> None:
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"unknown model variant {variant!r}; allowed: {', '.join(VARIANTS)}")
        self.variant = variant
        self.belief_size = 0 if variant == "ssm" else belief_size
        self.state_size = 0 if variant == "deterministic" else state_size
        self.min_std = min_std
        self.action_size = action_size
        self.transition_in = nn.Linear(self.state_size + action_size, hidden_size)
        if self.belief_size:
            self.gru = nn.GRUCell(hidden_size, belief_size)
        prior_in = self.belief_size if self.belief_size else hidden_size
        if self.state_size:
            self.prior_hidden = nn.Linear(prior_in, hidden_size)
            self.prior_out = nn.Linear(hidden_size, 2 * state_size)
            self.posterior_hidden = nn.Linear(prior_in + embed_size, hidden_size)
            self.posterior_out = nn.Linear(hidden_size, 2 * state_size)
        else:
            self.correction_hidden = nn.Linear(belief_size + embed_size, hidden_size)
            self.correction_out = nn.Linear(hidden_size, belief_size)

    @property
    def feature_size(self) -> int:
        """Size of the features the decoder and reward head read."""
        return self.belief_size + self.state_size

    def initial(self, batch: int, device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32) -> State:
        """The all-zero state a sequence starts from."""
        zeros = lambda size: torch.zeros(batch, size, device=device, dtype=dtype)  # noqa: E731
        return {"deter": zeros(self.belief_size), "stoch": zeros(self.state_size),
                "mean": zeros(self.state_size), "std": zeros(self.state_size), "hidden": zeros(0)}

    def features(self, state: State) -> torch.Tensor:
        """Concatenated belief and sample."""
        return torch.cat([state["deter"], state["stoch"]], -1)

    def _gaussian(self, out: torch.Tensor, sample: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        mean, raw_std = out.chunk(2, -1)
        std = (F.softplus(raw_std.float()) + self.min_std).to(mean.dtype)  # softplus is slow in bf16 on CPU
        stoch = mean + std * torch.randn_like(std) if sample else mean
        return stoch, mean, std

    def prior_step(self, state: State, action: torch.Tensor, sample: bool = True) -> State:
        """p(s_t | s_{t-1}, a_{t-1}): one step of the transition."""
        hidden = F.relu(self.transition_in(torch.cat([state["stoch"], action], -1)))
        deter = self.gru(hidden, state["deter"]) if self.belief_size else state["deter"]
        if not self.state_size:
            return {"deter": deter, "stoch": state["stoch"], "mean": state["mean"], "std": state["std"],
                    "hidden": hidden[..., :0]}
        base = deter if self.belief_size else hidden
        stoch, mean, std = self._gaussian(self.prior_out(F.relu(self.prior_hidden(base))), sample)
        return {"deter": deter, "stoch": stoch, "mean": mean, "std": std, "hidden": hidden}

    def posterior_step(self, prior: State, embed: torch.Tensor, sample: bool = True) -> State:
        """q(s_t | prior_t, o_t): correct the prior with the image embedding."""
        if not self.state_size:
            hidden = F.relu(self.correction_hidden(torch.cat([prior["deter"], embed], -1)))
            return {**prior, "deter": prior["deter"] + self.correction_out(hidden)}
        base = prior["deter"] if self.belief_size else prior["hidden"]
        hidden = F.relu(self.posterior_hidden(torch.cat([base, embed], -1)))
        stoch, mean, std = self._gaussian(self.posterior_out(hidden), sample)
        return {**prior, "stoch": stoch, "mean": mean, "std": std}

    def observe(self, embeds: torch.Tensor, actions: torch.Tensor, is_first: torch.Tensor,
                state: State | None = None) -> tuple[State, State]:
        """Filter a (B, T) sequence; returns posterior and prior sequences of (B, T, ...) tensors.

        Where `is_first[:, t]` is true the state is reset to the initial state,
        so chunks that start an episode begin from the same zeros as the agent.
        """
        batch, steps = embeds.shape[:2]
        state = state or self.initial(batch, embeds.device, embeds.dtype)
        keep_all = (~is_first).to(embeds.dtype)[..., None]
        posts, priors = [], []
        for t in range(steps):
            keep = keep_all[:, t]
            state = {k: v * keep for k, v in state.items()}
            prior = self.prior_step(state, actions[:, t] * keep)
            state = self.posterior_step(prior, embeds[:, t])
            posts.append(state)
            priors.append(prior)
        return _stack(posts), _stack(priors)

    def imagine(self, state: State, actions: torch.Tensor, sample: bool = True) -> State:
        """Roll the prior forward through (B, H, A) actions; returns (B, H, ...) states."""
        states = []
        for t in range(actions.shape[1]):
            state = self.prior_step(state, actions[:, t], sample)
            states.append(state)
        return _stack(states)

    def imagine_features(self, state: State, actions: torch.Tensor, sample: bool = True) -> torch.Tensor:
        """Like `imagine`, but keeps only the (B, H, F) features: the planner's hot path."""
        features = []
        for t in range(actions.shape[1]):
            state = self.prior_step(state, actions[:, t], sample)
            features.append(self.features(state))
        return torch.stack(features, 1)


def _stack(states: list[State]) -> State:
    return {key: torch.stack([s[key] for s in states], 1) for key in states[0]}


def last_state(states: State) -> State:
    """The final time step of a (B, T, ...) state sequence."""
    return {key: value[:, -1] for key, value in states.items()}


def flatten_state(states: State) -> State:
    """(B, T, ...) -> (B*T, ...), to start rollouts from every step at once."""
    return {key: value.reshape(-1, *value.shape[2:]) for key, value in states.items()}
