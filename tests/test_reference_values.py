"""Published values and agreement with the slow reference (per-pair ot.emd2 value iteration)."""

import numpy as np
import pytest

from bisimkit import example, solve
from bisimkit.generators import random_mdp
from validation.reference import reference_fixed_point

ALL_METRICS = [
    "bisim",
    "pi",
    "psm",
    "psm-sampled",
    "mico",
    "mico-reduced",
    "dbc",
    "dbc-sampled",
    "eps",
    "eps-avg",
    "eps-bar",
]
W1_METRICS = ["bisim", "pi", "psm", "eps", "eps-avg"]


def test_castro_four_state_d_pi():
    sol = solve(example("four-state"), "pi")
    expected = np.array([[0, 4.5, 4.5, 5.5], [4.5, 0, 0, 10], [4.5, 0, 0, 10], [5.5, 10, 10, 0]])
    np.testing.assert_allclose(sol.distances, expected, atol=1e-9)
    assert sol.certified_error <= 1e-9


def test_two_state_chain_mico():
    sol = solve(example("two-state-chain"), "mico")
    assert sol.distances[0, 1] == pytest.approx(1 / 0.55, abs=1e-9)
    # U(0,0) = 0.9 (U00/4 + U01/2)  =>  U00 = 0.45 U01 / 0.775
    assert sol.distances[0, 0] == pytest.approx(0.45 / 0.55 / 0.775, abs=1e-9)


@pytest.mark.parametrize("metric", W1_METRICS)
@pytest.mark.parametrize("method", ["exact", "vi"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_w1_operators_match_reference(metric, method, seed):
    mdp = random_mdp(5, 3, seed=seed, discount=0.8)
    sol = solve(mdp, metric, method=method, tol=1e-10)
    ref = reference_fixed_point(mdp, metric)
    np.testing.assert_allclose(sol.distances, ref, atol=1e-8, rtol=0)
    assert sol.certified_error <= 1e-10


@pytest.mark.parametrize("metric", ["psm-sampled", "mico", "mico-reduced", "dbc", "dbc-sampled", "eps-bar"])
@pytest.mark.parametrize("seed", [3, 4])
def test_other_operators_match_reference(metric, seed):
    mdp = random_mdp(5, 2, seed=seed, discount=0.8, max_support=3, action_dim=2)
    sol = solve(mdp, metric, tol=1e-10)
    ref = reference_fixed_point(mdp, metric)
    np.testing.assert_allclose(sol.distances, ref, atol=1e-8, rtol=0)


@pytest.mark.parametrize("ground", ["reward", "policy"])
@pytest.mark.parametrize("metric", ["eps", "eps-avg", "eps-bar"])
def test_eps_family_grounds_match_reference(metric, ground):
    mdp = random_mdp(5, 3, seed=11, discount=0.7, max_support=3, action_dim=2)
    sol = solve(mdp, metric, ground=ground, tol=1e-10)
    ref = reference_fixed_point(mdp, metric, ground=ground)
    np.testing.assert_allclose(sol.distances, ref, atol=1e-8, rtol=0)


def test_user_ground_matches_reference():
    mdp = random_mdp(4, 2, seed=5, discount=0.8)
    # A pseudometric on state-action pairs: L1 distance between random embeddings.
    emb = np.random.default_rng(0).normal(size=(8, 3))
    G = np.abs(emb[:, None, :] - emb[None, :, :]).sum(-1)
    for metric in ("eps", "eps-bar"):
        sol = solve(mdp, metric, ground=G, tol=1e-10)
        ref = reference_fixed_point(mdp, metric, ground=G)
        np.testing.assert_allclose(sol.distances, ref, atol=1e-8, rtol=0)
    assert solve(mdp, "eps", ground=G).ground == "user"


def test_deterministic_grid_bisim_matches_direct_recursion():
    mdp = example("mirrored-rooms")
    nxt = mdp.transitions.argmax(axis=2)
    R, c = mdp.rewards, mdp.discount
    d = np.zeros((31, 31))
    for _ in range(4000):
        d = np.max(np.abs(R[:, None, :] - R[None, :, :]) + c * d[nxt[:, None, :], nxt[None, :, :]], axis=2)
    sol = solve(mdp, "bisim")
    np.testing.assert_allclose(sol.distances, d, atol=1e-8)
