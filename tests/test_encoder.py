"""The channels-last encoder path computes what the plain path computes: the trunk hands its NHWC features
to the head as a free (H, W, C)-ordered view, and the head permutes its (C, H, W)-ordered weight to match,
so outputs, gradients, parameters and checkpoints are the same either way."""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from agents.encoder import ConvTrunk, LatentHead, PixelEncoder, conv_output_side
from benchmarks.tolerance import loss_rtol
from benchmarks.tolerance_margins import ENCODER_ROWS as ROWS, FRAMES, LAYOUTS, encoders, layout_gradients, pixels

B = 5  # batch rows of the shape checks


@pytest.mark.parametrize("stacked,image_size", LAYOUTS)
def test_channels_last_encoder_matches_the_plain_one(stacked, image_size):
    """Latents (|z| <= 1) to float32's rounding along the encoder (benchmarks.tolerance.loss_rtol: 1.2e-4 at
    84 pixels); gradients of every parameter (the head's weight through the permute) of a random linear
    functional of z, relative to float64's and to the plain float32 path's, within the worst-case rounding
    of the longest gradient sum (reduction_rtol: 2.4e-3 for the frame-wise 84-pixel trunk's first layer).
    Which path is the less exact depends on the kernels: on one AVX2 CPU that first-layer weight gradient
    was 4.2e-4 from float64's on the channels-last path with one thread (2e-6 with two), and on the plain
    path with two threads (3.6e-4 with SSE4.1 kernels and one); a layout bug shows as O(1)."""
    result = layout_gradients(stacked, image_size)
    assert result.z_plain.shape == result.z_fast.shape == (ROWS, encoders(stacked, image_size)[0].latent_dim)
    assert torch.allclose(result.z_fast, result.z_plain, rtol=0, atol=result.latent_tolerance), (
        (result.z_fast - result.z_plain).abs().max()
    )
    for name, (fast_vs_exact, _, fast_vs_plain) in result.errors.items():
        assert fast_vs_exact < result.tolerance, name
        assert fast_vs_plain < 2 * result.tolerance, name


@pytest.mark.parametrize("stacked,image_size", LAYOUTS)
def test_channels_last_encoder_has_the_plain_checkpoint(stacked, image_size):
    plain, fast = encoders(stacked, image_size)
    a, b = plain.state_dict(), fast.state_dict()
    assert list(a) == list(b)
    assert all(a[k].shape == b[k].shape for k in a)
    # a checkpoint of a differently initialised plain encoder loads into the fast one and means the same
    torch.manual_seed(7)
    other = PixelEncoder(frames=FRAMES, image_size=image_size, stacked=stacked)
    fast.load_state_dict(other.state_dict())
    obs = pixels(image_size, seed=3)
    with torch.no_grad():
        assert torch.allclose(fast(obs), other(obs), rtol=0, atol=loss_rtol(other))
    # and the fast encoder's own checkpoint loads into a plain one
    plain.load_state_dict(fast.state_dict())
    with torch.no_grad():
        assert torch.allclose(plain(obs), fast(obs), rtol=0, atol=loss_rtol(plain))


class _Ops(TorchDispatchMode):
    """Records the aten ops run under it."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("stacked", [False, True])
def test_channels_last_trunk_features_are_a_view_of_the_last_relu(stacked):
    trunk = ConvTrunk(FRAMES, (36, 52), stacked=stacked).speed(channels_last=True, autocast=None)
    outputs: list[torch.Tensor] = []
    trunk.convs[-1].register_forward_hook(lambda module, inputs, output: outputs.append(output))
    with _Ops() as mode:
        features = trunk(pixels((36, 52)))
    last_relu = max(i for i, op in enumerate(mode.ops) if op == "relu")
    after = mode.ops[last_relu + 1 :]
    copies = {"clone", "_to_copy", "contiguous", "copy_", "_unsafe_view"}
    assert not copies & set(after), after
    (relu,) = outputs
    assert relu.is_contiguous(memory_format=torch.channels_last)
    assert features.is_contiguous() and features.data_ptr() == relu.data_ptr()
    assert features.shape == (ROWS * (1 if stacked else FRAMES), trunk.out_features)


def test_feature_shape_and_nhwc_validation():
    trunk = ConvTrunk(FRAMES, (36, 52))
    assert trunk.feature_shape == (32, conv_output_side(36), conv_output_side(52))
    assert trunk.out_features == 32 * conv_output_side(36) * conv_output_side(52)
    head = LatentHead(trunk.out_features, FRAMES)
    assert head.speed(torch.bfloat16, trunk.feature_shape) is head
    assert head.autocast == torch.bfloat16 and head.nhwc == trunk.feature_shape
    head.speed(None)
    assert head.autocast is None and head.nhwc is None
    with pytest.raises(ValueError, match="nhwc"):
        head.speed(None, (32, conv_output_side(52), conv_output_side(52)))
    enc = PixelEncoder(FRAMES, (36, 52)).speed(channels_last=True, autocast=None)
    assert enc.head.nhwc == enc.trunk.feature_shape
    enc.speed(channels_last=False, autocast=None)
    assert enc.head.nhwc is None


def test_fast_agents_actor_head_reads_the_channels_last_features():
    """An actor head of its own (drq preset) on the fast (channels-last, bf16) path reads the trunk's (H, W, C)
    features as the plain agent's reads its (C, H, W) ones: latents within bf16 rounding (a head that missed
    the layout is off by O(1))."""
    from agents.agent import Agent
    from agents.config import make_config

    def agent(fast: bool) -> Agent:
        torch.manual_seed(0)
        cfg = make_config("drq", capacity="low", image_size=36, batch_size=8, device="cpu", fast=fast)
        return Agent((3 * FRAMES, 36, 36), 2, cfg, "cpu")

    plain, fast = agent(False), agent(True)
    assert fast.actor_head is not None and fast.fast
    obs = pixels(36)
    with torch.no_grad():
        z_plain = plain.actor_latent(plain.encoder.trunk(obs))
        z_fast = fast.actor_latent(fast.encoder.trunk(obs))
    assert (z_fast - z_plain).abs().max() < 0.05


# ------------------------------------------------------------------ shapes (paper appendix C)
def test_encoder_embeds_each_frame_independently():
    torch.manual_seed(0)
    enc = PixelEncoder(frames=3)
    assert conv_output_side(84) == 35 and enc.latent_dim == 150
    convs = [m for m in enc.trunk if isinstance(m, torch.nn.Conv2d)]
    layers = [(c.kernel_size, c.stride, c.out_channels) for c in convs]
    assert layers == [((3, 3), (2, 2), 32)] + [((3, 3), (1, 1), 32)] * 3
    obs = torch.randint(0, 256, (B, 9, 84, 84), dtype=torch.uint8)
    z = enc(obs)
    assert z.shape == (B, 150) and z.dtype == torch.float32
    changed = obs.clone()
    changed[:, 3:6] = 255 - changed[:, 3:6]  # only the middle frame
    dz = (enc(changed) - z).abs().amax(0)
    assert dz[:50].max() == 0 and dz[100:].max() == 0 and dz[50:100].max() > 0
    assert torch.allclose(enc(obs.float() / 255), z)
    with pytest.raises(ValueError, match=r"^obs: expected shape \(B, 9, 84, 84\)"):
        enc(obs[:, :6])


def test_stacked_encoder_sees_the_stack_as_one_image():
    torch.manual_seed(0)
    enc = PixelEncoder(frames=3, stacked=True)
    assert enc.latent_dim == 50
    first = enc.trunk[0]
    assert first.in_channels == 9 and first.stride == (2, 2)
    obs = torch.randint(0, 256, (B, 9, 84, 84), dtype=torch.uint8)
    z = enc(obs)
    assert z.shape == (B, 50)
    changed = obs.clone()
    changed[:, 3:6] = 255 - changed[:, 3:6]  # one frame changes the whole embedding
    assert ((enc(changed) - z).abs() > 0).float().mean() > 0.5
    with pytest.raises(ValueError, match=r"^obs: expected shape \(B, 9, 84, 84\)"):
        enc(obs[:, :6])
