"""Batches of chunks as tensors on the training device, prepared in the background.

Images are reduced to `bits` bits, scaled to [-0.5, 0.5) and dequantized
with uniform noise of one bin (docs/PAPER.md); `postprocess_image` maps model
outputs back to displayable uint8.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

import numpy as np
import torch

from planetrl.data.replay import Replay

Batch = dict[str, torch.Tensor]


def preprocess_image(image: torch.Tensor, bits: int, generator: torch.Generator | None = None,
                     noise: bool = True) -> torch.Tensor:
    """uint8 -> float in [-0.5, 0.5): floor to `bits` bits, scale, add one bin of uniform noise.

    Without noise the value is the bin's centre, the noise's mean (for acting).
    """
    if not 1 <= bits <= 8:
        raise ValueError(f"bits must be within 1..8, got {bits}")
    bins = 2**bits
    image = torch.div(image, 2 ** (8 - bits), rounding_mode="floor").float()
    if noise:
        image = image + torch.rand(image.shape, generator=generator, device=image.device)
    else:
        image = image + 0.5
    return image / bins - 0.5


def dequantize(image: np.ndarray, bits: int, rng: np.random.Generator) -> np.ndarray:
    """`preprocess_image` with noise, for the loader: uint8 -> float32 in [-0.5, 0.5) in numpy.

    Single-threaded, so a prefetch thread adds no OpenMP team beside the update's, and 2.4x faster
    than the torch form at 64x64 (BENCHMARKS.md, issue 19).
    """
    if not 1 <= bits <= 8:
        raise ValueError(f"bits must be within 1..8, got {bits}")
    bins = 2**bits
    out = (image >> (8 - bits)).astype(np.float32)
    out += rng.random(out.shape, dtype=np.float32)
    out *= np.float32(1 / bins)
    out -= np.float32(0.5)
    return out


def postprocess_image(image: torch.Tensor, bits: int) -> torch.Tensor:
    """Inverse of `preprocess_image` for display: the bin's lowest uint8 value."""
    bins = 2**bits
    level = torch.floor((image.float() + 0.5) * bins).clamp(0, bins - 1)
    return (level * 2 ** (8 - bits)).to(torch.uint8)


class Loader:
    """Batches {image, action, reward, is_first, is_last, is_terminal, ...} shaped (B, L, ...).

    `take(n)` yields exactly n batches; with `prefetch > 0` a background thread
    prepares up to that many ahead, and with a CUDA device it pins host memory
    and copies without blocking. Sampling and noise derive from `seed`, and
    because each `take` samples only from the replay as it stands, a run is
    reproducible whatever the thread timing. On a CPU device the thread competes with the update for
    the cores: the `cpu` presets make batches inline (prefetch 0; BENCHMARKS.md, issue 19).
    """

    def __init__(self, replay: Replay, batch_size: int, bits: int = 5, device: str | torch.device = "cpu",
                 prefetch: int = 2, seed: int = 0) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.replay = replay
        self.batch_size = batch_size
        self.bits = bits
        self.device = torch.device(device)
        self.prefetch = prefetch
        self._rng = np.random.default_rng(seed)

    def state_dict(self) -> dict:
        """Sampling RNG state, for resume."""
        return {"rng": self._rng.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        """Restore the sampling RNG state saved by `state_dict` (older checkpoints' "generator" is unused)."""
        self._rng.bit_generator.state = state["rng"]

    def make_batch(self) -> Batch:
        """Sample and prepare one batch in the calling thread."""
        arrays = self.replay.sample(self.batch_size, self._rng)
        pin = self.device.type == "cuda"
        batch = {}
        for key, value in arrays.items():
            if key == "image":
                value = dequantize(value, self.bits, self._rng)
            tensor = torch.from_numpy(np.ascontiguousarray(value))
            if tensor.dtype == torch.float64:
                tensor = tensor.float()
            if pin:
                tensor = tensor.pin_memory()
            batch[key] = tensor.to(self.device, non_blocking=pin)
        return batch

    def take(self, count: int) -> Iterator[Batch]:
        """Yield exactly `count` batches, prepared ahead by a background thread."""
        if self.prefetch <= 0:
            for _ in range(count):
                yield self.make_batch()
            return
        ready: queue.Queue[Batch | BaseException] = queue.Queue(maxsize=self.prefetch)
        stop = threading.Event()

        def work() -> None:
            for _ in range(count):
                try:
                    item: Batch | BaseException = self.make_batch()
                except BaseException as error:  # noqa: BLE001 - handed to the consumer, which re-raises
                    item = error
                while not stop.is_set():
                    try:
                        ready.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set() or isinstance(item, BaseException):
                    return

        thread = threading.Thread(target=work, name="planetrl-loader", daemon=True)
        thread.start()
        try:
            for _ in range(count):
                item = ready.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            thread.join()
