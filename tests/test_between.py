"""Distances between two MDPs (``bisimkit.between``): hand-computed cross blocks, the cross block of
the union solve (hypothesis, both orders), the initial pair, and bad input."""

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bisimkit import operators
from bisimkit.between import BETWEEN_METRICS, disjoint_union, solve_between
from bisimkit.cli import main
from bisimkit.errors import InputError
from bisimkit.generators import random_mdp
from bisimkit.mdp import FiniteMDP
from bisimkit.solvers import solve
from validation.strategies import finite_mdps


def chain(rewards, nxt, discount=0.5, initial=None):
    """A one-action deterministic MDP: state s has reward rewards[s] and moves to nxt[s]."""
    n = len(rewards)
    P = np.zeros((n, 1, n))
    P[np.arange(n), 0, nxt] = 1.0
    return FiniteMDP(P, np.array(rewards, float)[:, None], discount, np.ones((n, 1)), initial_state=initial)


# ------------------------------------------------------------ hand-computed
def test_two_by_three_deterministic_by_hand():
    # A: two absorbing states with rewards 0 and 1. B: 0 -> 1 -> 2 -> 2 with rewards 0, 0.5, 1.
    # d(s, t) = |r_s - r_t| + c d(s, next(t)), c = 1/2:
    #   s = 0: d(0, 2) = 1 / (1 - c) = 2, d(0, 1) = 0.5 + 1 = 1.5, d(0, 0) = 0 + 0.75 = 0.75
    #   s = 1: d(1, 2) = 0, d(1, 1) = 0.5, d(1, 0) = 1 + 0.25 = 1.25
    a = chain([0, 1], [0, 1], initial=0)
    b = chain([0, 0.5, 1], [1, 2, 2], initial=1)
    expected = np.array([[0.75, 1.5, 2.0], [1.25, 0.5, 0.0]])
    # With one action and point masses every metric but the mean-action ones reads the same
    # equation (W1, W2, the product coupling and the entangled one all move a point mass).
    for metric in ("pi", "bisim", "mico", "dbc", "dbc-sampled", "eps", "eps-avg", "eps-bar"):
        sol = solve_between(a, b, metric)
        assert sol.distances.shape == (2, 3)
        assert np.max(np.abs(sol.distances - expected)) <= sol.certified_error + 1e-15, metric
        assert sol.initial_states == (0, 1) and sol.initial_distance == pytest.approx(1.5)
    # the other order is the transpose
    back = solve_between(b, a, "pi")
    assert np.max(np.abs(back.distances - expected.T)) <= back.certified_error + 1e-15


def test_two_by_two_stochastic_by_hand():
    # A moves uniformly over its two states (rewards 0, 1); B's two states are absorbing (rewards 0, 1).
    # W1(uniform on A, point at t; d) = mean_x d(x, t), and so is the product coupling, so for pi and
    # mico m_t = mean_x d(x, t) = mean_x |r_x - r_t| + c m_t = 0.5 + c m_t, m_t = 1 at c = 1/2, and
    # d(s, t) = |r_s - r_t| + c m_t = |r_s - r_t| + 0.5.
    P = np.full((2, 1, 2), 0.5)
    a = FiniteMDP(P, np.array([[0.0], [1.0]]), 0.5, np.ones((2, 1)))
    b = chain([0, 1], [0, 1])
    expected = np.array([[0.5, 1.5], [1.5, 0.5]])
    for metric in ("pi", "mico", "bisim"):
        sol = solve_between(a, b, metric)
        assert np.max(np.abs(sol.distances - expected)) <= sol.certified_error + 1e-15, metric
    assert solve_between(a, b, "pi").initial_distance is None  # A declares no initial state


# ------------------------------------------------- the union's cross block
@st.composite
def mdp_pairs(draw):
    """Two MDPs with the same actions and discount (so their disjoint union exists)."""
    a = draw(finite_mdps(min_states=1, max_states=4, max_actions=2, max_support=3))
    b = draw(
        finite_mdps(
            min_states=1,
            max_states=4,
            min_actions=a.n_actions,
            max_actions=a.n_actions,
            max_support=3,
            discounts=st.just(a.discount),
        )
    )
    return a, b


def user_grounds(a, b, seed):
    """A pseudometric on the union's state-action pairs (|f(x) - f(y)| for random f), and its cross block."""
    m = a.n_actions
    f = np.random.default_rng(seed).integers(0, 4, size=(a.n_states + b.n_states) * m) / 2
    G = np.abs(f[:, None] - f[None, :])
    na = a.n_states * m
    return G, G[:na, na:]


def assert_union_cross_block(a, b, metric, ground=None, union_ground=None):
    sol = solve_between(a, b, metric, ground=ground)
    ref = solve(disjoint_union(a, b), metric, ground=union_ground)
    block = ref.distances[: a.n_states, a.n_states :]
    gap = float(np.max(np.abs(sol.distances - block), initial=0.0))
    assert gap <= sol.certified_error + ref.certified_error + 1e-14, (metric, gap)


def check_both_orders(pair, seed):
    a, b = pair
    for x, y in ((a, b), (b, a)):
        for metric in BETWEEN_METRICS:
            assert_union_cross_block(x, y, metric)
        G, cross = user_grounds(x, y, seed)
        assert_union_cross_block(x, y, "eps", cross, G)
        assert_union_cross_block(x, y, "eps-bar", "policy", "policy")


@settings(max_examples=8)
@given(mdp_pairs(), st.integers(0, 100))
def test_equals_the_union_cross_block_both_orders(pair, seed):
    check_both_orders(pair, seed)


@pytest.mark.slow
@settings(max_examples=300)
@given(mdp_pairs(), st.integers(0, 100))
def test_equals_the_union_cross_block_both_orders_long(pair, seed):
    check_both_orders(pair, seed)


def test_dense_pair_equals_union_with_compiled_eps_bar(monkeypatch):
    a, b = random_mdp(9, 3, seed=4), random_mdp(7, 3, seed=5)
    for metric in ("pi", "eps", "bisim", "mico", "eps-bar"):
        assert_union_cross_block(a, b, metric)
    monkeypatch.setattr(operators, "COMPILED_EPS_BAR_PAIRS", 1)  # the compiled assembly of the pair system
    assert_union_cross_block(a, b, "eps-bar")


@pytest.mark.parametrize("metric", ["pi", "mico", "dbc", "dbc-sampled"])
def test_different_action_counts_where_actions_are_not_paired(metric):
    # B with a third action that its policy never takes has the same cross block as B itself:
    # the union with A (three actions) is then defined and gives the reference.
    a, b = random_mdp(4, 3, seed=1, max_support=2), random_mdp(3, 2, seed=2, max_support=2)
    P = np.concatenate([b.transitions, b.transitions[:, :1]], axis=1)
    R = np.concatenate([b.rewards, np.full((3, 1), 7.0)], axis=1)
    padded = FiniteMDP(P, R, b.discount, np.concatenate([b.policy, np.zeros((3, 1))], axis=1))
    sol = solve_between(a, b, metric)
    ref = solve(disjoint_union(a, padded), metric)
    gap = np.max(np.abs(sol.distances - ref.distances[:4, 4:]))
    assert gap <= sol.certified_error + ref.certified_error + 1e-14


def test_user_ground_file_and_four_axis_shape(tmp_path):
    a, b = random_mdp(3, 2, seed=1), random_mdp(2, 2, seed=2)
    G, cross = user_grounds(a, b, 3)
    path = tmp_path / "g.npy"
    np.save(path, cross)
    from_file = solve_between(a, b, "eps", ground=str(path))
    four_axis = solve_between(a, b, "eps", ground=cross.reshape(3, 2, 2, 2))
    assert from_file.ground == "user"
    assert np.array_equal(from_file.distances, four_axis.distances)


def test_gym_envs_declare_their_start_state():
    pytest.importorskip("gymnasium")
    from bisimkit.gym import from_gymnasium

    slippery = from_gymnasium("FrozenLake-v1", policy="uniform")
    steady = from_gymnasium("FrozenLake-v1", policy="uniform", is_slippery=False)
    sol = solve_between(slippery, steady, "pi")
    assert sol.initial_states == (0, 0) and sol.initial_distance == sol.distances[0, 0]
    # Under the uniform policy both average the same moves, so each state is at distance 0 from its twin.
    assert np.max(np.abs(np.diag(sol.distances))) <= sol.certified_error


# --------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "case, param, words",
    [
        ("actions", "mdp_b", "same actions"),
        ("discount", "mdp_b", "one discount"),
        ("ground-shape", "ground", "(n_A*m, n_B*m)"),
        ("ground-negative", "ground", "is negative"),
        ("mico-reduced", "metric", "closed cross block"),
        ("no-policy", "mdp_b", "needs a policy"),
        ("action-values", "mdp_b", "coordinates"),
        ("max-iterations", "max_iterations", "not a positive integer"),
    ],
)
def test_bad_input_names_the_parameter(case, param, words):
    a, b = random_mdp(3, 2, seed=1), random_mdp(4, 2, seed=2)
    metric, ground = "eps", None
    if case == "actions":
        b, metric = random_mdp(4, 3, seed=2), "bisim"
    elif case == "discount":
        b, metric = random_mdp(4, 2, seed=2, discount=0.8), "pi"
    elif case == "ground-shape":
        ground = np.zeros((6, 6))
    elif case == "ground-negative":
        ground = -np.ones((6, 8))
    elif case == "mico-reduced":
        metric = "mico-reduced"
    elif case == "no-policy":
        b, metric = b.with_policy(None), "pi"
    elif case == "action-values":
        b = FiniteMDP(b.transitions, b.rewards, b.discount, b.policy, action_values=[[0.0], [1.0]])
        metric = "psm"
    cap = 0 if case == "max-iterations" else None
    with pytest.raises(InputError) as info:
        solve_between(a, b, metric, ground=ground, max_iterations=cap)
    assert info.value.param == param and words in str(info.value)
    assert not str(info.value).startswith(f"{param}: {param}:")  # the parameter is named once


# ------------------------------------------------------------ command line
def test_cli_against_writes_the_cross_block(tmp_path, capsys):
    a, b = chain([0, 1], [0, 1], initial=0), chain([0, 0.5, 1], [1, 2, 2], initial=1)
    fa, fb = tmp_path / "a.json", tmp_path / "b.json"
    fa.write_text(json.dumps(a.to_dict()))
    fb.write_text(json.dumps(b.to_dict()))
    assert main(["solve", str(fa), "--against", str(fb), "--metric", "pi", "--quiet"]) == 0
    assert "d(0, 1) = 1.5" in capsys.readouterr().out
    out = tmp_path / "d.json"
    assert main(["solve", str(fa), "--against", str(fb), "--metric", "pi", "--quiet", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["shape"] == [2, 3] and data["initial_distance"] == pytest.approx(1.5)
    assert np.allclose(data["distances"], [[0.75, 1.5, 2.0], [1.25, 0.5, 0.0]], atol=1e-9)


@pytest.mark.parametrize(
    "args, flag",
    [
        (["--metric", "bisim", "--against", "B3"], "--against: the second MDP has 3 actions"),
        (["--metric", "pi", "--against", "B08"], "--against: the second MDP's discount 0.8"),
        (["--metric", "eps", "--against", "B", "--ground", "G"], "--ground: "),
        (["--metric", "mico-reduced", "--against", "B"], "--against: metric 'mico-reduced'"),
        (["--metric", "pi", "--against", "B", "--order", "1,0,2"], "--order: does not apply with --against"),
        (
            ["--metric", "pi", "--against", "B", "--max-iterations", "0"],
            "--max-iterations: expected a positive integer",
        ),
    ],
)
def test_cli_bad_input_one_line_exit_2_nothing_written(tmp_path, capsys, args, flag):
    files = {
        "A": random_mdp(3, 2, seed=1),
        "B": random_mdp(4, 2, seed=2),
        "B3": random_mdp(4, 3, seed=2),
        "B08": random_mdp(4, 2, seed=2, discount=0.8),
    }
    paths = {}
    for name, mdp in files.items():
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(mdp.to_dict()))
    np.save(tmp_path / "G.npy", np.zeros((6, 6)))
    paths["G"] = tmp_path / "G.npy"
    argv = ["solve", str(paths["A"])] + [str(paths.get(x, x)) for x in args] + ["--out", str(tmp_path / "d.npy")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and flag in err[0], err
    assert not (tmp_path / "d.npy").exists()


@pytest.mark.parametrize("side", ["A", "B"])
def test_cli_bad_file_content_names_which_mdp(tmp_path, capsys, side):
    good = random_mdp(3, 2, seed=1).to_dict()
    bad = json.loads(json.dumps(good))
    bad["rewards"][0][0] = "x"
    paths = {}
    for name, data in (("good", good), ("bad", bad)):
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(data))
    a, b = (paths["bad"], paths["good"]) if side == "A" else (paths["good"], paths["bad"])
    assert main(["solve", str(a), "--against", str(b), "--metric", "pi", "--out", str(tmp_path / "d.npy")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    prefix = f"{paths['bad']}: " if side == "A" else f"--against {paths['bad']}: "
    assert len(err) == 1 and prefix in err[0] and "rewards" in err[0], err
    assert not (tmp_path / "d.npy").exists()
