"""The twin critics and their soft-updated targets."""

import pytest
import torch

from agents.critic import TwinCritic
from agents.mlp import HIDDEN_LOW_CAPACITY, make_target, soft_update

LATENT, ACTIONS, B = 150, 6, 5


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


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
