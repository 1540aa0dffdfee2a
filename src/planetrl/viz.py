"""Videos of episodes: GIF files from uint8 frames."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from planetrl.atomic import write_atomic


def openloop_frames(truth: np.ndarray, model: np.ndarray, context: int) -> np.ndarray:
    """(T, 3H, W, 3) frames: truth above model above error, a white bar under predicted model frames.

    The bar marks where observations stop and the prediction runs open loop.
    """
    truth, model = np.asarray(truth), np.asarray(model)
    if truth.shape != model.shape or truth.dtype != np.uint8:
        raise ValueError(f"truth and model must be equal uint8 arrays, got {truth.shape} and {model.shape}")
    error = np.abs(truth.astype(np.int16) - model.astype(np.int16)).astype(np.uint8)
    frames = np.concatenate([truth, model, error], axis=1)
    frames[context:, 2 * truth.shape[1] - 1] = 255
    return frames


def tile(frames: np.ndarray, columns: int) -> np.ndarray:
    """Lay (T, H, W, 3) frames out as one (rows*H, columns*W, 3) image, for TensorBoard."""
    count, height, width, _ = frames.shape
    rows = -(-count // columns)
    canvas = np.zeros((rows * height, columns * width, 3), np.uint8)
    for index, frame in enumerate(frames):
        r, c = divmod(index, columns)
        canvas[r * height : (r + 1) * height, c * width : (c + 1) * width] = frame
    return canvas


def label_openloop(frames: np.ndarray, context: int, scale: int = 2) -> np.ndarray:
    """Upscale `openloop_frames` output and label it: truth / model / error rows, observed or predicted frames.

    A header names each frame (`observed 3/5`, `open loop +4`) and a left column names the rows, so a
    clip read without this docstring still says what it shows.
    """
    frames = np.asarray(frames).repeat(scale, axis=1).repeat(scale, axis=2)
    count, height, width, _ = frames.shape
    header, margin = 12, 40
    out = np.zeros((count, height + header, width + margin, 3), np.uint8)
    out[:, header:, margin:] = frames
    for index in range(count):
        image = Image.fromarray(out[index])
        draw = ImageDraw.Draw(image)
        title = f"observed {index + 1}/{context}" if index < context else f"open loop +{index - context + 1}"
        draw.text((margin + 2, 0), title, fill=(255, 255, 255) if index < context else (255, 200, 0))
        for row, name in enumerate(("truth", "model", "error")):
            draw.text((2, header + row * height // 3 + height // 6 - 5), name, fill=(255, 255, 255))
        out[index] = np.asarray(image)
    return out


def encode_gif(frames: Sequence[np.ndarray] | np.ndarray, fps: float = 20.0, scale: int = 1) -> bytes:
    """(T,H,W,3) uint8 frames as the bytes of a looping GIF, optionally upscaled by an integer factor."""
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
        raise ValueError(f"frames must be uint8 (T,H,W,3), got {frames.dtype} {frames.shape}")
    if len(frames) == 0:
        raise ValueError("cannot write a GIF with no frames")
    if scale > 1:
        frames = frames.repeat(scale, axis=1).repeat(scale, axis=2)
    images = [Image.fromarray(frame) for frame in frames]
    buffer = io.BytesIO()
    images[0].save(buffer, format="GIF", save_all=True, append_images=images[1:],
                   duration=max(int(1000 / fps), 20), loop=0, optimize=False)
    return buffer.getvalue()


def write_gif(frames: Sequence[np.ndarray] | np.ndarray, path: str | Path, fps: float = 20.0,
              scale: int = 1) -> Path:
    """Write (T,H,W,3) uint8 frames as a looping GIF file, atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(path, encode_gif(frames, fps, scale), fsync=False)
