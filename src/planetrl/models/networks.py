"""Conv encoder and deconv decoder for 64x64 and 128x128 images, and MLP heads."""

from __future__ import annotations

import torch
from torch import nn

# (kernel, stride, padding) of the decoder's transposed convolutions, from a 1x1 input.
_DECODER_LAYERS = {
    64: ((5, 2, 0), (5, 2, 0), (6, 2, 0), (6, 2, 0)),  # 1 -> 5 -> 13 -> 30 -> 64
    128: ((5, 2, 0), (5, 2, 0), (6, 2, 0), (6, 2, 0), (4, 2, 1)),  # ... -> 64 -> 128
}


def _check_size(size: int) -> None:
    if size not in _DECODER_LAYERS:
        raise ValueError(f"image size {size} is not supported; allowed: {', '.join(map(str, _DECODER_LAYERS))}")


class ConvEncoder(nn.Module):
    """Images (N, H, W, 3) in [-0.5, 0.5) -> embeddings (N, 1024).

    64x64: four 4x4 stride-2 convolutions (32-64-128-256 channels, 2x2x256 out);
    128x128 adds a fifth 256-channel layer, so both give 1024 features.
    """

    def __init__(self, image_size: int = 64, depth: int = 32) -> None:
        super().__init__()
        _check_size(image_size)
        channels = [depth, 2 * depth, 4 * depth, 8 * depth]
        if image_size == 128:
            channels.append(8 * depth)
        layers: list[nn.Module] = []
        previous = 3
        for out in channels:
            layers += [nn.Conv2d(previous, out, 4, 2), nn.ReLU(inplace=True)]
            previous = out
        self.net = nn.Sequential(*layers)
        self.image_size = image_size
        self.embed_size = 8 * depth * 4

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        leading = image.shape[:-3]
        x = image.reshape(-1, *image.shape[-3:]).permute(0, 3, 1, 2)  # NHWC -> NCHW, channels_last strides
        return self.net(x).flatten(1).reshape(*leading, self.embed_size)


class ConvDecoder(nn.Module):
    """Features (N, F) -> image means (N, H, W, 3): dense to 1024, then transposed convolutions."""

    def __init__(self, feature_size: int, image_size: int = 64, depth: int = 32) -> None:
        super().__init__()
        _check_size(image_size)
        specs = _DECODER_LAYERS[image_size]
        channels = [*[4 * depth, 2 * depth, depth, max(depth // 2, 3)][: len(specs) - 1], 3]
        self.dense = nn.Linear(feature_size, 32 * depth)
        layers: list[nn.Module] = []
        previous = 32 * depth
        for index, ((kernel, stride, padding), out) in enumerate(zip(specs, channels, strict=True)):
            layers.append(nn.ConvTranspose2d(previous, out, kernel, stride, padding))
            if index < len(specs) - 1:
                layers.append(nn.ReLU(inplace=True))
            previous = out
        self.net = nn.Sequential(*layers)
        self.image_size = image_size

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        leading = features.shape[:-1]
        x = self.dense(features.reshape(-1, features.shape[-1]))
        x = x[:, :, None, None].contiguous(memory_format=torch.channels_last)
        x = self.net(x).permute(0, 2, 3, 1)  # NCHW -> NHWC
        return x.reshape(*leading, self.image_size, self.image_size, 3)


class MLP(nn.Module):
    """`layers` dense ReLU layers of `units`, then a linear output."""

    def __init__(self, in_size: int, out_size: int, layers: int = 2, units: int = 200) -> None:
        super().__init__()
        modules: list[nn.Module] = []
        previous = in_size
        for _ in range(layers):
            modules += [nn.Linear(previous, units), nn.ReLU()]
            previous = units
        modules.append(nn.Linear(previous, out_size))
        self.net = nn.Sequential(*modules)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)
