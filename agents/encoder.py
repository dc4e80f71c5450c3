"""The observation encoder h(o) = head(trunk(o)): a conv trunk and a projection head.

* :class:`ConvTrunk`: 4 conv layers (3x3 kernels, 32 channels, stride 2 on the
  first and 1 after, ReLU), flattened. Frames may be square (``image_size=84``) or
  not (``image_size=(84, 420)``, CARLA's five stitched cameras): the flat size is
  computed from both sides. Frame-wise (the paper, appendix C) it
  runs on every frame of the stack separately (camera motion breaks the pixel
  correspondence between frames); ``stacked=True`` is the DrQ / SAC-AE / DBC
  trunk, which sees the stack as one 3F-channel image (its first layer sees
  motion; it costs a third as much).
* :class:`LatentHead`: a linear projection to 50 dimensions, LayerNorm, and
  ``squash='tanh'`` (DrQ, SAC-AE) or ``'none'`` (DBC's encoder ends in
  LayerNorm). Frame-wise, the per-frame embeddings are concatenated: z has
  F * 50 dimensions (50 when stacked).

:class:`PixelEncoder` is one trunk and one head. The agent shares the trunk
between critic and actor and may give the actor a head of its own on the
detached trunk features (DrQ's and DBC's actors do; the paper shares all).

Speed: ``channels_last=True`` stores the convolutions and their inputs in
NHWC, and ``autocast`` (a torch dtype, e.g. bfloat16) runs the trunk and the
projection in that precision; LayerNorm and everything after run in float32.
``compile=True`` runs the trunk through ``torch.compile`` (one graph for every
batch size), which fuses each convolution's bias add and ReLU, and the input's
scaling, into single kernels, forward and backward.
On the channels-last path the trunk's features come out flattened in (H, W, C)
order (a free view of NHWC memory, no copy) and the head permutes its projection
weight to match at use time, so the parameters and checkpoints are the same either way.
"""

from __future__ import annotations

from contextlib import nullcontext

import torch
import torch.nn.functional as F
from torch import nn

from .config import SQUASHES
from .mlp import orthogonal_init

FEATURES = 50


def conv_output_side(image_size: int, layers: int = 4) -> int:
    """Side of the trunk's feature map: 84 -> 41 -> 39 -> 37 -> 35."""
    side = (image_size - 3) // 2 + 1
    return side - 2 * (layers - 1)


def frame_shape(image_size: int | tuple[int, int]) -> tuple[int, int]:
    """(height, width) of ``image_size``: a side (square frames) or a (height, width) pair."""
    if isinstance(image_size, (tuple, list)):
        height, width = (int(v) for v in image_size)
        return height, width
    return int(image_size), int(image_size)


class ConvTrunk(nn.Module):
    """uint8 or float pixels (B, 3F, H, W) -> flat conv features, (B * F, n) frame-wise or (B, n) stacked.

    ``image_size``: the side of square frames, or their (height, width). The features are flattened in
    (C, H, W) order, or in (H, W, C) order when ``channels_last`` (see the module doc)."""

    def __init__(
        self,
        frames: int = 3,
        image_size: int | tuple[int, int] = 84,
        channels: int = 32,
        layers: int = 4,
        stacked: bool = False,
    ):
        super().__init__()
        height, width = frame_shape(image_size)
        if min(conv_output_side(height, layers), conv_output_side(width, layers)) < 1:
            raise ValueError(f"image_size: {image_size} is too small for {layers} conv layers")
        self.frames, self.image_size, self.stacked = frames, image_size, bool(stacked)
        self.height, self.width = height, width
        inputs = 3 * frames if stacked else 3
        convs: list[nn.Module] = [nn.Conv2d(inputs, channels, 3, stride=2), nn.ReLU()]
        for _ in range(layers - 1):
            convs += [nn.Conv2d(channels, channels, 3, stride=1), nn.ReLU()]
        self.convs = nn.Sequential(*convs)
        self._feature_shape = (channels, conv_output_side(height, layers), conv_output_side(width, layers))
        self.out_features = channels * self._feature_shape[1] * self._feature_shape[2]
        self.channels_last = False
        self.autocast: torch.dtype | None = None
        self.compiled = None  # torch.compile of _features (speed(compile=True))
        self.apply(orthogonal_init)

    @property
    def feature_shape(self) -> tuple[int, int, int]:
        """(channels, height, width) of the last conv layer's output map, per frame (per stack when stacked)."""
        return self._feature_shape

    def __getitem__(self, index: int) -> nn.Module:
        return self.convs[index]

    def __iter__(self):
        return iter(self.convs)

    def speed(self, channels_last: bool, autocast: torch.dtype | None, compile: bool = False) -> "ConvTrunk":
        """Switch the NHWC layout, the reduced-precision autocast and ``torch.compile`` on or off (see the
        module doc)."""
        self.channels_last, self.autocast = bool(channels_last), autocast
        self.convs.to(memory_format=torch.channels_last if channels_last else torch.contiguous_format)
        # dynamic: one compiled graph for every batch size (the update's views, the actor step, acting)
        self.compiled = torch.compile(self._features, dynamic=True) if compile else None
        return self

    def __getstate__(self) -> dict:
        """Copies and pickles leave the compiled function out (it is bound to this trunk)."""
        return {**self.__dict__, "compiled": None}

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Flat features of every frame (frame-wise) or of the whole stack (stacked); (H, W, C)-ordered
        when ``channels_last``, else (C, H, W)-ordered."""
        expected = (3 * self.frames, self.height, self.width)
        if obs.ndim != 4 or tuple(obs.shape[1:]) != expected:
            raise ValueError(f"obs: expected shape (B, {', '.join(map(str, expected))}), got {tuple(obs.shape)}")
        return (self.compiled or self._features)(obs)

    def _features(self, obs: torch.Tensor) -> torch.Tensor:
        """:meth:`forward` on checked input."""
        if not self.stacked:  # a view for contiguous input: the frames become the batch
            obs = obs.reshape(obs.shape[0] * self.frames, 3, self.height, self.width)
        if self.channels_last:  # reorder while the pixels are still bytes
            obs = obs.contiguous(memory_format=torch.channels_last)
        # scale straight into the compute dtype: no float32 copy of the batch on the fast path
        x = obs.to(self.autocast or torch.float32)
        if obs.dtype == torch.uint8:
            x = x / 255.0
        with _autocast(x, self.autocast):
            y = self.convs(x)
        if self.channels_last:  # NHWC memory read in (H, W, C) order: a view, where .flatten(1) would copy
            return y.permute(0, 2, 3, 1).flatten(1)
        return y.flatten(1)


class LatentHead(nn.Module):
    """Flat trunk features -> z: Linear to ``features``, LayerNorm, optional tanh, frames concatenated.

    ``nhwc`` (set by :meth:`speed`): None for (C, H, W)-ordered features, or the trunk's (C, H, W) feature
    shape when the features come (H, W, C)-ordered from a channels-last trunk; the projection weight, stored
    in (C, H, W) order either way, is then permuted to match at use time."""

    def __init__(
        self, in_features: int, frames: int = 3, stacked: bool = False, features: int = FEATURES, squash: str = "tanh"
    ):
        super().__init__()
        if squash not in SQUASHES:
            raise ValueError(f"squash: {squash!r} is not one of {', '.join(SQUASHES)}")
        self.frames, self.stacked, self.features, self.squash = frames, bool(stacked), features, squash
        self.project = nn.Linear(in_features, features)
        self.norm = nn.LayerNorm(features)
        self.autocast: torch.dtype | None = None
        self.nhwc: tuple[int, int, int] | None = None
        self.apply(orthogonal_init)

    @property
    def latent_dim(self) -> int:
        """Size of z: frames * features (features when stacked)."""
        return self.features if self.stacked else self.frames * self.features

    def speed(self, autocast: torch.dtype | None, nhwc: tuple[int, int, int] | None = None) -> "LatentHead":
        """Run the projection under ``autocast`` (None: float32) and read (H, W, C)-ordered features of the
        (C, H, W) map ``nhwc`` (None: (C, H, W)-ordered), e.g. ``nhwc=trunk.feature_shape`` for a
        channels-last :class:`ConvTrunk`."""
        if nhwc is not None:
            nhwc = tuple(int(v) for v in nhwc)
            if len(nhwc) != 3 or nhwc[0] * nhwc[1] * nhwc[2] != self.project.in_features:
                raise ValueError(f"nhwc: expected a (C, H, W) shape of {self.project.in_features} features, got {nhwc}")
        self.autocast, self.nhwc = autocast, nhwc
        return self

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """z of the flat features ``h`` of :class:`ConvTrunk`."""
        weight = self.project.weight
        if self.nhwc is not None:  # the (C, H, W)-ordered weight read in (H, W, C) order; gradients flow back
            weight = weight.view(weight.shape[0], *self.nhwc).permute(0, 2, 3, 1).reshape(weight.shape[0], -1)
        with _autocast(h, self.autocast):
            y = F.linear(h, weight, self.project.bias)
        y = self.norm(y.float())
        if self.squash == "tanh":
            y = torch.tanh(y)
        return y if self.stacked else y.reshape(-1, self.frames * self.features)


class PixelEncoder(nn.Module):
    """A :class:`ConvTrunk` and a :class:`LatentHead`: pixels (B, 3F, H, W) -> z (B, latent_dim)."""

    def __init__(
        self,
        frames: int = 3,
        image_size: int | tuple[int, int] = 84,
        channels: int = 32,
        layers: int = 4,
        features: int = FEATURES,
        stacked: bool = False,
        squash: str = "tanh",
    ):
        super().__init__()
        self.frames, self.image_size, self.features, self.stacked = frames, image_size, features, bool(stacked)
        self.trunk = ConvTrunk(frames, image_size, channels, layers, stacked)
        self.head = LatentHead(self.trunk.out_features, frames, stacked, features, squash)

    @property
    def latent_dim(self) -> int:
        """Size of z: frames * features (features when stacked)."""
        return self.head.latent_dim

    def speed(self, channels_last: bool, autocast: torch.dtype | None, compile: bool = False) -> "PixelEncoder":
        """See :meth:`ConvTrunk.speed`; the projection shares the autocast and reads the trunk's layout."""
        self.trunk.speed(channels_last, autocast, compile)
        self.head.speed(autocast, self.trunk.feature_shape if channels_last else None)
        return self

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Embed every frame (uint8 pixels are scaled to [0, 1]) and concatenate the embeddings
        (or embed the stack as one image when ``stacked``)."""
        return self.head(self.trunk(obs))


def _autocast(x: torch.Tensor, dtype: torch.dtype | None):
    if dtype is None:
        return nullcontext()
    # no weight-cast cache: each weight is cast once per context anyway, and a cache outliving a
    # CUDA-graph capture would hold stale casts (PyTorch's CUDA-graph notes)
    return torch.autocast(device_type=x.device.type, dtype=dtype, cache_enabled=False)
