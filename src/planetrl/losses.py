"""PlaNet's objective: image and reward likelihoods, KL with free nats, latent overshooting."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator

import torch
from torch.nn import functional as F

from planetrl.models.rssm import State, flatten_state
from planetrl.models.world_model import WorldModel
from planetrl.presets import PAPER

_LOG_2PI = math.log(2 * math.pi)


@dataclasses.dataclass(frozen=True)
class LossWeights:
    """Scales of the objective's terms (the paper's values by default, docs/PAPER.md)."""

    free_nats: float = PAPER["loss.free_nats"]
    kl_scale: float = PAPER["loss.kl_scale"]
    reward_scale: float = PAPER["loss.reward_scale"]
    image_scale: float = 1.0  # the image NLL's weight: 1 / variance of its Gaussian, 1 in PlaNet
    overshooting: int = PAPER["loss.overshooting"]  # 0 or 1 = the ordinary KL only; D > 1 adds distances 2..D
    overshooting_scale: float = 1.0  # weight of the mean over distances 2..D; the one-step KL keeps weight 1
    continuation_scale: float = 1.0  # weight of the continuation head's Bernoulli log-likelihood, when it exists
    terminal_reward: float = 0.0  # added to the reward target where is_terminal: a learned crash penalty
    continuation_open_loop: int = 0  # K > 0: the continuation head also learns from priors 1..K steps ahead
    decode_mean: bool = False  # the image term decodes the posterior's mean, not its sample (not PlaNet)


def mean_gaussian_nll(target: torch.Tensor, mean: torch.Tensor, dims: int) -> torch.Tensor:
    """-log N(target; mean, 1) summed over the last `dims` dimensions, averaged over the rest."""
    count = math.prod(target.shape[-dims:]) if dims else 1
    squared_sum = F.mse_loss(mean.float(), target.float(), reduction="sum")
    leading = target.numel() // count
    return 0.5 * squared_sum / leading + 0.5 * _LOG_2PI * count


def gaussian_kl(lhs: State, rhs: State) -> torch.Tensor:
    """KL(lhs || rhs) of diagonal Gaussians, summed over the state dimensions."""
    mean1, std1 = lhs["mean"].float(), lhs["std"].float()
    mean2, std2 = rhs["mean"].float(), rhs["std"].float()
    kl = torch.log(std2 / std1) + (std1**2 + (mean1 - mean2) ** 2) / (2 * std2**2) - 0.5
    return kl.sum(-1)


def free_nats(kl: torch.Tensor, nats: float, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Mean over (batch, time) of max(KL, nats), as in the original PlaNet code.

    The allowance applies to every step separately, so steps whose KL exceeds
    it still train the prior while the mean KL is below it (clamping the mean
    instead would stop all KL gradients, and leave the prior untrained, for as
    long as the mean stays low). Masked steps are left out of the mean.
    """
    clamped = torch.clamp(kl, min=nats)
    return clamped.mean() if mask is None else masked_mean(clamped, mask)


def _detach(state: State) -> State:
    return {key: value.detach() for key, value in state.items()}


def _shift(x: torch.Tensor, d: int) -> torch.Tensor:
    """Value at t+d for every t of (B, T, ...); past the end the last step repeats (masked, but finite)."""
    steps = x.shape[1]
    return torch.cat([x[:, d:], x[:, -1:].expand(-1, min(d, steps), *x.shape[2:])], 1)[:, :steps]


def open_loop_priors(model: WorldModel, posterior: State, actions: torch.Tensor, is_first: torch.Tensor,
                     distance: int) -> Iterator[tuple[int, State, torch.Tensor]]:
    """(d, prior state (B*T, ...), valid (B, T)) for d = 1..D.

    From the posterior at every step t the prior is rolled through the actions t+1..t+d, so entry t of
    distance d is the imagined state for step t+d. Entries that run past the sequence or across an
    episode start are not valid.
    """
    batch, steps = actions.shape[:2]
    state = flatten_state(posterior)
    valid = torch.ones(batch, steps, dtype=torch.bool, device=actions.device)
    for d in range(1, distance + 1):
        state = model.dynamics.prior_step(state, _shift(actions, d).reshape(batch * steps, -1))
        valid = valid & ~torch.cat([is_first[:, d:], torch.ones_like(is_first[:, :d])], 1)
        yield d, state, valid


def overshooting_kls(model: WorldModel, posterior: State, actions: torch.Tensor, is_first: torch.Tensor,
                     distance: int, priors: list[tuple[int, State, torch.Tensor]] | None = None,
                     ) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(KL, mask), each (B, T), for every distance d = 1..D.

    Each open-loop prior (`open_loop_priors`, or the first D of `priors` when the caller rolled them
    already) is compared with the posterior at t+d, which is held fixed (no gradient). Distance 1 is
    the ordinary KL term, shifted by one step.
    """
    batch, steps = actions.shape[:2]
    targets = _detach(posterior)
    results = []
    rollout = priors[:distance] if priors is not None else open_loop_priors(model, posterior, actions, is_first,
                                                                             distance)
    for d, state, valid in rollout:
        target = {key: _shift(value, d).reshape(batch * steps, *value.shape[2:]) for key, value in targets.items()}
        results.append((gaussian_kl(target, state).reshape(batch, steps), valid))
    return results


def open_loop_continuation_nll(model: WorldModel, batch: dict[str, torch.Tensor],
                               priors: list[tuple[int, State, torch.Tensor]]) -> torch.Tensor:
    """`continuation_loss` on the prior's states imagined 1..D steps ahead with the actions taken.

    The planner reads the head on imagined states, which must foresee a crash before its frame is
    seen; trained on the posterior alone, the head can learn to read the crash from the image.
    `priors` is `open_loop_priors`' rollout; every valid (step, distance) pair counts once.
    """
    size, steps = batch["action"].shape[:2]
    logits = torch.stack([model.continue_logits(model.features(state)).reshape(size, steps)
                          for _, state, _ in priors])
    shifted = {key: torch.stack([_shift(batch[key], d) for d, _, _ in priors]) for key in ("is_last", "is_terminal")}
    valid = torch.stack([valid for _, _, valid in priors])
    return continuation_loss(logits, shifted["is_last"], shifted["is_terminal"], valid)


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of `values` where `mask` holds."""
    mask = mask.to(values.dtype)
    return (values * mask).sum() / mask.sum().clamp(min=1)


def continuation_loss(logits: torch.Tensor, is_last: torch.Tensor, is_terminal: torch.Tensor,
                      valid: torch.Tensor | None = None) -> torch.Tensor:
    """Bernoulli NLL of "the episode continues" (1 - is_terminal) per step, averaged over `valid` steps.

    A time-limit end (is_last without is_terminal) says nothing about the state: it is left out.
    """
    target = (~is_terminal.bool()).float()
    nll = F.binary_cross_entropy_with_logits(logits.float(), target, reduction="none")
    mask = ~(is_last.bool() & ~is_terminal.bool())
    return masked_mean(nll, mask if valid is None else mask & valid)


def world_model_loss(model: WorldModel, batch: dict[str, torch.Tensor],
                     weights: LossWeights) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Total loss and its named terms for a batch of (B, T) sequences."""
    images, actions, is_first = batch["image"], batch["action"], batch["is_first"]
    posterior, prior = model.observe(images, actions, is_first)
    features = model.features(posterior)
    decoded = model.features(posterior, mean=True) if weights.decode_mean else features
    image_nll = mean_gaussian_nll(images, model.decode(decoded), dims=3)
    reward = batch["reward"]
    if weights.terminal_reward:
        reward = reward + weights.terminal_reward * batch["is_terminal"].to(reward.dtype)
    reward_nll = mean_gaussian_nll(reward, model.reward(features), dims=0)
    metrics = {"image_nll": image_nll.detach(), "reward_nll": reward_nll.detach()}
    loss = weights.image_scale * image_nll + weights.reward_scale * reward_nll
    head_distance = weights.continuation_open_loop if model.continue_head is not None else 0
    overshoot = weights.overshooting if model.dynamics.state_size and weights.overshooting > 1 else 0
    # One open-loop rollout serves both the overshooting KL and the head's open-loop term.
    distance = max(head_distance, overshoot)
    priors = list(open_loop_priors(model, posterior, actions, is_first, distance)) if distance else []
    if model.continue_head is not None:
        continuation_nll = continuation_loss(model.continue_logits(features), batch["is_last"], batch["is_terminal"])
        metrics["continuation_nll"] = continuation_nll.detach()
        loss = loss + weights.continuation_scale * continuation_nll
        if head_distance:
            open_loop_nll = open_loop_continuation_nll(model, batch, priors[:head_distance])
            metrics["continuation_open_loop_nll"] = open_loop_nll.detach()
            loss = loss + weights.continuation_scale * open_loop_nll
    if model.dynamics.state_size:
        kl = gaussian_kl(posterior, prior)
        kl_term = free_nats(kl, weights.free_nats)
        metrics["kl"] = kl.mean().detach()
        loss = loss + weights.kl_scale * kl_term
        if overshoot:
            # As the original: the one-step KL keeps its full weight, and the overshooting term is the mean
            # of the free-nats KL over every valid (step, distance) pair of distances 2..D.
            pairs = overshooting_kls(model, posterior, actions, is_first, overshoot, priors)[1:]
            kls = torch.stack([kl for kl, _ in pairs])
            masks = torch.stack([mask for _, mask in pairs])
            loss = loss + weights.overshooting_scale * free_nats(kls, weights.free_nats, masks)
            metrics["overshooting_kl"] = masked_mean(kls, masks).detach()
    metrics["loss"] = loss.detach()
    return loss, metrics
