"""The seeded generators of random MDPs: stochastic rows, reproducibility, the planted structure."""

from __future__ import annotations

import numpy as np
import pytest

from bisimkit.generators import (
    lift,
    non_interchangeable_mdp,
    planted_bisimulation,
    product_grid_mdp,
    random_distributions,
    random_mdp,
    random_policy,
)


def test_random_distributions_are_histograms_with_the_asked_support():
    rng = np.random.default_rng(0)
    X = random_distributions(rng, 50, 6, max_support=2)
    assert np.allclose(X.sum(axis=1), 1) and (X >= 0).all() and ((X > 0).sum(axis=1) <= 2).all()
    D = random_distributions(rng, 10, 6, deterministic=True)
    assert ((D == 1).sum(axis=1) == 1).all() and D.sum() == 10


@pytest.mark.parametrize("kind", ["dirichlet", "deterministic", "uniform", "sparse"])
def test_random_policies_are_stochastic(kind):
    pi = random_policy(np.random.default_rng(1), 5, 3, kind)
    assert pi.shape == (5, 3) and np.allclose(pi.sum(axis=1), 1) and (pi >= 0).all()


def test_an_unknown_policy_kind_is_refused():
    with pytest.raises(ValueError, match="unknown policy kind 'greedy'"):
        random_policy(np.random.default_rng(0), 2, 2, "greedy")


def test_a_seed_gives_the_same_mdp():
    a, b = (
        random_mdp(5, 2, seed=3, reward_levels=3, action_dim=2),
        random_mdp(5, 2, seed=3, reward_levels=3, action_dim=2),
    )
    assert np.array_equal(a.transitions, b.transitions) and np.array_equal(a.rewards, b.rewards)
    assert set(np.unique(a.rewards)) <= {0.0, 0.5, 1.0} and a.action_values.shape == (2, 2)
    assert not np.array_equal(a.transitions, random_mdp(5, 2, seed=4).transitions)


def test_lifted_copies_keep_the_base_mass():
    base = random_mdp(3, 2, seed=0)
    origin = np.array([0, 1, 1, 2, 2, 2])
    lifted = lift(base, origin, lambda k: np.ones(k))
    for s in range(6):
        to_base = np.stack([lifted.transitions[s][:, origin == b].sum(axis=1) for b in range(3)], axis=1)
        assert np.allclose(to_base, base.transitions[origin[s]])
        assert np.array_equal(lifted.rewards[s], base.rewards[origin[s]])
    assert np.allclose(lifted.transitions[0, :, 3:], base.transitions[0, :, 2:3] / 3)


def test_planted_copies_count_as_asked():
    mdp, origin = planted_bisimulation(random_mdp(3, 2, seed=0), 2, seed=1)
    assert mdp.n_states == 6 and np.bincount(origin).tolist() == [2, 2, 2]


def test_a_product_grid_factors_over_its_coordinates():
    mdp = product_grid_mdp((2, 3), 2, seed=0)
    assert mdp.state_shape == (2, 3)
    law = mdp.transitions[4, 1].reshape(2, 3)
    assert np.allclose(law, np.outer(law.sum(axis=1), law.sum(axis=0)))


def test_non_interchangeable_actions_permute_each_state():
    mdp = non_interchangeable_mdp(4, 3, seed=0)
    assert np.allclose(mdp.transitions.sum(axis=2), 1) and np.allclose(mdp.policy.sum(axis=1), 1)
