"""The agent networks together (paper appendix C): the full stack back-propagates into the shared encoder;
each network's own contract is in its module's test file."""

import pytest
import torch

from agents.augment import random_shift
from agents.critic import TwinCritic
from agents.encoder import PixelEncoder
from agents.policy import Actor

ACTIONS = 6


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def test_full_stack_backpropagates_into_the_shared_encoder():
    enc = PixelEncoder(frames=3)
    actor, critic = Actor(enc.latent_dim, ACTIONS, 32), TwinCritic(enc.latent_dim, ACTIONS, 32)
    obs = torch.randint(0, 256, (2, 9, 84, 84), dtype=torch.uint8)
    z = enc(random_shift(obs))
    a, logp, _ = actor.sample(z)
    q1, q2 = critic(z, a)
    (q1 + q2 - logp).sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in enc.parameters())
