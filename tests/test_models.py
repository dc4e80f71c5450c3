"""The world-model heads: the diagonal Gaussian transition, the reward and inverse-dynamics heads."""

import pytest
import torch

from agents.mlp import HIDDEN_LOW_CAPACITY
from agents.models import InverseDynamics, RewardModel, TransitionModel

LATENT, ACTIONS, B = 150, 6, 5


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


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
