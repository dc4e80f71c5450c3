"""Largest bisimulation relations: hand cases, zero sets of the metrics, planted blocks, stormpy."""

import numpy as np
import pytest
from hypothesis import given, strategies as st
from stormpy_check import stormpy_pi_block_count

from bisimkit import example, relation_blocks, solve
from bisimkit.generators import planted_bisimulation, random_mdp
from bisimkit.mdp import FiniteMDP
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


# ------------------------------------------------------------------ the sparse refinement against the dense one
def near_mdp(seed, n=10, m=2, atol=1e-9, sparse=False):
    """Masses from few levels shifted by multiples of 0.45 atol (chains of masses within atol) and small masses
    of 0.45 to 1.35 atol next to 0 (near the zero cluster), few reward levels: the tolerance decides blocks."""
    rng = np.random.default_rng(seed)
    P = np.zeros((n, m, n))
    for s in range(n):
        for a in range(m):
            support = rng.choice(n, size=int(rng.integers(1, 4)), replace=False)
            for t in support[:-1]:
                P[s, a, t] = rng.choice([0.25, 0.5]) / 2 + 0.45 * atol * int(rng.integers(0, 4))
            if rng.random() < 0.5:
                P[s, a, rng.integers(n)] += 0.45 * atol * int(rng.integers(1, 4))
            P[s, a, support[-1]] += 1.0 - P[s, a].sum()
    R = np.floor(rng.random((n, m)) * 2)
    pi = rng.dirichlet(np.ones(m), size=n) if seed % 2 else np.eye(m)[rng.integers(0, m, n)]
    if sparse:
        import scipy.sparse as sp

        return FiniteMDP(sp.csr_matrix(P.reshape(n * m, n)), R, 0.9, pi)
    return FiniteMDP(P, R, 0.9, pi)


def refinement_cases():
    for seed in range(24):
        yield f"near-{seed}", near_mdp(seed, sparse=seed % 3 == 0), 1e-9
    for seed in range(8):
        yield f"wide-{seed}", near_mdp(seed, n=14, m=3, atol=1e-3), 1e-3  # masses well apart from round-off
    for seed in range(8):
        mdp, _ = planted_bisimulation(ties_mdp(seed, n=5), 3, seed=seed)
        yield f"planted-{seed}", mdp, 1e-9


@pytest.mark.parametrize("kind", ["pi", "psm", "bisim", "eps"])
def test_sparse_refinement_gives_the_dense_partition(kind):
    """The same labels as the dense refinement (tests/dense_relations.py), on MDPs where masses chain within atol
    and sit near 0; and the tolerance matters in some of them (else the check could not tell it apart)."""
    from dense_relations import DENSE

    differs = 0
    for name, mdp, atol in refinement_cases():
        got = relation_labels(mdp, kind, atol=atol)
        assert np.array_equal(got, DENSE[kind](mdp, atol=atol)), name
        differs += not np.array_equal(got, relation_labels(mdp, kind, atol=0.0))
    assert differs >= 3


def test_the_relations_of_a_sparse_model_are_those_of_its_dense_copy():
    for seed in range(6):
        sparse, dense = near_mdp(seed, sparse=True), near_mdp(seed)
        for kind in ("pi", "psm", "bisim", "eps"):
            assert np.array_equal(relation_labels(sparse, kind), relation_labels(dense, kind)), (seed, kind)


@pytest.mark.parametrize("N, MAX", [(4, 2), (16, 4), (32, 3)])
def test_brp_blocks_equal_storms_strong_bisimulation(N, MAX):
    """PRISM's brp chain with the reward the indicator of ``target``: as many pi blocks (and bisim blocks, one
    action) as Storm's strong bisimulation quotient preserving the label ``target`` has states."""
    from stormpy_check import brp_chain, storm_strong_blocks

    from bisimkit.mdp import from_stormpy

    model = brp_chain(N, MAX)
    mdp = from_stormpy(model, reward="target", discount=0.9)
    storm = storm_strong_blocks(model, "target")
    assert len(relation_blocks(mdp, "pi")) == len(relation_blocks(mdp, "bisim")) == storm < mdp.n_states
