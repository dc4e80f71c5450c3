"""DrQ's random shift."""

import pytest
import torch

from agents.augment import random_shift

B = 5


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def test_random_shift_moves_whole_observations_by_at_most_pad():
    g = torch.Generator().manual_seed(1)
    base = torch.arange(84 * 84, dtype=torch.int64).reshape(1, 1, 84, 84)
    obs = base.expand(B, 9, 84, 84).clone()
    out = random_shift(obs, pad=4, generator=g)
    assert out.shape == obs.shape and out.dtype == obs.dtype
    for i in range(B):
        assert all(torch.equal(out[i, c], out[i, 0]) for c in range(9))  # one shift per observation
        centre = int(out[i, 0, 42, 42])
        dy, dx = centre // 84 - 42, centre % 84 - 42
        assert abs(dy) <= 4 and abs(dx) <= 4
        rows = (torch.arange(84) + dy).clamp(0, 83)
        cols = (torch.arange(84) + dx).clamp(0, 83)
        assert torch.equal(out[i, 0], base[0, 0][rows][:, cols])  # a translated crop, edges replicated
    u8 = torch.randint(0, 256, (B, 9, 84, 84), dtype=torch.uint8)
    assert random_shift(u8).dtype == torch.uint8
    assert random_shift(u8, pad=0) is u8
    shifts = {int(random_shift(obs, generator=g)[0, 0, 42, 42]) for _ in range(40)}
    assert len(shifts) > 10


def test_random_shift_is_drqs_replicate_pad_and_crop_on_any_frame_shape():
    """Against DrQ's definition, written out: replicate-pad by 4, crop the original size at offset
    (4 + dy, 4 + dx); frames not square (36 x 52), a non-contiguous batch, uint8 kept."""
    from torch.nn import functional as F

    obs = torch.randint(0, 256, (B, 6, 52, 36), dtype=torch.uint8).transpose(2, 3)  # (B, 6, 36, 52), strided
    g = torch.Generator().manual_seed(3)
    out = random_shift(obs, pad=4, generator=g)
    g = torch.Generator().manual_seed(3)
    dy = torch.randint(-4, 5, (B, 1), generator=g)
    dx = torch.randint(-4, 5, (B, 1), generator=g)
    padded = F.pad(obs.float(), (4, 4, 4, 4), mode="replicate").to(torch.uint8)
    for i in range(B):
        y, x = 4 + int(dy[i]), 4 + int(dx[i])
        assert torch.equal(out[i], padded[i, :, y : y + 36, x : x + 52]), i
    assert out.dtype == torch.uint8 and out.shape == obs.shape
