"""Published values and agreement with the slow reference (per-pair ot.emd2 value iteration)."""

import numpy as np
import pytest

from bisimkit import example, solve
from bisimkit.generators import random_mdp
from validation.reference import reference_fixed_point

ALL_METRICS = ["bisim", "pi", "psm", "psm-sampled", "mico", "mico-reduced", "dbc", "dbc-sampled",
               "eps", "eps-avg", "eps-bar"]
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


def test_timed_baseline_finishes_or_extrapolates():
    from validation.reference import timed_baseline

    mdp = random_mdp(5, 2, seed=0, discount=0.5)
    done = timed_baseline(mdp, "pi", tol=1e-9, budget=30)
    assert done["finished"] and done["sweeps"] == done["sweeps_needed"]
    cut = timed_baseline(random_mdp(40, 2, seed=0, discount=0.9), "pi", tol=1e-9, budget=0.05)
    assert not cut["finished"] and cut["sweeps_needed"] > 30 and cut["seconds_extrapolated"] > cut["seconds"]


def test_timed_baseline_measures_the_sweeps_when_the_loop_finishes():
    from validation.reference import reference_operator, timed_baseline

    mdp = random_mdp(6, 2, seed=1, discount=0.8)
    d, sweeps = np.zeros((6, 6)), 0
    while True:  # the plain loop on every ordered pair, counted independently
        new = reference_operator(mdp, "pi", d)
        step, d, sweeps = np.max(np.abs(new - d)), new, sweeps + 1
        if 0.8 / 0.2 * step <= 1e-9:
            break
    base = timed_baseline(mdp, "pi", tol=1e-9, budget=60, contraction=0.99, contraction_source="n=3")
    assert base["finished"] and base["basis"] == "measured" and base["stopped"] == "converged"
    assert base["sweeps"] == base["sweeps_needed"] == sweeps == len(base["steps"])
    assert base["seconds_total"] == base["seconds"] and base["contraction"] is None  # the 0.99 was not used
    assert 0 < base["observed_contraction"] < 0.8


def test_timed_baseline_extrapolates_with_the_supplied_contraction():
    from validation.reference import BASIS_APRIORI, observed_contraction, sweeps_needed, timed_baseline

    mdp = random_mdp(8, 2, seed=0, discount=0.9)
    full = timed_baseline(mdp, "pi", tol=1e-9, budget=60)
    r = full["observed_contraction"]
    assert r == observed_contraction(full["steps"])
    assert sweeps_needed(full["steps"][0], 1, r, 1e-9, 0.9) == full["sweeps"]  # r reproduces the count from sweep 1

    # finish=True: the extrapolation after sweep 1 uses the supplied contraction, next to the measurement.
    checked = timed_baseline(mdp, "pi", tol=1e-9, budget=60, contraction=r, contraction_source="n=8", finish=True)
    check = checked["extrapolation_check"]
    assert checked["finished"] and checked["sweeps"] == full["sweeps"]
    assert check["basis"] == f"extrapolated from n=8 (r = {r:.3f})" and check["sweeps_done"] == 1
    assert check["extrapolated_sweeps"] == check["measured_sweeps"] == full["sweeps"]
    slower = timed_baseline(mdp, "pi", tol=1e-9, budget=60, contraction=r ** 0.5, contraction_source="n=8",
                            finish=True)["extrapolation_check"]
    assert slower["extrapolated_sweeps"] == sweeps_needed(full["steps"][0], 1, r ** 0.5, 1e-9, 0.9) > full["sweeps"]

    # Stopped in the first sweep (budget 0): the sweeps come from the supplied contraction, the time from the pairs done.
    cut = timed_baseline(mdp, "pi", tol=1e-9, budget=0, contraction=r, contraction_source="n=8")
    assert not cut["finished"] and cut["sweeps"] == 0 and cut["pairs_done"] >= 1 and cut["stopped"] == "budget"
    assert cut["basis"].startswith("extrapolated from n=8") and cut["contraction"] == r
    assert cut["seconds_total"] == pytest.approx(cut["seconds_per_sweep"] * cut["sweeps_needed"])
    blind = timed_baseline(mdp, "pi", tol=1e-9, budget=0)  # no contraction known: the a-priori rate c
    assert blind["basis"] == BASIS_APRIORI and blind["contraction"] == 0.9
    assert blind["sweeps_needed"] > cut["sweeps_needed"]
