"""Largest bisimulation relations: hand cases, zero sets of the metrics, planted blocks, stormpy."""

import numpy as np
import pytest
from hypothesis import given, strategies as st
from stormpy_check import stormpy_pi_block_count

from bisimkit import example, relation_blocks, solve
from bisimkit.generators import planted_bisimulation, random_mdp
from bisimkit.relations import blocks, cluster_values, relation_labels, zero_set_labels


def same_partition(a, b):
    return blocks(a) == blocks(b)


def test_four_state_pi_relation():
    assert relation_blocks(example("four-state"), "pi") == [[0], [1, 2], [3]]


def test_cluster_values_tolerance():
    ids = cluster_values(np.array([0.3, 0.1 + 0.2, 0.5, 0.30000001]), 1e-9)
    assert ids[0] == ids[1] and ids[0] != ids[2] and ids[0] != ids[3]


def test_mirrored_rooms_policy_relation_groups_mirror_states():
    mdp = example("mirrored-rooms-policy")
    bl = relation_blocks(mdp, "pi")
    sol = solve(mdp, "pi")
    assert same_partition(zero_set_labels(sol.distances), relation_labels(mdp, "pi"))
    assert len(bl) < mdp.n_states


def ties_mdp(seed, n=7, m=2):
    """Random MDPs with few reward levels and small supports: non-trivial relations."""
    return random_mdp(n, m, seed=seed, max_support=2, reward_levels=2, policy="deterministic")


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kind, metric", [("pi", "pi"), ("bisim", "bisim"), ("eps", "eps")])
def test_zero_sets_match_relations(seed, kind, metric):
    base = ties_mdp(seed, n=4)
    mdp, _ = planted_bisimulation(base, 2, seed=seed)
    sol = solve(mdp, metric)
    assert same_partition(zero_set_labels(sol.distances), relation_labels(mdp, kind))


@pytest.mark.parametrize("seed", range(5))
def test_planted_blocks_are_pullbacks_and_match_stormpy(seed):
    base = random_mdp(5, 2, seed=seed, reward_levels=2, max_support=2)
    mdp, origin = planted_bisimulation(base, [2, 3, 1, 2, 2], seed=seed)
    base_labels = relation_labels(base, "pi")
    assert same_partition(relation_labels(mdp, "pi"), base_labels[origin])
    for kind in ("bisim", "eps"):
        assert same_partition(relation_labels(mdp, kind), relation_labels(base, kind)[origin])
    count = len(relation_blocks(mdp, "pi"))
    assert count == stormpy_pi_block_count(mdp)
    assert same_partition(zero_set_labels(solve(mdp, "pi").distances), relation_labels(mdp, "pi"))


@given(st.integers(0, 10_000), st.integers(2, 4), st.integers(1, 3))
def test_planted_zero_sets_property(seed, n, copies):
    base = ties_mdp(seed, n=n)
    mdp, origin = planted_bisimulation(base, copies, seed=seed)
    d = solve(mdp, "pi").distances
    labels = relation_labels(mdp, "pi")
    assert same_partition(zero_set_labels(d), labels)
    # copies of one base state are always related
    for b in range(n):
        members = np.nonzero(origin == b)[0]
        assert len(set(labels[members].tolist())) == 1


def test_relations_nest():
    # E_bisim and E_eps (reward ground) are both inside E_pi.
    for seed in range(5):
        mdp, _ = planted_bisimulation(ties_mdp(seed, n=4), 2, seed=seed)
        pi = relation_labels(mdp, "pi")
        for kind in ("bisim", "eps"):
            inner = relation_labels(mdp, kind)
            for block in blocks(inner):
                assert len(set(pi[block].tolist())) == 1
