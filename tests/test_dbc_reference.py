"""The transcription of DBC's update on small networks: its losses on each step, the shared convolutions, the
transition model's bounded sigma, and the targets' two rates."""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from benchmarks.dbc_reference import DBC  # noqa: E402

SIZE, SIDE = 20, 3  # see tests/test_drq_reference.py


def batch(rows=4, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "obs": rng.integers(0, 256, (rows, 3, SIZE, SIZE), dtype=np.uint8),
        "next_obs": rng.integers(0, 256, (rows, 3, SIZE, SIZE), dtype=np.uint8),
        "action": rng.uniform(-1, 1, (rows, 2)).astype(np.float32),
        "reward": rng.uniform(0, 1, rows).astype(np.float32),
        "discount": np.ones(rows, np.float32),
    }


def test_the_losses_of_each_step():
    torch.manual_seed(0)
    dbc = DBC(3, SIDE, 2, hidden=16)
    odd = dbc.update(batch(), step=1)
    assert set(odd) == {"critic_loss", "transition_loss", "transition_loss_scale", "reward_loss", "bisim_loss"}
    even = dbc.update(batch(seed=1), step=2)
    assert {"actor_loss", "actor_loss_scale"} <= set(even) and all(torch.isfinite(v) for v in even.values())
    assert dbc.actor.encoder.convs is dbc.critic.encoder.convs
    assert set(dbc.networks()) == {"critic", "actor", "critic_target", "transition", "reward_decoder"}


def test_sigma_is_bounded_and_the_targets_move_at_their_rates():
    torch.manual_seed(2)
    dbc = DBC(3, SIDE, 2, hidden=16)
    _, sigma = dbc.transition(torch.randn(5, 52) * 100)
    assert (sigma >= dbc.transition.min_sigma).all() and (sigma <= dbc.transition.max_sigma).all()
    before = copy.deepcopy(dbc.critic_target.state_dict())
    dbc.update(batch(), step=2)
    now, target = dbc.critic.state_dict(), dbc.critic_target.state_dict()
    for name, tau in (("Q1.0.weight", dbc.critic_tau), ("encoder.convs.0.weight", dbc.encoder_tau)):
        assert torch.allclose(target[name], tau * now[name] + (1 - tau) * before[name], atol=1e-7), name
    assert dbc.critic_tau != dbc.encoder_tau
