"""Streaming normalization of observations and rewards (batch-ppo's parts/normalize.py)."""

from __future__ import annotations

import torch
from torch import nn


class StreamingNormalizer(nn.Module):
    """batch-ppo's StreamingNormalize: running mean and unbiased variance; normalizes and clips.

    The scale is sqrt(var + 1e-4) + 1e-8 once two values were seen (1 before).
    """

    def __init__(self, size: int, center: bool = True, scale: bool = True, clip: float = 5.0) -> None:
        super().__init__()
        self.center, self.scale, self.clip = center, scale, clip
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))
        self.register_buffer("mean", torch.zeros(size, dtype=torch.float64))
        self.register_buffer("m2", torch.zeros(size, dtype=torch.float64))

    def update(self, values: torch.Tensor) -> None:
        """Fold a batch (N, size) into the running statistics (Chan et al.'s parallel update)."""
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
        """The unbiased variance (divided by count - 1)."""
        return self.m2 / (self.count - 1).clamp(min=1)

    def std(self) -> torch.Tensor:
        return torch.sqrt(self.variance + 1e-4)

    def forward(self, values: torch.Tensor) -> torch.Tensor:
        out = values.to(torch.float64)
        if self.center:
            out = out - self.mean
        if self.scale and self.count > 1:
            out = out / (self.std() + 1e-8)
        if self.clip:
            out = out.clamp(-self.clip, self.clip)
        return out.to(values.dtype)
