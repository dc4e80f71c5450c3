"""The transcription of DrQ's update on small networks: the actor's log probability is the squashed Gaussian's,
the convolutions are shared, the losses come on the asked steps and the target follows at rate tau."""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from benchmarks.drq_reference import DrQ  # noqa: E402

SIZE = 20  # pixels: stride 2 then three 3x3 convolutions leave a 3 x 3 map
SIDE = 3


def batch(rows=4, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "obs": rng.integers(0, 256, (rows, 3, SIZE, SIZE), dtype=np.uint8),
        "next_obs": rng.integers(0, 256, (rows, 3, SIZE, SIZE), dtype=np.uint8),
        "action": rng.uniform(-1, 1, (rows, 2)).astype(np.float32),
        "reward": rng.uniform(0, 1, rows).astype(np.float32),
        "discount": np.ones(rows, np.float32),
    }


def test_the_log_probability_is_the_squashed_gaussians():
    torch.manual_seed(0)
    drq = DrQ(3, SIDE, 2, hidden=16)
    obs = torch.as_tensor(batch()["obs"]).float()
    noise = torch.randn(4, 2) * 0.5
    action, log_prob = drq.actor(obs, noise)
    mu, raw = drq.actor.trunk(drq.actor.encoder(obs)).chunk(2, dim=-1)
    log_std = -10.0 + 6.0 * (torch.tanh(raw) + 1)
    squashed = torch.distributions.TransformedDistribution(
        torch.distributions.Normal(mu, log_std.exp()), [torch.distributions.TanhTransform()]
    )
    assert torch.allclose(log_prob, squashed.log_prob(action).sum(-1, keepdim=True), atol=1e-3)
    assert drq.actor.encoder.convs is drq.critic.encoder.convs and drq.actor.encoder.head is not drq.critic.encoder.head


def test_an_update_steps_the_actor_and_the_target_on_even_steps():
    torch.manual_seed(1)
    drq = DrQ(3, SIDE, 2, hidden=16)
    critic_loss, actor_loss = drq.update(batch(), step=1)
    assert torch.isfinite(critic_loss) and actor_loss is None
    before_target = copy.deepcopy(drq.critic_target.state_dict())
    critic_loss, actor_loss = drq.update(batch(seed=1), step=2)
    assert actor_loss is not None and torch.isfinite(actor_loss)
    name = "Q1.0.weight"
    want = drq.tau * drq.critic.state_dict()[name] + (1 - drq.tau) * before_target[name]
    assert torch.allclose(drq.critic_target.state_dict()[name], want, atol=1e-7)
