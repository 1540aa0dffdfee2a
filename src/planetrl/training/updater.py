"""One world-model update: loss, backward, gradient clipping, Adam; with precision options and weight averaging."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import torch

from planetrl.config import Config
from planetrl.losses import LossWeights, world_model_loss
from planetrl.models.world_model import WorldModel, autocast, resolve_precision


def resolve_device(name: str) -> torch.device:
    """`auto` picks CUDA when available; `cuda` without a GPU is an error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda was requested, but torch sees no CUDA device")
    return torch.device(name)


def build_world_model(cfg: Config, action_size: int) -> WorldModel:
    """The world model the config describes."""
    m = cfg.model
    return WorldModel(action_size, cfg.env.image_size, m.variant, m.belief_size, m.state_size, m.hidden_size,
                      m.min_std, m.depth, m.reward_layers, m.reward_units, m.init, m.continuation,
                      m.filter_mean)


class WorldModelUpdater:
    """Owns the optimizer; `update(batch)` takes one gradient step and returns metrics."""

    def __init__(self, model: WorldModel, cfg: Config, device: torch.device) -> None:
        self.model = model.to(device)
        self.device = device
        self.cfg = cfg
        self.precision = resolve_precision(cfg.optim.precision, device)
        self.weights = LossWeights(**dataclasses.asdict(cfg.loss))
        if cfg.optim.channels_last:
            self.model.encoder.to(memory_format=torch.channels_last)
            self.model.decoder.to(memory_format=torch.channels_last)
        self.average = averaged_copy(self.model) if cfg.optim.average > 0 else None
        if cfg.optim.compile:
            self.model.encoder.compile()
            self.model.decoder.compile()
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.optim.lr, eps=cfg.optim.eps)
        self.updates = 0  # for the average's warm-up; a resume reads it back from Adam's step count

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """One step on a batch of (B, T, ...) tensors; metrics include the gradient norm."""
        self.model.train()
        with autocast(self.device, self.precision):
            loss, metrics = world_model_loss(self.model, batch, self.weights)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"world-model loss is {loss.item()}; terms: "
                                     + ", ".join(f"{k}={v.item():.4g}" for k, v in metrics.items()))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.optim.grad_clip)
        self.optimizer.step()
        if self.average is not None:
            follow_average(self.average, self.model, warmed_decay(self.cfg.optim.average, self.updates))
        self.updates += 1
        result = {key: float(value) for key, value in metrics.items()}
        result["grad_norm"] = float(grad_norm)
        return result

    @property
    def acting(self) -> WorldModel:
        """The weights the agent plans with: the running average when `optim.average` is on."""
        return self.model if self.average is None else self.average

    def state_dict(self) -> dict[str, Any]:
        state = {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict()}
        if self.average is not None:
            state["average"] = self.average.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.updates = adam_steps(self.optimizer)
        if self.average is not None:
            if "average" not in state:
                raise ValueError("the checkpoint has no averaged weights, but optim.average is "
                                 f"{self.cfg.optim.average}; resume with the run's own config.yaml")
            self.average.load_state_dict(state["average"])


def averaged_copy(model: WorldModel) -> WorldModel:
    """A copy of `model` that no optimizer touches, to hold the running average of its weights."""
    average = copy.deepcopy(model)
    average.requires_grad_(False)
    return average


def warmed_decay(decay: float, updates: int) -> float:
    """The average's decay after `updates` earlier updates: min(decay, (1 + n) / (10 + n)).

    A fixed 0.99 from the first update would keep about a third of the random initial weights in the
    average at the first collected episode (0.99 ** 100); the warm-up averages over about the last n / 10
    updates early on, as TensorFlow's ExponentialMovingAverage does when given its step count.
    """
    return min(decay, (1.0 + updates) / (10.0 + updates))


def adam_steps(optimizer: torch.optim.Optimizer) -> int:
    """How many steps the optimizer has taken, from its state (0 before the first)."""
    steps = [state["step"] for state in optimizer.state.values() if "step" in state]
    return int(max(float(step) for step in steps)) if steps else 0


@torch.no_grad()
def follow_average(average: WorldModel, model: WorldModel, decay: float) -> None:
    """One step of the exponential moving average: average <- decay * average + (1 - decay) * model."""
    torch._foreach_lerp_(list(average.parameters()), list(model.parameters()), 1.0 - decay)
    for kept, current in zip(average.buffers(), model.buffers(), strict=True):
        kept.copy_(current)
