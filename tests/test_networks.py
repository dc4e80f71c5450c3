"""Shapes and contracts of the agent networks (paper appendix C)."""

import pytest
import torch

from agents.augment import random_shift
from agents.critic import TwinCritic
from agents.encoder import PixelEncoder, conv_output_side
from agents.mlp import HIDDEN, HIDDEN_LOW_CAPACITY, make_target, mlp, soft_update
from agents.models import InverseDynamics, RewardModel, TransitionModel
from agents.policy import Actor, squashed_log_prob

LATENT, ACTIONS, B = 150, 6, 5


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def test_encoder_embeds_each_frame_independently():
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


def test_mlp_has_two_hidden_layers_of_the_paper_widths():
    assert (HIDDEN, HIDDEN_LOW_CAPACITY) == (1024, 200)
    net = mlp(10, 3, hidden=200)
    linears = [m for m in net if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(10, 200), (200, 200), (200, 3)]


def test_actor_squashes_and_bounds_log_std():
    actor = Actor(LATENT, ACTIONS, hidden=HIDDEN_LOW_CAPACITY)
    z = torch.randn(B, LATENT) * 100  # extreme inputs push log std to its bounds
    mu, sigma = actor(z)
    assert mu.shape == sigma.shape == (B, ACTIONS)
    assert sigma.log().min() >= -10 - 1e-5 and sigma.log().max() <= 2 + 1e-5
    a, logp, mean = actor.sample(torch.randn(B, LATENT))
    assert a.shape == mean.shape == (B, ACTIONS) and logp.shape == (B,)
    assert a.abs().max() < 1 and mean.abs().max() < 1
    # the same noise gives the same action: draws can be shared between states
    xi = torch.randn(B, ACTIONS)
    z = torch.randn(B, LATENT)
    assert torch.equal(actor.sample(z, xi)[0], actor.sample(z, xi)[0])
    with pytest.raises(ValueError, match="^noise: expected shape"):
        actor.sample(z, torch.randn(B, 2))


def test_squashed_log_prob_matches_torch_distributions():
    from torch.distributions import Normal, TanhTransform, TransformedDistribution
    mu, sigma = torch.randn(B, ACTIONS), torch.rand(B, ACTIONS) + 0.1
    u = mu + sigma * torch.randn(B, ACTIONS)
    reference = TransformedDistribution(Normal(mu, sigma), [TanhTransform()]).log_prob(torch.tanh(u)).sum(-1)
    assert torch.allclose(squashed_log_prob(u, mu, sigma), reference, atol=1e-4)


def test_twin_critic_and_targets():
    critic = TwinCritic(LATENT, ACTIONS, hidden=HIDDEN_LOW_CAPACITY)
    q1, q2 = critic(torch.randn(B, LATENT), torch.rand(B, ACTIONS))
    assert q1.shape == q2.shape == (B,) and not torch.equal(q1, q2)
    target = make_target(critic)
    assert all(not p.requires_grad for p in target.parameters())
    with torch.no_grad():
        for p in critic.parameters():
            p.add_(1.0)
    before = [p.clone() for p in target.parameters()]
    soft_update(target, critic, 0.01)
    for t, s, b in zip(target.parameters(), critic.parameters(), before):
        assert torch.allclose(t, 0.99 * b + 0.01 * s)
    with pytest.raises(ValueError, match="^tau: "):
        soft_update(target, critic, 1.5)


def test_transition_model_is_a_diagonal_gaussian():
    model = TransitionModel(LATENT, ACTIONS, hidden=HIDDEN_LOW_CAPACITY)
    z, a = torch.randn(B, LATENT), torch.rand(B, ACTIONS) * 2 - 1
    mu, sigma = model(z, a)
    assert mu.shape == sigma.shape == (B, LATENT) and sigma.min() >= 1e-4 and sigma.max() <= 10
    eta = torch.randn(B, LATENT)
    assert torch.allclose(model.sample(z, a, eta), mu + sigma * eta)
    z_next = torch.randn(B, LATENT)
    reference = torch.distributions.Normal(mu, sigma).log_prob(z_next).sum(-1)
    assert torch.allclose(model.log_prob(z, a, z_next), reference, atol=1e-3)
    # tied noise: identical inputs give identical next latents
    same = model.sample(z[:1].expand(2, -1), a[:1].expand(2, -1), eta[:1].expand(2, -1))
    assert torch.equal(same[0], same[1])


def test_reward_and_inverse_dynamics_shapes():
    z, z_next = torch.randn(B, LATENT), torch.randn(B, LATENT)
    assert RewardModel(LATENT, hidden=HIDDEN_LOW_CAPACITY)(z).shape == (B,)
    a = InverseDynamics(LATENT, ACTIONS, hidden=HIDDEN_LOW_CAPACITY)(z, z_next)
    assert a.shape == (B, ACTIONS) and a.abs().max() <= 1


def test_full_stack_backpropagates_into_the_shared_encoder():
    enc = PixelEncoder(frames=3)
    actor, critic = Actor(enc.latent_dim, ACTIONS, 32), TwinCritic(enc.latent_dim, ACTIONS, 32)
    obs = torch.randint(0, 256, (2, 9, 84, 84), dtype=torch.uint8)
    z = enc(random_shift(obs))
    a, logp, _ = actor.sample(z)
    q1, q2 = critic(z, a)
    (q1 + q2 - logp).sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in enc.parameters())


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
        assert torch.equal(out[i], padded[i, :, y:y + 36, x:x + 52]), i
    assert out.dtype == torch.uint8 and out.shape == obs.shape
