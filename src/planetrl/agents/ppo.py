"""Batched PPO (the agents library's algorithm): adaptive KL penalty or clipping, GAE, normalization.

The agent acts for a BatchEnv through the Agent protocol and buffers what it
sees; `update()` learns from the finished episodes in the buffer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical, Normal


@dataclasses.dataclass(frozen=True)
class PPOSettings:
    """PPO hyperparameters (REFERENCE.md's batch-ppo defaults)."""

    discount: float = 0.995
    gae_lambda: float = 0.95
    lr: float = 1e-4
    epochs: int = 25
    minibatches: int = 1  # gradient steps per epoch; 1 = the whole batch at once (batch-ppo)
    objective: str = "kl_penalty"  # or "clip"
    kl_target: float = 0.01
    kl_cutoff_factor: float = 2.0
    kl_cutoff_coef: float = 1000.0
    kl_init_penalty: float = 1.0
    clip: float = 0.2
    init_std: float = 0.35
    policy_layers: tuple[int, ...] = (200, 100)
    value_layers: tuple[int, ...] = (200, 100)
    obs_clip: float = 5.0
    reward_clip: float = 10.0
    normalize_rewards: bool = True


class StreamingNormalizer(nn.Module):
    """Running mean and variance (Chan et al.'s parallel update); normalizes and clips."""

    def __init__(self, size: int, center: bool = True, scale: bool = True, clip: float = 5.0) -> None:
        super().__init__()
        self.center, self.scale, self.clip = center, scale, clip
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))
        self.register_buffer("mean", torch.zeros(size, dtype=torch.float64))
        self.register_buffer("m2", torch.zeros(size, dtype=torch.float64))

    def update(self, values: torch.Tensor) -> None:
        """Fold a batch (N, size) into the running statistics."""
        values = values.detach().to(torch.float64).reshape(-1, self.mean.shape[0])
        count = values.shape[0]
        if count == 0:
            return
        mean = values.mean(0)
        m2 = ((values - mean) ** 2).sum(0)
        delta = mean - self.mean
        total = self.count + count
        self.mean += delta * count / total
        self.m2 += m2 + delta**2 * self.count * count / total
        self.count.fill_(total)

    @property
    def variance(self) -> torch.Tensor:
        return self.m2 / self.count.clamp(min=1)

    def forward(self, values: torch.Tensor) -> torch.Tensor:
        out = values.to(torch.float64)
        if self.center:
            out = out - self.mean
        if self.scale and self.count > 1:
            out = out / (self.variance.sqrt() + 1e-8)
        if self.clip:
            out = out.clamp(-self.clip, self.clip)
        return out.to(values.dtype)


def mlp(in_size: int, out_size: int, layers: Sequence[int]) -> nn.Sequential:
    modules: list[nn.Module] = []
    previous = in_size
    for units in layers:
        modules += [nn.Linear(previous, units), nn.Tanh()]
        previous = units
    modules.append(nn.Linear(previous, out_size))
    return nn.Sequential(*modules)


class ActorCritic(nn.Module):
    """Gaussian policy (learned state-independent std) or categorical policy, and a value function."""

    def __init__(self, obs_size: int, action_space: gym.Space, settings: PPOSettings) -> None:
        super().__init__()
        self.discrete = isinstance(action_space, gym.spaces.Discrete)
        action_size = int(action_space.n) if self.discrete else int(np.prod(action_space.shape))
        self.policy = mlp(obs_size, action_size, settings.policy_layers)
        self.value = mlp(obs_size, 1, settings.value_layers)
        with torch.no_grad():  # small initial outputs, as in batch-ppo
            self.policy[-1].weight.mul_(0.1)
            self.policy[-1].bias.zero_()
        self.log_std = nn.Parameter(torch.full((action_size,), float(np.log(settings.init_std))))

    def distribution(self, obs: torch.Tensor) -> torch.distributions.Distribution:
        out = self.policy(obs)
        if self.discrete:
            return Categorical(logits=out)
        return Normal(out, self.log_std.exp().expand_as(out))

    def log_prob(self, dist: torch.distributions.Distribution, actions: torch.Tensor) -> torch.Tensor:
        logp = dist.log_prob(actions)
        return logp if self.discrete else logp.sum(-1)


def gae(rewards: np.ndarray, values: np.ndarray, next_values: np.ndarray, terminals: np.ndarray,
        discount: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Generalized advantage estimation over one episode; returns (advantages, value targets).

    `next_values[t]` is V(s_{t+1}); at a true terminal it is ignored, so a
    time-limit cut bootstraps from the value of the last observation.
    """
    advantages = np.zeros(len(rewards), np.float64)
    running = 0.0
    for t in reversed(range(len(rewards))):
        bootstrap = 0.0 if terminals[t] else discount * next_values[t]
        delta = rewards[t] + bootstrap - values[t]
        running = delta + (0.0 if terminals[t] else discount * lam * running)
        advantages[t] = running
    return advantages, advantages + values


def adapt_penalty(penalty: float, kl: float, target: float) -> float:
    """batch-ppo's rule: grow the penalty 1.5x above 1.3 x target, shrink it below target / 1.3."""
    if kl > 1.3 * target:
        return penalty * 1.5
    if kl < target / 1.3:
        return penalty / 1.5
    return penalty


class PPOAgent:
    """Acts for a batch of envs (Agent protocol), buffers per-env trajectories, and learns in `update()`."""

    def __init__(self, obs_size: int, action_space: gym.Space, num_envs: int, settings: PPOSettings,
                 seed: int = 0, device: str | torch.device = "cpu") -> None:
        torch.manual_seed(seed)
        self.settings = settings
        self.device = torch.device(device)
        self.net = ActorCritic(obs_size, action_space, settings).to(self.device)
        self.obs_norm = StreamingNormalizer(obs_size, clip=settings.obs_clip).to(self.device)
        self.reward_norm = StreamingNormalizer(1, center=False, clip=settings.reward_clip).to(self.device)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=settings.lr)
        self.penalty = settings.kl_init_penalty
        self.action_space = action_space
        self.num_envs = num_envs
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        self._pending: dict[str, torch.Tensor] | None = None
        self._open: dict[int, list[dict[str, Any]]] = {i: [] for i in range(num_envs)}
        self.episodes: list[list[dict[str, Any]]] = []

    # ------------------------------------------------------------ acting

    def reset(self, indices: Sequence[int]) -> None:
        for index in indices:
            self._open[index] = []

    def _obs(self, obs: dict[str, np.ndarray]) -> torch.Tensor:
        # A copy: the observation is kept in the buffer until the update.
        return torch.tensor(obs["state"], dtype=torch.float32, device=self.device)

    @torch.no_grad()
    def act(self, obs: dict[str, np.ndarray], explore: bool = True) -> np.ndarray:
        raw = self._obs(obs)
        dist = self.net.distribution(self.obs_norm(raw))
        if explore:
            if self.net.discrete:
                actions = torch.multinomial(dist.probs, 1, generator=self.generator)[:, 0]
            else:
                noise = torch.randn(dist.mean.shape, generator=self.generator, device=self.device)
                actions = dist.mean + dist.stddev * noise
        else:
            actions = dist.probs.argmax(-1) if self.net.discrete else dist.mean
        self._pending = {"obs": raw, "action": actions, "logp": self.net.log_prob(dist, actions)}
        out = actions.cpu().numpy()
        return out if self.net.discrete else np.clip(out, -1.0, 1.0).astype(np.float32)

    def observe(self, transition: dict[str, Any]) -> None:
        """Buffer the step of every active env; an env's episode closes at its last step."""
        if self._pending is None:
            return
        next_obs = torch.as_tensor(transition["obs"]["state"], dtype=torch.float32, device=self.device)
        for row, index in enumerate(transition["indices"]):
            self._open[index].append({
                "obs": self._pending["obs"][index], "action": self._pending["action"][index],
                "logp": self._pending["logp"][index], "reward": float(transition["reward"][row]),
                "next_obs": next_obs[row], "terminal": bool(transition["terminated"][row]),
            })
            if transition["terminated"][row] or transition["truncated"][row]:
                self.episodes.append(self._open[index])
                self._open[index] = []

    # ------------------------------------------------------------ learning

    def update(self) -> dict[str, float]:
        """One PPO update on the buffered finished episodes; clears the buffer."""
        if not self.episodes:
            raise RuntimeError("PPO update with no finished episode in the buffer")
        s = self.settings
        steps = [step for episode in self.episodes for step in episode]
        obs = torch.stack([x["obs"] for x in steps])
        next_obs = torch.stack([x["next_obs"] for x in steps])
        actions = torch.stack([x["action"] for x in steps])
        old_logp = torch.stack([x["logp"] for x in steps])
        rewards = torch.tensor([x["reward"] for x in steps], dtype=torch.float32, device=self.device)
        self.obs_norm.update(obs)
        if s.normalize_rewards:
            self.reward_norm.update(rewards[:, None])
            rewards = self.reward_norm(rewards[:, None])[:, 0]
        with torch.no_grad():
            normalized, next_normalized = self.obs_norm(obs), self.obs_norm(next_obs)
            values = self.net.value(normalized)[:, 0].cpu().numpy()
            next_values = self.net.value(next_normalized)[:, 0].cpu().numpy()
            old_dist = self.net.distribution(normalized)
            old_logp = self.net.log_prob(old_dist, actions)  # under the updated observation statistics
        advantages, targets, start = [], [], 0
        for episode in self.episodes:
            end = start + len(episode)
            a, r = gae(rewards[start:end].cpu().numpy(), values[start:end], next_values[start:end],
                       np.array([x["terminal"] for x in episode]), s.discount, s.gae_lambda)
            advantages.append(a)
            targets.append(r)
            start = end
        adv = torch.as_tensor(np.concatenate(advantages), dtype=torch.float32, device=self.device)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        target = torch.as_tensor(np.concatenate(targets), dtype=torch.float32, device=self.device)
        old_params = (old_dist.logits,) if self.net.discrete else (old_dist.mean, old_dist.stddev)
        for _ in range(s.epochs):
            order = torch.randperm(len(steps), generator=self.generator, device=self.device)
            for part in order.chunk(max(s.minibatches, 1)):
                old = Categorical(logits=old_params[0][part]) if self.net.discrete else \
                    Normal(old_params[0][part], old_params[1][part])
                policy_loss, value_loss = self._losses(normalized[part], actions[part], old_logp[part], old,
                                                       adv[part], target[part])
                self.optimizer.zero_grad(set_to_none=True)
                (policy_loss + value_loss).backward()
                self.optimizer.step()
        with torch.no_grad():
            dist = self.net.distribution(normalized)
            kl_final = torch.distributions.kl_divergence(old_dist, dist)
            kl_value = float(kl_final.mean() if self.net.discrete else kl_final.sum(-1).mean())
        if s.objective != "clip":
            self.penalty = adapt_penalty(self.penalty, kl_value, s.kl_target)
        returns = [sum(x["reward"] for x in episode) for episode in self.episodes]
        self.episodes = []
        return {"kl": kl_value, "penalty": self.penalty, "policy_loss": policy_loss.item(),
                "value_loss": value_loss.item(), "return": float(np.mean(returns)), "steps": len(steps)}

    def _losses(self, obs: torch.Tensor, actions: torch.Tensor, old_logp: torch.Tensor,
                old_dist: torch.distributions.Distribution, adv: torch.Tensor, target: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """Policy loss (KL-penalized or clipped surrogate) and value loss on one (mini)batch."""
        s = self.settings
        dist = self.net.distribution(obs)
        # Bounded so that one sample deep in a tail cannot overflow exp() and wreck Adam's moments.
        ratio = (self.net.log_prob(dist, actions) - old_logp).clamp(-10.0, 10.0).exp()
        kl = torch.distributions.kl_divergence(old_dist, dist)
        kl = kl.mean() if self.net.discrete else kl.sum(-1).mean()
        if s.objective == "clip":
            policy_loss = -torch.min(ratio * adv, ratio.clamp(1 - s.clip, 1 + s.clip) * adv).mean()
        else:
            cutoff = s.kl_cutoff_factor * s.kl_target
            policy_loss = -(ratio * adv).mean() + self.penalty * kl + s.kl_cutoff_coef * torch.relu(kl - cutoff) ** 2
        value_loss = 0.5 * ((self.net.value(obs)[:, 0] - target) ** 2).mean()
        return policy_loss, value_loss

    def state_dict(self) -> dict[str, Any]:
        return {"net": self.net.state_dict(), "obs_norm": self.obs_norm.state_dict(),
                "reward_norm": self.reward_norm.state_dict(), "optimizer": self.optimizer.state_dict(),
                "penalty": self.penalty, "generator": self.generator.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.net.load_state_dict(state["net"])
        self.obs_norm.load_state_dict(state["obs_norm"])
        self.reward_norm.load_state_dict(state["reward_norm"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.penalty = float(state["penalty"])
        self.generator.set_state(state["generator"])
