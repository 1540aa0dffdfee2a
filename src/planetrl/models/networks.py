"""Conv encoder and deconv decoder for 64x64 and 128x128 images, and MLP heads."""

from __future__ import annotations

import torch
from torch import nn

# (kernel, stride, padding) of the decoder's transposed convolutions, from a 1x1 input.
_DECODER_LAYERS = {
    64: ((5, 2, 0), (5, 2, 0), (6, 2, 0), (6, 2, 0)),  # 1 -> 5 -> 13 -> 30 -> 64
    128: ((5, 2, 0), (5, 2, 0), (6, 2, 0), (6, 2, 0), (4, 2, 1)),  # ... -> 64 -> 128
}


IMAGE_SIZES = tuple(_DECODER_LAYERS)
"""The square image sizes the encoder and decoder are built for."""


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


def dense_deconv(x: torch.Tensor, layer: nn.ConvTranspose2d) -> torch.Tensor:
    """A transposed convolution of a 1x1 input, as the matrix product it is: (N, C) -> (N, C', k, k)."""
    kernel = layer.kernel_size[0]
    weight = layer.weight.reshape(layer.in_channels, -1)
    bias = layer.bias.repeat_interleave(kernel * kernel) if layer.bias is not None else None
    out = torch.addmm(bias, x, weight) if bias is not None else x @ weight
    return out.reshape(-1, layer.out_channels, kernel, kernel)


def phase_deconv(x: torch.Tensor, layer: nn.ConvTranspose2d) -> torch.Tensor:
    """A stride-2 transposed convolution as one ordinary convolution and a pixel shuffle.

    Output pixel (2i + p, 2j + q) only sees the kernel taps of parity (p, q), so
    the four parities are four small correlations over the same input, run as
    one convolution with 4x the output channels. Same weights, same sums.
    """
    kernel, padding = layer.kernel_size[0], layer.padding[0]
    taps = (kernel + 1) // 2
    weight = nn.functional.pad(layer.weight, (0, 1, 0, 1)) if kernel % 2 else layer.weight
    cin, cout = weight.shape[:2]
    weight = weight.reshape(cin, cout, taps, 2, taps, 2).flip(2, 4).permute(1, 3, 5, 0, 2, 4)
    out = nn.functional.conv2d(x, weight.reshape(cout * 4, cin, taps, taps), None, padding=taps - 1)
    out = nn.functional.pixel_shuffle(out, 2)
    size = (x.shape[-1] - 1) * 2 + kernel - 2 * padding
    out = out[..., padding:padding + size, padding:padding + size]
    return out + layer.bias[:, None, None] if layer.bias is not None else out


class ConvDecoder(nn.Module):
    """Features (N, F) -> image means (N, H, W, 3): dense to 1024, then transposed convolutions.

    With `fast` (the default) the first transposed convolution runs as a matrix
    product and the second as `phase_deconv`; the parameters and sums are the
    same, the time is not (BENCHMARKS.md, "decoder").
    """

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
        self.fast = True
        self.phase_layers = {2}  # the `net` indices run as `phase_deconv` (measured: BENCHMARKS.md)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        leading = features.shape[:-1]
        x = self.dense(features.reshape(-1, features.shape[-1]))
        if self.fast:
            x = self._fast_layers(x)
        else:
            x = self.net(x[:, :, None, None].contiguous(memory_format=torch.channels_last))
        x = x.permute(0, 2, 3, 1)  # NCHW -> NHWC
        return x.reshape(*leading, self.image_size, self.image_size, 3)

    def _fast_layers(self, x: torch.Tensor) -> torch.Tensor:
        modules = list(self.net)
        x = dense_deconv(x, modules[0]).contiguous(memory_format=torch.channels_last)
        for index, module in enumerate(modules[1:], 1):
            if index in self.phase_layers:
                x = phase_deconv(x, module)
            else:
                x = module(x)
        return x


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
