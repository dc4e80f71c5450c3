"""Distance heads d(z, z') -> (B,) as small torch modules.

* :class:`SeparableDistance`: ``sum_i sum_j w_ij |z_i - z'_i|^p_j`` with learnable
  ``w_ij >= 0`` (softplus of a free parameter) and powers ``p_j >= 1`` (convex terms). This is the family for which the
  paper proves the entangled bound tight (Thm. 4.5, claim C5 of docs/claims.md).
* :class:`L1Distance`: ``||z - z'||_1``, no parameters.
* :class:`LatentL1Distance`: DBC's distance, ``scale * ||z - z'||_1`` on the latents
  themselves (the encoder is trained so that this L1 distance is the metric).

Every head returns exactly 0 on identical rows, works on any device and computes
in the dtype of its inputs (parameters are cast, gradients flow back to them).
"""

from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import nn

from .core import Tensor, check_batch


def _pair(z: Tensor, z2: Tensor, dim: int | None = None) -> None:
    check_batch("z", z)
    check_batch("z'", z2, rows=z.shape[0])
    if z2.shape != z.shape:
        raise ValueError(f"z': expected shape {tuple(z.shape)} (as z), got {tuple(z2.shape)}")
    if dim is not None and z.shape[1] != dim:
        raise ValueError(f"z: expected {dim} columns (the head's dimension), got shape {tuple(z.shape)}")


def _inverse_softplus(y: float) -> float:
    return y + math.log(-math.expm1(-y))


class SeparableDistance(nn.Module):
    """``d(z, z') = sum_i sum_j w_ij |z_i - z'_i|^p_j``, w = softplus(raw) >= 0 (D x len(powers))."""

    powers: Tensor  # the exponents p_j, a non-persistent buffer

    def __init__(self, dim: int, powers: Sequence[float] = (1.0,), init: float = 1.0) -> None:
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim: expected a positive integer, got {dim!r}")
        powers = tuple(float(p) for p in powers)
        if not powers or any(not math.isfinite(p) or p < 1 for p in powers):
            raise ValueError(f"powers: expected numbers >= 1 (convex terms), got {powers}")
        if not (math.isfinite(init) and init > 0):
            raise ValueError(f"init: expected a positive weight, got {init}")
        self.dim = dim
        self.register_buffer("powers", torch.tensor(powers), persistent=False)
        self.raw = nn.Parameter(torch.full((dim, len(powers)), _inverse_softplus(init)))

    @property
    def weights(self) -> Tensor:
        """The non-negative weights w (D x len(powers))."""
        return nn.functional.softplus(self.raw)

    def forward(self, z: Tensor, z2: Tensor) -> Tensor:
        """Distances of the rows of z and z' (B,)."""
        _pair(z, z2, self.dim)
        diff = (z - z2).abs().unsqueeze(-1)  # B x D x 1
        terms = diff.pow(self.powers.to(z.dtype))  # |0|^p = 0, and p >= 1 keeps the gradient finite there
        return (terms * self.weights.to(z.dtype)).sum(dim=(1, 2))


class L1Distance(nn.Module):
    """``d(z, z') = ||z - z'||_1`` (no parameters)."""

    def forward(self, z: Tensor, z2: Tensor) -> Tensor:
        """Distances of the rows of z and z' (B,)."""
        _pair(z, z2)
        return (z - z2).abs().sum(dim=1)


class LatentL1Distance(nn.Module):
    """DBC's latent distance ``scale * ||z - z'||_1`` (``learn_scale``: scale is a parameter)."""

    def __init__(self, scale: float = 1.0, learn_scale: bool = False) -> None:
        super().__init__()
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError(f"scale: expected a positive number, got {scale}")
        value = torch.tensor(float(scale))
        if learn_scale:
            self.scale = nn.Parameter(value)
        else:
            self.register_buffer("scale", value)

    def forward(self, z: Tensor, z2: Tensor) -> Tensor:
        """Distances of the rows of z and z' (B,)."""
        _pair(z, z2)
        return self.scale.to(z.dtype) * (z - z2).abs().sum(dim=1)
