"""The PlaNet world model: encoder, latent dynamics, image decoder and reward head."""

from __future__ import annotations

import contextlib
import logging

import torch
from torch import nn

from planetrl.models.networks import MLP, ConvDecoder, ConvEncoder
from planetrl.models.rssm import LatentDynamics, State, Variant, init_like_tf

log = logging.getLogger(__name__)


class WorldModel(nn.Module):
    """Learns p(o_t | s_t), p(r_t | s_t) and the latent dynamics from image sequences.

    `observe` filters observed sequences; `imagine` rolls the prior forward and
    predicts rewards, which is all the planner needs.
    """

    def __init__(self, action_size: int, image_size: int = 64, variant: Variant = "rssm",
                 belief_size: int = 200, state_size: int = 30, hidden_size: int = 200, min_std: float = 0.1,
                 depth: int = 32, reward_layers: int = 2, reward_units: int = 200, init: str = "tf",
                 continuation: bool = False, filter_mean: bool = False) -> None:
        super().__init__()
        self.encoder = ConvEncoder(image_size, depth)
        self.dynamics = LatentDynamics(action_size, self.encoder.embed_size, variant, belief_size, state_size,
                                       hidden_size, min_std, init)
        self.decoder = ConvDecoder(self.dynamics.feature_size, image_size, depth)
        self.reward_head = MLP(self.dynamics.feature_size, 1, reward_layers, reward_units)
        # p(the episode continues after this state), a Bernoulli logit; PlaNet itself has no such head.
        self.continue_head = MLP(self.dynamics.feature_size, 1, reward_layers, reward_units) if continuation else None
        if init == "tf":  # the dynamics initialize themselves (the GRU's gate bias is not zero)
            for part in (self.encoder, self.decoder, self.reward_head, self.continue_head):
                if part is not None:
                    init_like_tf(part)
        self.action_size = action_size
        self.image_size = image_size
        self.filter_mean = filter_mean  # the posterior's mean stands in for its sample (not PlaNet)

    def observe(self, images: torch.Tensor, actions: torch.Tensor, is_first: torch.Tensor,
                state: State | None = None) -> tuple[State, State]:
        """Posterior and prior sequences for (B, T, H, W, 3) preprocessed images."""
        embeds = self.encoder(images)
        return self.dynamics.observe(embeds, actions, is_first, state, sample=not self.filter_mean)

    def filter_step(self, state: State, action: torch.Tensor, image: torch.Tensor,
                    noise: torch.Tensor | None = None) -> State:
        """One belief update for acting: prior through the last action, then the new image.

        Only the posterior is sampled (`noise`: its (B, noise_size) standard-normal draw, else the
        global RNG's); the prior's sample would be overwritten by it, so it is not drawn.
        """
        prior = self.dynamics.prior_step(state, action, sample=False)
        return self.dynamics.posterior_step(prior, self.encoder(image), sample=not self.filter_mean, noise=noise)

    @property
    def noise_size(self) -> int:
        """Standard-normal draws per state sample: 0 for the deterministic variant, and for a model that
        filters and imagines with means (`filter_mean`), which draws none."""
        return 0 if self.filter_mean else self.dynamics.state_size

    def initial(self, batch: int) -> State:
        """Zero state on the model's device."""
        parameter = next(self.parameters())
        return self.dynamics.initial(batch, parameter.device, parameter.dtype)

    def features(self, state: State, mean: bool = False) -> torch.Tensor:
        """The heads' input: belief and stochastic sample (with `mean`, the sample's mean)."""
        return self.dynamics.features(state, mean)

    def decode(self, features: torch.Tensor) -> torch.Tensor:
        """Image means for features (..., F)."""
        return self.decoder(features)

    def reward(self, features: torch.Tensor) -> torch.Tensor:
        """Reward means for features (..., F)."""
        return self.reward_head(features).squeeze(-1)

    @torch.no_grad()
    def open_loop(self, images: torch.Tensor, actions: torch.Tensor, is_first: torch.Tensor,
                  context: int) -> torch.Tensor:
        """Reconstruct the first `context` frames from observations, then predict the rest from actions only.

        Returns (B, T, H, W, 3) image means, as in the paper's open-loop figures.
        """
        posterior, _ = self.observe(images[:, :context], actions[:, :context], is_first[:, :context])
        observed = self.decode(self.features(posterior))
        last = {key: value[:, -1] for key, value in posterior.items()}
        predicted = self.dynamics.imagine_features(last, actions[:, context:], sample=False)
        return torch.cat([observed, self.decode(predicted)], 1)

    def continue_logits(self, features: torch.Tensor) -> torch.Tensor:
        """Bernoulli logits of p(the episode continues after the state) for features (..., F)."""
        if self.continue_head is None:
            raise RuntimeError("this world model has no continuation head (model.continuation=false)")
        return self.continue_head(features).squeeze(-1)

    def imagine(self, state: State, actions: torch.Tensor, discount: float = 1.0,
                noise: torch.Tensor | None = None, sample: bool = True, tail: bool = False) -> torch.Tensor:
        """Expected rewards (B, H) of open-loop (B, H, A) actions from a (B, ...) state.

        Without a continuation head they are the predicted rewards (times discount^t); with one, each is
        also weighted by the predicted probability that the episode is still running when it arrives.
        `noise` (B, H, noise_size) is the prior samples' standard-normal draws (else the global RNG's);
        without `sample` the prior's mean is its state. `tail`: see `expected_rewards`.
        """
        features = self.dynamics.imagine_features(state, actions, sample, noise)
        rewards = self.reward(features)
        continues = torch.sigmoid(self.continue_logits(features).float()) if self.continue_head is not None else None
        return expected_rewards(rewards, continues, discount, tail)


def expected_rewards(rewards: torch.Tensor, continues: torch.Tensor | None, discount: float = 1.0,
                     tail: bool = False) -> torch.Tensor:
    """r_t * discount^t * prod_{k<t} c_k for (B, H) rewards and continuation probabilities.

    The first imagined reward always counts in full (the episode runs while the agent acts); the reward
    of a step that ends the episode counts, and the rewards after it are weighted by c of that step.

    `tail` adds to the last step what the episode would pay past the horizon if its last imagined step
    repeated forever: r_H w_H x g / (1 - g) with g = discount x c_H (c_H = 1 without a head), so that a
    plan that ends the horizon likelier to go on is worth more than the horizon's own steps say.
    Needs discount < 1.
    """
    horizon = rewards.shape[-1]
    weights = discount ** torch.arange(horizon, device=rewards.device, dtype=torch.float32)
    if continues is not None:
        running = torch.cumprod(continues.float(), -1)
        weights = weights * torch.cat([torch.ones_like(running[..., :1]), running[..., :-1]], -1)
    if tail:
        if not discount < 1.0:
            raise ValueError(f"the tail past the horizon needs a discount below 1, got {discount!r}")
        ratio = discount * continues[..., -1].float() if continues is not None else discount
        weights = torch.cat([weights[..., :-1], (weights[..., -1] / (1.0 - ratio)).unsqueeze(-1)], -1)
    return rewards * weights.to(rewards.dtype)


def native_bf16(device: torch.device) -> bool:
    """Whether bf16 arithmetic is native here: CUDA, or a CPU whose oneDNN has bf16 kernels (AVX512-BF16
    or AMX). Elsewhere bf16 is emulated: on an AVX2-only EPYC a 2048^3 matmul ran at 0.3 GFLOP/s against
    122 in fp32, and the `cpu` preset's update and decision 7x and 11x slower (BENCHMARKS.md)."""
    if device.type == "cpu":
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    return device.type == "cuda"


def resolve_precision(precision: str, device: torch.device) -> str:
    """`auto` is bf16 on a CPU with native bf16 (where the planner's agreement check holds,
    BENCHMARKS.md) and fp32 elsewhere, CUDA included; `fp32` and `bf16` stay as they are, with a
    warning when bf16 would be emulated."""
    if precision == "auto":
        return "bf16" if device.type == "cpu" and native_bf16(device) else "fp32"
    if precision == "bf16" and not native_bf16(device):
        log.warning("precision bf16 on a %s without native bf16 is emulated: the cpu preset's update ran 7x and "
                    "its decision 11x slower than in fp32 on an AVX2-only CPU; set it to 'auto' (bf16 only "
                    "where native) or 'fp32'", device.type.upper())
    return precision


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """bf16 autocast for `precision == 'bf16'`, otherwise nothing."""
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def count_parameters(module: nn.Module) -> dict[str, int]:
    """Trainable parameters per direct child module and in total."""
    counts = {name: sum(p.numel() for p in child.parameters() if p.requires_grad)
              for name, child in module.named_children()}
    counts["total"] = sum(counts.values())
    return counts
