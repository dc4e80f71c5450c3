"""The observation encoder h(o): one conv trunk applied to every frame of the stack.

Per frame: 4 conv layers (3x3 kernels, 32 channels, stride 2 on the first and
1 after, ReLU), then a linear projection to 50 dimensions followed by LayerNorm
and tanh (as in the SAC-AE / DrQ / DBC encoders the paper builds on; ``norm=False``
gives the bare projection the appendix describes). The F frames of a
stack are embedded independently (camera motion breaks the pixel
correspondence between frames) and their embeddings concatenated, giving
z of size F * 50. One encoder is shared by the actor and the critics.

``stacked=True`` is the DrQ / SAC-AE encoder instead: the trunk sees the whole
stack as 3F channels (so its first layer sees motion) and z has 50 dimensions;
its convolutions cost a third of the frame-wise encoder's.
"""

from __future__ import annotations

import torch
from torch import nn

from .mlp import orthogonal_init

FEATURES = 50


def conv_output_side(image_size: int, layers: int = 4) -> int:
    """Side of the trunk's feature map: 84 -> 41 -> 39 -> 37 -> 35."""
    side = (image_size - 3) // 2 + 1
    return side - 2 * (layers - 1)


class PixelEncoder(nn.Module):
    """Conv encoder: uint8 or float pixels (B, 3F, H, W) -> latents (B, F * features), or (B, features) stacked."""

    def __init__(self, frames: int = 3, image_size: int = 84, channels: int = 32, layers: int = 4,
                 features: int = FEATURES, norm: bool = True, stacked: bool = False):
        super().__init__()
        if conv_output_side(image_size, layers) < 1:
            raise ValueError(f"image_size: {image_size} is too small for {layers} conv layers")
        self.frames, self.image_size, self.features, self.stacked = frames, image_size, features, bool(stacked)
        inputs = 3 * frames if stacked else 3
        convs: list[nn.Module] = [nn.Conv2d(inputs, channels, 3, stride=2), nn.ReLU()]
        for _ in range(layers - 1):
            convs += [nn.Conv2d(channels, channels, 3, stride=1), nn.ReLU()]
        self.trunk = nn.Sequential(*convs, nn.Flatten())
        self.project = nn.Linear(channels * conv_output_side(image_size, layers) ** 2, features)
        self.norm = nn.Sequential(nn.LayerNorm(features), nn.Tanh()) if norm else nn.Identity()
        self.apply(orthogonal_init)

    @property
    def latent_dim(self) -> int:
        """Size of z: frames * features (features when stacked)."""
        return self.features if self.stacked else self.frames * self.features

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Embed every frame (uint8 pixels are scaled to [0, 1]) and concatenate the embeddings
        (or embed the stack as one image when ``stacked``)."""
        expected = (3 * self.frames, self.image_size, self.image_size)
        if obs.ndim != 4 or tuple(obs.shape[1:]) != expected:
            raise ValueError(f"obs: expected shape (B, {', '.join(map(str, expected))}), got {tuple(obs.shape)}")
        x = obs.float() / 255.0 if obs.dtype == torch.uint8 else obs.float()
        if self.stacked:
            return self.norm(self.project(self.trunk(x)))
        b = x.shape[0]
        x = x.reshape(b * self.frames, 3, self.image_size, self.image_size)
        return self.norm(self.project(self.trunk(x))).reshape(b, self.frames * self.features)
