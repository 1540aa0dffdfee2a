"""The RSSM's two hot loops, written for speed with the same parameters and the same arithmetic.

`observe` (training) and `imagine_features` (planning) run one small step per
time index, so their cost is per-operation overhead, not FLOPs. These versions:

- project everything that does not depend on the recurrence (the embeddings
  into the posterior's hidden layer, the actions into the transition's) for
  all steps in one matrix product before the loop;
- split each concatenation [x, h] W into x W_x + h W_h with in-place `addmm`,
  so no step allocates a concatenation;
- run training's loop in float32 with autocast off: at the preset's batch of
  16 (and at 8) bf16's casts cost more than its arithmetic saves, by 17-45%
  (`benchmarks/rssm_loop_precision.py`); the planner's rollout
  (hundreds of candidates) runs in the autocast dtype with its weights cast
  once per call, not once per operation (BENCHMARKS.md).

They draw their noise in the same order as the step-by-step forms in
`rssm.py`, so in float32 both give the same numbers; tests hold them equal.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

State = dict[str, torch.Tensor]


def _compute_dtype(device: torch.device) -> torch.dtype:
    """The autocast dtype where autocast is on (planning in bf16), else float32."""
    return torch.get_autocast_dtype(device.type) if torch.is_autocast_enabled(device.type) else torch.float32


def _no_autocast(device: torch.device) -> torch.autocast:
    return torch.autocast(device.type, enabled=False)


class _Cell:
    """The transition's weights, transposed, cast and joined once per call.

    Matrices that read the same input are joined so each step runs four
    products: stoch -> transition hidden; hidden -> (gates, candidate);
    reset * belief -> candidate; new belief -> (prior hidden, next step's gates).
    """

    def __init__(self, dynamics: torch.nn.Module, dtype: torch.dtype = torch.float32) -> None:
        state, hidden, belief = dynamics.state_size, dynamics.transition_in.out_features, dynamics.belief_size
        cast = lambda tensor: tensor.to(dtype)  # noqa: E731
        gates, candidate = dynamics.gru.gates, dynamics.gru.candidate
        self.stoch_in = cast(dynamics.transition_in.weight[:, :state].t())
        self.action_in = cast(dynamics.transition_in.weight[:, state:])
        self.transition_bias = cast(dynamics.transition_in.bias)
        self.from_hidden = cast(torch.cat([gates.weight[:, :hidden], candidate.weight[:, :hidden]]).t())
        self.from_hidden_bias = cast(torch.cat([gates.bias, candidate.bias]))
        self.gates_h = cast(gates.weight[:, hidden:].t())
        self.candidate_h = cast(candidate.weight[:, hidden:].t())
        self.from_belief = cast(torch.cat([dynamics.prior_hidden.weight, gates.weight[:, hidden:]]).t())
        self.from_belief_bias = cast(torch.cat([dynamics.prior_hidden.bias, gates.bias.new_zeros(2 * belief)]))
        self.prior_out = cast(dynamics.prior_out.weight), cast(dynamics.prior_out.bias)
        self.posterior_out = cast(dynamics.posterior_out.weight), cast(dynamics.posterior_out.bias)
        self.min_std, self.belief, self.dtype = dynamics.min_std, belief, dtype
        self.prior_units = dynamics.prior_hidden.out_features

    def gate_input(self, deter: torch.Tensor) -> torch.Tensor:
        """The belief's part of the gates, for a first step (later steps get it from `step`)."""
        return deter @ self.gates_h

    def step(self, stoch: torch.Tensor, deter: torch.Tensor, gate_input: torch.Tensor, action_part: torch.Tensor
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One transition: (new belief, the prior's hidden layer, the next step's gate input).

        `action_part` is the projected action plus the transition's bias.
        """
        hidden = torch.addmm(action_part, stoch, self.stoch_in).relu_()
        from_hidden = torch.addmm(self.from_hidden_bias, hidden, self.from_hidden)
        reset, update = (from_hidden[:, :2 * self.belief] + gate_input).sigmoid_().chunk(2, -1)
        candidate = torch.addmm(from_hidden[:, 2 * self.belief:], reset * deter, self.candidate_h).tanh_()
        deter = candidate + update * (deter - candidate)
        from_belief = torch.addmm(self.from_belief_bias, deter, self.from_belief)
        return deter, from_belief[:, :self.prior_units].relu(), from_belief[:, self.prior_units:]

    def gaussian(self, hidden: torch.Tensor, out: tuple[torch.Tensor, torch.Tensor], sample: bool,
                 noise: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        mean, raw_std = F.linear(hidden, *out).chunk(2, -1)
        std = (F.softplus(raw_std.float()) + self.min_std).to(self.dtype)  # softplus is slow in bf16 on CPU
        if not sample:
            return mean, mean, std
        return mean + std * (torch.randn_like(std) if noise is None else noise), mean, std


def observe(dynamics: torch.nn.Module, embeds: torch.Tensor, actions: torch.Tensor, is_first: torch.Tensor,
            state: State | None, sample: bool = True, dtype: torch.dtype = torch.float32) -> tuple[State, State]:
    """`LatentDynamics.observe` for the RSSM with the block GRU; (B, T, ...) outputs in `dtype`.

    Training runs it in float32; `dtype=torch.bfloat16` (weights cast once per call) is there to measure
    that choice (benchmarks/rssm_loop_precision.py).
    """
    with _no_autocast(embeds.device):
        batch, steps = embeds.shape[:2]
        cell = _Cell(dynamics, dtype)
        keep_all = (~is_first).to(dtype)[..., None]
        action_parts = F.linear(actions.to(dtype) * keep_all, cell.action_in, cell.transition_bias)
        posterior_hidden = dynamics.posterior_hidden
        deter_post = posterior_hidden.weight[:, :dynamics.belief_size].t().to(dtype)
        embed_parts = F.linear(embeds.to(dtype), posterior_hidden.weight[:, dynamics.belief_size:].to(dtype),
                               posterior_hidden.bias.to(dtype))
        start = state or dynamics.initial(batch, embeds.device)
        deter, stoch = start["deter"].to(dtype), start["stoch"].to(dtype)
        gate_input = cell.gate_input(deter)
        posts: list[tuple[torch.Tensor, ...]] = []
        priors: list[tuple[torch.Tensor, ...]] = []
        for t in range(steps):
            keep = keep_all[:, t]
            deter, prior_hidden, gate_input = cell.step(stoch * keep, deter * keep, gate_input * keep,
                                                        action_parts[:, t])
            prior = cell.gaussian(prior_hidden, cell.prior_out, sample=True)
            hidden = torch.addmm(embed_parts[:, t], deter, deter_post).relu_()
            post = cell.gaussian(hidden, cell.posterior_out, sample=sample)
            stoch = post[0]
            priors.append((deter, *prior))
            posts.append((deter, *post))
        return _stack(posts), _stack(priors)


def imagine_features(dynamics: torch.nn.Module, state: State, actions: torch.Tensor, sample: bool,
                     noise: torch.Tensor | None = None) -> torch.Tensor:
    """`LatentDynamics.imagine_features` for the RSSM with the block GRU: (B, H, F) features.

    Under autocast the whole rollout runs in the autocast dtype with its weights cast once per call.
    """
    dtype = _compute_dtype(actions.device)
    with _no_autocast(actions.device):
        cell = _Cell(dynamics, dtype)
        action_parts = F.linear(actions.to(dtype), cell.action_in, cell.transition_bias)
        deter, stoch = state["deter"].to(dtype), state["stoch"].to(dtype)
        features = actions.new_empty((*actions.shape[:2], dynamics.feature_size), dtype=dtype)
        gate_input = cell.gate_input(deter)
        noise = None if noise is None else noise.to(dtype)
        for t in range(actions.shape[1]):
            deter, prior_hidden, gate_input = cell.step(stoch, deter, gate_input, action_parts[:, t])
            stoch = cell.gaussian(prior_hidden, cell.prior_out, sample, None if noise is None else noise[:, t])[0]
            features[:, t, :dynamics.belief_size] = deter
            features[:, t, dynamics.belief_size:] = stoch
        return features


def _stack(steps: list[tuple[torch.Tensor, ...]]) -> State:
    return {key: torch.stack([step[i] for step in steps], 1) for i, key in enumerate(("deter", "stoch", "mean", "std"))}
