"""The squashed Gaussian actor and its log-probability."""

import pytest
import torch

from agents.mlp import HIDDEN_LOW_CAPACITY
from agents.policy import Actor, squashed_log_prob

LATENT, ACTIONS, B = 150, 6, 5


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


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
