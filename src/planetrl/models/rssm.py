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

Initialization `tf` (the default) follows the original TensorFlow code:
Glorot-uniform weights and zero biases in every dense layer, and the GRU of
TF's `GRUBlockCell` (gate bias 1.0, reset gate applied to the belief before
the candidate's matrix product). `torch` keeps PyTorch's defaults and its
`nn.GRUCell` (reset gate after the product); runs saved before the TF form
existed load with it.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn
from torch.nn import functional as F

from planetrl.models import fused_rssm

State = dict[str, torch.Tensor]
Variant = Literal["rssm", "ssm", "deterministic"]
VARIANTS = ("rssm", "ssm", "deterministic")
INITS = ("tf", "torch")


class BlockGRUCell(nn.Module):
    """TF's GRUBlockCell: r, u = sigmoid([x, h] W_ru + b_ru); c = tanh([x, r * h] W_c + b_c);
    h' = u * h + (1 - u) * c, with b_ru starting at 1.0 so the cell first leans on its memory."""

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.gates = nn.Linear(input_size + hidden_size, 2 * hidden_size)
        self.candidate = nn.Linear(input_size + hidden_size, hidden_size)
        glorot_uniform(self.gates)
        glorot_uniform(self.candidate)
        nn.init.constant_(self.gates.bias, 1.0)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        reset, update = torch.sigmoid(self.gates(torch.cat([x, h], -1))).chunk(2, -1)
        candidate = torch.tanh(self.candidate(torch.cat([x, reset * h], -1)))
        return update * h + (1 - update) * candidate


def glorot_uniform(layer: nn.Module, parts: int = 1) -> None:
    """TF's dense/conv default: Glorot-uniform weights, zero bias.

    `parts` > 1 initializes the output rows in that many equal blocks, as if
    each were its own layer (a fused mean/std head of TF's two dense layers).
    """
    for block in layer.weight.chunk(parts, 0):
        nn.init.xavier_uniform_(block)
    if layer.bias is not None:
        nn.init.zeros_(layer.bias)


def init_like_tf(module: nn.Module) -> None:
    """Glorot-uniform weights and zero biases for every dense and conv layer below `module`."""
    for layer in module.modules():
        if isinstance(layer, (nn.Linear, nn.Conv2d, nn.ConvTranspose2d)):
            glorot_uniform(layer)


class LatentDynamics(nn.Module):
    """Prior (transition) and posterior (filter) steps, sequence observe, open-loop imagine."""

    def __init__(self, action_size: int, embed_size: int, variant: Variant = "rssm", belief_size: int = 200,
                 state_size: int = 30, hidden_size: int = 200, min_std: float = 0.1, init: str = "tf") -> None:
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"unknown model variant {variant!r}; allowed: {', '.join(VARIANTS)}")
        if init not in INITS:
            raise ValueError(f"unknown initialization {init!r}; allowed: {', '.join(INITS)}")
        self.variant = variant
        self.fused = variant == "rssm" and init == "tf"  # the fast loops of fused_rssm.py; same numbers
        self.belief_size = 0 if variant == "ssm" else belief_size
        self.state_size = 0 if variant == "deterministic" else state_size
        self.min_std = min_std
        self.action_size = action_size
        self.transition_in = nn.Linear(self.state_size + action_size, hidden_size)
        if self.belief_size:
            self.gru = BlockGRUCell(hidden_size, belief_size) if init == "tf" else nn.GRUCell(hidden_size, belief_size)
        if self.belief_size and self.state_size:  # rssm: heads read the GRU belief
            self.prior_hidden = nn.Linear(belief_size, hidden_size)
            self.prior_out = nn.Linear(hidden_size, 2 * state_size)
            self.posterior_hidden = nn.Linear(belief_size + embed_size, hidden_size)
            self.posterior_out = nn.Linear(hidden_size, 2 * state_size)
        elif self.state_size:  # ssm: one hidden layer; the posterior reads the prior's mean and std
            self.prior_out = nn.Linear(hidden_size, 2 * state_size)
            self.posterior_hidden = nn.Linear(2 * state_size + embed_size, hidden_size)
            self.posterior_out = nn.Linear(hidden_size, 2 * state_size)
        else:
            self.correction_hidden = nn.Linear(belief_size + embed_size, hidden_size)
            self.correction_out = nn.Linear(hidden_size, belief_size)
        if init == "tf":
            for name, layer in self.named_children():
                if isinstance(layer, nn.Linear):
                    glorot_uniform(layer, parts=2 if name.endswith("_out") and self.state_size else 1)

    @property
    def feature_size(self) -> int:
        """Size of the features the decoder and reward head read."""
        return self.belief_size + self.state_size

    def initial(self, batch: int, device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32) -> State:
        """The all-zero state a sequence starts from."""
        zeros = lambda size: torch.zeros(batch, size, device=device, dtype=dtype)  # noqa: E731
        return {"deter": zeros(self.belief_size), "stoch": zeros(self.state_size),
                "mean": zeros(self.state_size), "std": zeros(self.state_size)}

    def features(self, state: State, mean: bool = False) -> torch.Tensor:
        """Concatenated belief and sample (with `mean`, the belief and the sample's mean)."""
        return torch.cat([state["deter"], state["mean" if mean else "stoch"]], -1)

    def _gaussian(self, out: torch.Tensor, sample: bool, noise: torch.Tensor | None = None
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        mean, raw_std = out.chunk(2, -1)
        std = (F.softplus(raw_std.float()) + self.min_std).to(mean.dtype)  # softplus is slow in bf16 on CPU
        if not sample:
            return mean, mean, std
        noise = torch.randn_like(std) if noise is None else noise.to(std.dtype)
        return mean + std * noise, mean, std

    def prior_step(self, state: State, action: torch.Tensor, sample: bool = True,
                   noise: torch.Tensor | None = None) -> State:
        """p(s_t | s_{t-1}, a_{t-1}): one step of the transition.

        `noise` (B, state_size) is the standard-normal draw of the sample; without it the
        global RNG draws one. Callers that must not depend on the global RNG pass their own.
        """
        hidden = F.relu(self.transition_in(torch.cat([state["stoch"], action], -1)))
        deter = self.gru(hidden, state["deter"]) if self.belief_size else state["deter"]
        if not self.state_size:
            return {"deter": deter, "stoch": state["stoch"], "mean": state["mean"], "std": state["std"]}
        head = F.relu(self.prior_hidden(deter)) if self.belief_size else hidden
        stoch, mean, std = self._gaussian(self.prior_out(head), sample, noise)
        return {"deter": deter, "stoch": stoch, "mean": mean, "std": std}

    def posterior_step(self, prior: State, embed: torch.Tensor, sample: bool = True,
                       noise: torch.Tensor | None = None) -> State:
        """q(s_t | prior_t, o_t): correct the prior with the image embedding (`noise` as in `prior_step`)."""
        if not self.state_size:
            hidden = F.relu(self.correction_hidden(torch.cat([prior["deter"], embed], -1)))
            return {**prior, "deter": prior["deter"] + self.correction_out(hidden)}
        base = prior["deter"] if self.belief_size else torch.cat([prior["mean"], prior["std"]], -1)
        hidden = F.relu(self.posterior_hidden(torch.cat([base, embed], -1)))
        stoch, mean, std = self._gaussian(self.posterior_out(hidden), sample, noise)
        return {**prior, "stoch": stoch, "mean": mean, "std": std}

    def observe(self, embeds: torch.Tensor, actions: torch.Tensor, is_first: torch.Tensor,
                state: State | None = None, sample: bool = True) -> tuple[State, State]:
        """Filter a (B, T) sequence; returns posterior and prior sequences of (B, T, ...) tensors.

        Without `sample` the posterior's mean is its state (the prior's sample is never read here).

        Where `is_first[:, t]` is true the state is reset to the initial state,
        so chunks that start an episode begin from the same zeros as the agent.
        """
        if self.fused:
            return fused_rssm.observe(self, embeds, actions, is_first, state, sample)
        batch, steps = embeds.shape[:2]
        state = state or self.initial(batch, embeds.device, embeds.dtype)
        keep_all = (~is_first).to(embeds.dtype)[..., None]
        posts, priors = [], []
        for t in range(steps):
            keep = keep_all[:, t]
            state = {k: v * keep for k, v in state.items()}
            prior = self.prior_step(state, actions[:, t] * keep)
            state = self.posterior_step(prior, embeds[:, t], sample)
            posts.append(state)
            priors.append(prior)
        return _stack(posts), _stack(priors)

    def imagine(self, state: State, actions: torch.Tensor, sample: bool = True,
                noise: torch.Tensor | None = None) -> State:
        """Roll the prior forward through (B, H, A) actions; returns (B, H, ...) states.

        `noise` (B, H, state_size), if given, is the samples' standard-normal draws.
        """
        states = []
        for t in range(actions.shape[1]):
            state = self.prior_step(state, actions[:, t], sample, None if noise is None else noise[:, t])
            states.append(state)
        return _stack(states)

    def imagine_features(self, state: State, actions: torch.Tensor, sample: bool = True,
                         noise: torch.Tensor | None = None) -> torch.Tensor:
        """Like `imagine`, but keeps only the (B, H, F) features: the planner's hot path."""
        if self.fused:
            return fused_rssm.imagine_features(self, state, actions, sample, noise)
        features = []
        for t in range(actions.shape[1]):
            state = self.prior_step(state, actions[:, t], sample, None if noise is None else noise[:, t])
            features.append(self.features(state))
        return torch.stack(features, 1)


def _stack(states: list[State]) -> State:
    return {key: torch.stack([s[key] for s in states], 1) for key in states[0]}


def flatten_state(states: State) -> State:
    """(B, T, ...) -> (B*T, ...), to start rollouts from every step at once."""
    return {key: value.flatten(0, 1) for key, value in states.items()}  # a zero-size part (SSM belief) too
