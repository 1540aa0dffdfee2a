"""Videos of episodes: GIF files from uint8 frames."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image


def write_gif(frames: Sequence[np.ndarray] | np.ndarray, path: str | Path, fps: float = 20.0,
              scale: int = 1) -> Path:
    """Write (T,H,W,3) uint8 frames as a looping GIF, optionally upscaled by an integer factor."""
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
        raise ValueError(f"frames must be uint8 (T,H,W,3), got {frames.dtype} {frames.shape}")
    if len(frames) == 0:
        raise ValueError("cannot write a GIF with no frames")
    if scale > 1:
        frames = frames.repeat(scale, axis=1).repeat(scale, axis=2)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    images = [Image.fromarray(frame) for frame in frames]
    temporary = path.with_name(f".{path.name}.tmp")
    images[0].save(temporary, format="GIF", save_all=True, append_images=images[1:],
                   duration=max(int(1000 / fps), 20), loop=0, optimize=False)
    temporary.replace(path)
    return path
