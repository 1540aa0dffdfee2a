"""Batched PPO in the form of batch-ppo (the TensorFlow agents library), with a few named options.

batch-ppo's form, the default:
- policy and value MLPs with ReLU; the policy mean squashed with tanh; a state-independent std
  `softplus(p)` starting at `init_std`; Glorot-uniform hidden layers, and a mean layer 10x smaller;
- advantages: the discounted Monte-Carlo return of the normalized rewards minus the value, with no
  bootstrap at the end of an episode, normalized by their mean and std over the episodes' steps (batch-ppo's
  moments also take in the padding of its fixed-size memory, which holds stale steps; here it is left out);
- the value target is the discounted return within each update sequence: to the episode's end for whole
  episodes, to the chunk's end for chunks, as batch-ppo's value loss recomputes it from the chunk's rewards
  (`value_target="episode"` takes the return to the episode's end for chunks too);
- the update runs over sequences (whole episodes, or chunks of `chunk_length` steps) in minibatches
  of `batch_size` sequences (without one, as many sequences as episodes, in order), drawn through
  tf.data's shuffle buffer of half the episodes as batch-ppo's `iterate_sequences` does (`shuffle="epoch"`
  draws a fresh permutation each epoch); each sequence's policy loss
  is its mean surrogate plus `penalty * KL` plus the cutoff `coef * (KL - factor * target)^2` where its
  KL exceeds the cutoff, then the mean over sequences (per-sequence means divide by the padded length,
  as batch-ppo does: the chunk length, or for whole episodes the episode limit);
- the penalty grows 1.5x when the update's KL exceeds 1.3 x target and shrinks 1.5x below 0.7 x target;
- streaming normalizers (unbiased variance, std sqrt(var + 1e-4), then + 1e-8) updated at every step;
- the behaviour policy's mean and std (or logits) are stored at acting time.

Options: `advantage="gae"` (GAE(lambda) with bootstrap at time-limit ends; its value target is the
lambda-return), `value_target="episode"`, `activation="tanh"`, `squash_mean=False`, and `objective="clip"`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical, Distribution, Normal, kl_divergence
from torch.nn import functional as F

from planetrl.agents.normalize import StreamingNormalizer
from planetrl.envs.spaces import action_size
from planetrl.models.rssm import glorot_uniform

__all__ = ["PPOAgent", "PPOSettings", "StreamingNormalizer", "adapt_penalty", "buffer_shuffle", "chunk_returns",
           "discounted_return", "gae"]


@dataclasses.dataclass(frozen=True)
class PPOSettings:
    """PPO hyperparameters; the defaults are batch-ppo's."""

    discount: float = 0.995
    advantage: str = "return"  # "return": Monte-Carlo return minus value (batch-ppo); or "gae"
    value_target: str = "chunk"  # with advantage="return": the return to the sequence's end (batch-ppo), or "episode"
    gae_lambda: float = 0.95  # only with advantage="gae"
    lr: float = 1e-4
    epochs: int = 25
    chunk_length: int = 0  # 0 = whole episodes are the update's sequences
    batch_size: int = 0  # sequences per gradient step; 0 = as many as episodes, in order
    shuffle: str = "buffer"  # minibatch order: tf.data's buffer of half the episodes (batch-ppo), or "epoch"
    objective: str = "kl_penalty"  # or "clip"
    kl_target: float = 0.01
    kl_cutoff_factor: float = 2.0
    kl_cutoff_coef: float = 1000.0
    kl_init_penalty: float = 1.0
    clip: float = 0.2
    init_std: float = 0.35
    policy_layers: tuple[int, ...] = (200, 100)
    value_layers: tuple[int, ...] = (200, 100)
    activation: str = "relu"
    squash_mean: bool = True
    obs_clip: float = 5.0
    reward_clip: float = 10.0
    normalize_rewards: bool = True

    def __post_init__(self) -> None:
        choices = {"advantage": ("return", "gae"), "value_target": ("chunk", "episode"), "shuffle": ("buffer", "epoch"),
                   "objective": ("kl_penalty", "clip"), "activation": ("relu", "tanh")}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"PPO {name} {getattr(self, name)!r} is not one of {', '.join(allowed)}")


def mlp(in_size: int, out_size: int, layers: Sequence[int], activation: str) -> nn.Sequential:
    """Dense layers with ReLU or tanh, Glorot-uniform weights and zero biases (TF's defaults)."""
    act = {"relu": nn.ReLU, "tanh": nn.Tanh}[activation]
    modules: list[nn.Module] = []
    previous = in_size
    for units in layers:
        modules += [nn.Linear(previous, units), act()]
        previous = units
    modules.append(nn.Linear(previous, out_size))
    for module in modules:
        if isinstance(module, nn.Linear):
            glorot_uniform(module)
    return nn.Sequential(*modules)


class ActorCritic(nn.Module):
    """Gaussian policy (tanh mean, state-independent softplus std) or categorical policy, and a value MLP."""

    def __init__(self, obs_size: int, action_space: gym.Space, settings: PPOSettings) -> None:
        super().__init__()
        self.discrete = isinstance(action_space, gym.spaces.Discrete)
        self.squash = settings.squash_mean and not self.discrete
        size = action_size(action_space)
        self.policy = mlp(obs_size, size, settings.policy_layers, settings.activation)
        self.value = mlp(obs_size, 1, settings.value_layers, settings.activation)
        with torch.no_grad():  # batch-ppo: variance scaling with factor 0.1 (truncated normal, fan-in)
            out = self.policy[-1]
            std = math.sqrt(1.3 * 0.1 / out.in_features)
            nn.init.trunc_normal_(out.weight, std=std, a=-2 * std, b=2 * std)
        self.std_param = nn.Parameter(torch.full((size,), math.log(math.expm1(settings.init_std))))

    def params(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        """The policy's parameters: `logits`, or `mean` and `std`."""
        out = self.policy(obs)
        if self.discrete:
            return {"logits": out}
        mean = torch.tanh(out) if self.squash else out
        return {"mean": mean, "std": F.softplus(self.std_param).expand_as(mean)}

    def distribution(self, params: dict[str, torch.Tensor]) -> Distribution:
        if self.discrete:
            return Categorical(logits=params["logits"])
        return Normal(params["mean"], params["std"])

    def log_prob(self, dist: Distribution, actions: torch.Tensor) -> torch.Tensor:
        logp = dist.log_prob(actions)
        return logp if self.discrete else logp.sum(-1)

    def kl(self, old: Distribution, new: Distribution) -> torch.Tensor:
        kl = kl_divergence(old, new)
        return kl if self.discrete else kl.sum(-1)


def discounted_return(rewards: np.ndarray, discount: float) -> np.ndarray:
    """sum_k discount^k r_{t+k} to the end of the episode, with no bootstrap (batch-ppo)."""
    returns = np.zeros(len(rewards), np.float64)
    running = 0.0
    for t in reversed(range(len(rewards))):
        running = rewards[t] + discount * running
        returns[t] = running
    return returns


def chunk_returns(rewards: np.ndarray, discount: float, chunk: int) -> np.ndarray:
    """The discounted return within each chunk of `chunk` steps (the last one shorter); the episode's for 0."""
    if not chunk:
        return discounted_return(rewards, discount)
    return np.concatenate([discounted_return(rewards[start:start + chunk], discount)
                           for start in range(0, len(rewards), chunk)])


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
    """batch-ppo's rule: grow the penalty 1.5x above 1.3 x target, shrink it 1.5x below 0.7 x target."""
    if kl > 1.3 * target:
        return penalty * 1.5
    if kl < 0.7 * target:
        return penalty / 1.5
    return penalty


def buffer_shuffle(stream: torch.Tensor, buffer: int, generator: torch.Generator) -> torch.Tensor:
    """tf.data's `shuffle(buffer)`: each output is drawn uniformly from a buffer that the stream refills in order.

    batch-ppo shuffles the stream of every epoch's sequences this way, with a buffer of half the episodes, so a
    minibatch holds sequences from a window of the stream, not a draw from the whole batch.
    """
    items = stream.tolist()
    window, out, following = items[:buffer], [], buffer
    # One draw for the whole stream, on the generator's device (an agent on CUDA has a CUDA generator).
    for uniform in torch.rand(len(items), generator=generator, device=generator.device, dtype=torch.float64).tolist():
        index = min(int(uniform * len(window)), len(window) - 1)
        out.append(window[index])
        if following < len(items):
            window[index] = items[following]
            following += 1
        else:
            window.pop(index)
    return torch.tensor(out, dtype=stream.dtype)


def pad(sequences: list[torch.Tensor], length: int) -> torch.Tensor:
    """(N, length, ...) from N tensors of at most `length` steps, zero-padded."""
    out = sequences[0].new_zeros((len(sequences), length, *sequences[0].shape[1:]))
    for row, sequence in enumerate(sequences):
        out[row, : len(sequence)] = sequence
    return out


def split(tensor: torch.Tensor, chunk: int) -> list[torch.Tensor]:
    """One episode's (T, ...) tensor as chunks of `chunk` steps (the last one shorter); all of it for 0."""
    return list(tensor.split(chunk)) if chunk else [tensor]


class PPOAgent:
    """Acts for a batch of envs (Agent protocol), buffers per-env trajectories, and learns in `update()`.

    Only exploring steps are buffered, so evaluation (`explore=False`) leaves the buffer alone.
    `max_length` is the episode limit: batch-ppo's memory holds episodes of that many steps, so whole-episode
    sequences count as padded to it in their per-sequence means, and the update's KL is averaged over it; 0
    takes the longest episode of each batch.
    """

    def __init__(self, obs_size: int, action_space: gym.Space, num_envs: int, settings: PPOSettings,
                 seed: int = 0, device: str | torch.device = "cpu", max_length: int = 0) -> None:
        torch.manual_seed(seed)
        self.settings = settings
        self.max_length = max_length
        self.device = torch.device(device)
        self.net = ActorCritic(obs_size, action_space, settings).to(self.device)
        self.obs_norm = StreamingNormalizer(obs_size, clip=settings.obs_clip).to(self.device)
        self.reward_norm = StreamingNormalizer(1, center=False, clip=settings.reward_clip).to(self.device)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=settings.lr)
        self.penalty = settings.kl_init_penalty
        self.action_space = action_space
        self.num_envs = num_envs
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        self._pending: dict[str, Any] | None = None
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
        params = self.net.params(self.obs_norm(raw))
        dist = self.net.distribution(params)
        if explore:
            if self.net.discrete:
                actions = torch.multinomial(dist.probs, 1, generator=self.generator)[:, 0]
            else:
                noise = torch.randn(dist.mean.shape, generator=self.generator, device=self.device)
                actions = dist.mean + dist.stddev * noise
            self._pending = {"obs": raw, "action": actions, "params": params}
        else:
            actions = dist.probs.argmax(-1) if self.net.discrete else dist.mean
            self._pending = None
        out = actions.cpu().numpy()
        return out if self.net.discrete else np.clip(out, -1.0, 1.0).astype(np.float32)

    def observe(self, transition: dict[str, Any]) -> None:
        """Buffer the exploring step of every active env; an env's episode closes at its last step."""
        if self._pending is None:
            return
        pending, self._pending = self._pending, None
        rewards = torch.as_tensor(np.asarray(transition["reward"], np.float64))
        # As batch-ppo's experience(): the statistics take in every step, after the action was chosen.
        self.obs_norm.update(pending["obs"][list(transition["indices"])])
        if self.settings.normalize_rewards:
            self.reward_norm.update(rewards[:, None].to(self.device))
        next_obs = torch.as_tensor(transition["obs"]["state"], dtype=torch.float32, device=self.device)
        for row, index in enumerate(transition["indices"]):
            self._open[index].append({
                "obs": pending["obs"][index], "action": pending["action"][index],
                "params": {k: v[index] for k, v in pending["params"].items()},
                "reward": float(rewards[row]), "next_obs": next_obs[row],
                "terminal": bool(transition["is_terminal"][row]),
            })
            if transition["is_last"][row]:
                self.episodes.append(self._open[index])
                self._open[index] = []

    # ------------------------------------------------------------ learning

    def _targets(self, episodes: list[list[dict[str, Any]]], rewards: list[torch.Tensor],
                 obs: list[torch.Tensor]) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Per episode: (advantages before normalization, value targets)."""
        s = self.settings
        advantages, targets = [], []
        with torch.no_grad():
            for episode, reward, observation in zip(episodes, rewards, obs, strict=True):
                values = self.net.value(observation)[:, 0].double().cpu().numpy()
                reward = reward.double().cpu().numpy()
                if s.advantage == "return":
                    whole = discounted_return(reward, s.discount)
                    advantage = whole - values
                    chunked = s.value_target == "chunk" and s.chunk_length
                    target = chunk_returns(reward, s.discount, s.chunk_length) if chunked else whole
                else:
                    following = self.obs_norm(torch.stack([x["next_obs"] for x in episode]))
                    next_values = self.net.value(following)[:, 0].double().cpu().numpy()
                    terminals = np.array([x["terminal"] for x in episode])
                    advantage, target = gae(reward, values, next_values, terminals, s.discount, s.gae_lambda)
                advantages.append(torch.as_tensor(advantage, dtype=torch.float32, device=self.device))
                targets.append(torch.as_tensor(target, dtype=torch.float32, device=self.device))
        return advantages, targets

    def update(self) -> dict[str, float]:
        """One PPO update on the buffered finished episodes; clears the buffer."""
        if not self.episodes:
            raise RuntimeError("PPO update with no finished episode in the buffer")
        s = self.settings
        episodes, self.episodes = self.episodes, []
        batch, span, length = self._batch(episodes)
        count = len(batch["obs"])
        size = s.batch_size or len(episodes)
        if not s.batch_size:  # batch-ppo shuffles only for minibatches
            stream = torch.arange(count, device=self.device).repeat(s.epochs)
        elif s.shuffle == "buffer":
            stream = buffer_shuffle(torch.arange(count).repeat(s.epochs), max(len(episodes) // 2, 1),
                                    self.generator).to(self.device)
        else:
            stream = torch.cat([torch.randperm(count, generator=self.generator, device=self.device)
                                for _ in range(s.epochs)])
        for step in range(max(s.epochs * count // size, 1)):
            part = stream[step * size:(step + 1) * size]
            policy_loss, value_loss = self._losses({k: v[part] for k, v in batch.items()}, span)
            self.optimizer.zero_grad(set_to_none=True)
            (policy_loss + value_loss).backward()
            self.optimizer.step()
        with torch.no_grad():
            # batch-ppo's mean over its memory: every episode padded to the episode limit, chunked or not.
            kl_change = self._kl(batch).sum().item() / (len(episodes) * length)
        if s.objective != "clip":
            self.penalty = adapt_penalty(self.penalty, kl_change, s.kl_target)
        returns = [sum(x["reward"] for x in episode) for episode in episodes]
        return {"kl": kl_change, "penalty": self.penalty, "policy_loss": policy_loss.item(),
                "value_loss": value_loss.item(), "return": float(np.mean(returns)),
                "steps": sum(len(e) for e in episodes)}

    def _batch(self, episodes: list[list[dict[str, Any]]]) -> tuple[dict[str, torch.Tensor], int, int]:
        """The update's (sequences, steps) tensors; the span its per-sequence means divide by; the memory length.

        batch-ppo's sequences are chunks of `chunk_length`, or whole episodes padded to the episode limit.
        Padding adds nothing to a sum, so the tensors stop at the longest sequence and the means divide by
        the span, which costs the same numbers without computing on up to a thousand padding steps.
        """
        s = self.settings
        obs = [self.obs_norm(torch.stack([x["obs"] for x in e])) for e in episodes]
        actions = [torch.stack([x["action"] for x in e]) for e in episodes]
        old = [{k: torch.stack([x["params"][k] for x in e]) for k in e[0]["params"]} for e in episodes]
        rewards = [torch.tensor([x["reward"] for x in e], dtype=torch.float64, device=self.device)
                   for e in episodes]
        if s.normalize_rewards:
            rewards = [self.reward_norm(r[:, None])[:, 0] for r in rewards]
        advantages, targets = self._targets(episodes, rewards, obs)
        flat = torch.cat(advantages)
        advantages = [(a - flat.mean()) / (flat.std(unbiased=False) + 1e-8) for a in advantages]
        longest = max(len(e) for e in episodes)
        length = max(self.max_length, longest)

        def sequences(per_episode: list[Any], key: str | None = None) -> torch.Tensor:
            parts = [p for e in per_episode for p in split(e if key is None else e[key], s.chunk_length)]
            return pad(parts, s.chunk_length or longest)

        batch = {"obs": sequences(obs), "action": sequences(actions), "advantage": sequences(advantages),
                 "target": sequences(targets),
                 "mask": sequences([torch.ones(len(e), device=self.device) for e in episodes]).bool()}
        batch.update({f"old_{k}": sequences(old, k) for k in old[0]})
        return batch, s.chunk_length or length, length

    def _old(self, batch: dict[str, torch.Tensor]) -> Distribution:
        params = {k[4:]: v for k, v in batch.items() if k.startswith("old_")}
        if "std" in params:  # padding steps hold std 0: give them a harmless 1 (they are masked)
            params["std"] = torch.where(batch["mask"][..., None], params["std"], torch.ones_like(params["std"]))
        return self.net.distribution(params)

    def _kl(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """KL(behaviour || current) per (sequence, step), zero on padding."""
        new = self.net.distribution(self.net.params(batch["obs"]))
        return self.net.kl(self._old(batch), new) * batch["mask"]

    def _losses(self, batch: dict[str, torch.Tensor], span: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Policy loss (per-sequence KL penalty and cutoff, or clipped) and value loss on (B, T) sequences.

        Per-sequence means divide by `span`, the padded length of batch-ppo's sequences (T or more).
        """
        s = self.settings
        mask = batch["mask"].float()

        def per_sequence_mean(values: torch.Tensor) -> torch.Tensor:
            return (values * mask).sum(1) / span

        new = self.net.distribution(self.net.params(batch["obs"]))
        old = self._old(batch)
        log_ratio = self.net.log_prob(new, batch["action"]) - self.net.log_prob(old, batch["action"])
        # Bounded so that one sample deep in a tail cannot overflow exp() and wreck Adam's moments.
        ratio = log_ratio.clamp(-10.0, 10.0).exp()
        advantage = batch["advantage"]
        if s.objective == "clip":
            surrogate = torch.min(ratio * advantage, ratio.clamp(1 - s.clip, 1 + s.clip) * advantage)
            policy_loss = -per_sequence_mean(surrogate).mean()
        else:
            kl = per_sequence_mean(self.net.kl(old, new))
            cutoff = s.kl_cutoff_factor * s.kl_target
            per_sequence = (-per_sequence_mean(ratio * advantage) + self.penalty * kl
                            + s.kl_cutoff_coef * (kl > cutoff).float() * (kl - cutoff) ** 2)
            policy_loss = per_sequence.mean()
        value = self.net.value(batch["obs"])[..., 0]
        value_loss = 0.5 * per_sequence_mean((batch["target"] - value) ** 2).mean()
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
