"""DrQ's image augmentation: a random shift of up to ``pad`` pixels (replicate padding).

Each observation in the batch moves by its own integer offset in
[-pad, pad]^2; all frames and channels of one observation move together. The
replicate padding is done by clamping indices, so uint8 batches stay uint8.
This is DrQ's ``ReplicationPad2d(pad)`` followed by a random ``pad``-offset
crop of the original size (denisyarats/drq, replay_buffer.py, ``aug_trans``).

The shifted batch is one gather along the flattened pixels: output pixel
(i, j) of observation b reads input pixel (clamp(i + dy_b), clamp(j + dx_b)),
one index per pixel shared by all channels. (Indexing with four broadcast
index tensors did the same work about 10x slower on a CPU, and was the
update's fourth-largest GPU kernel.)
"""

from __future__ import annotations

import torch

from .config import PAD


def random_shift(obs: torch.Tensor, pad: int = PAD, generator: torch.Generator | None = None) -> torch.Tensor:
    """Shift each (C, H, W) image of ``obs`` (B, C, H, W) by a random offset, edges replicated."""
    if obs.ndim != 4:
        raise ValueError(f"obs: expected (B, C, H, W), got shape {tuple(obs.shape)}")
    if pad < 0:
        raise ValueError(f"pad: {pad} is negative")
    if pad == 0:
        return obs
    b, c, h, w = obs.shape
    device = obs.device
    draw_on = generator.device if generator is not None else device
    dy = torch.randint(-pad, pad + 1, (b, 1), generator=generator, device=draw_on)
    dx = torch.randint(-pad, pad + 1, (b, 1), generator=generator, device=draw_on)
    rows = (torch.arange(h, device=device) + dy.to(device)).clamp_(0, h - 1)  # (B, H)
    cols = (torch.arange(w, device=device) + dx.to(device)).clamp_(0, w - 1)  # (B, W)
    pixels = (rows[:, :, None] * w + cols[:, None, :]).view(b, 1, h * w).expand(b, c, h * w)
    return torch.gather(obs.reshape(b, c, h * w), 2, pixels).view(b, c, h, w)
