"""Queried pairs solved on the fly (bisimkit.query): the same values as the all-pairs solve, within both
certificates, on exactly the pairs the queries reach; bad queries refused in one line."""

from __future__ import annotations

import json
import warnings
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from exact_reference import GROUNDS, exact_fixed_point_fractions
from hypothesis import HealthCheck, given, note, settings, strategies as st

from bisimkit import query, solve
from bisimkit.engine import PrecisionWarning
from bisimkit.errors import InputError
from bisimkit.examples import mirrored_rooms
from bisimkit.generators import random_mdp
from bisimkit.mdp import FiniteMDP, save_mdp
from bisimkit.operators import OPERATORS, QUERY_METRICS, operator
from bisimkit.query import QuerySolution, policy_values, query_solution
from validation.strategies import certificate_cases


def _reference_closure(mdp: FiniteMDP, pairs, every_action: bool = False) -> set[tuple[int, int]]:
    """Every pair s < t reachable from the queries through successor pairs of the policy's laws (with
    ``every_action``, of any action's law), by a plain breadth-first search over Python sets."""
    P = mdp.transitions.max(axis=1) if every_action else mdp.transition_pi
    support = [set(np.flatnonzero(P[s] > 0).tolist()) for s in range(mdp.n_states)]
    todo = [(min(s, t), max(s, t)) for s, t in pairs if s != t]
    seen = set(todo)
    while todo:
        s, t = todo.pop()
        for u in support[s]:
            for v in support[t]:
                if u != v and (min(u, v), max(u, v)) not in seen:
                    seen.add((min(u, v), max(u, v)))
                    todo.append((min(u, v), max(u, v)))
    return seen


def test_the_query_metrics_are_the_w1_transport_pseudometrics():
    assert QUERY_METRICS == ("bisim", "pi", "psm", "eps", "eps-avg")
    assert not operator("dbc").queries and not operator("dbc-sampled").queries and not operator("mico").queries


@pytest.mark.parametrize("metric", QUERY_METRICS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_queried_values_equal_the_all_pairs_solve_within_both_certificates(metric, seed):
    mdp = random_mdp(25, 3, seed=seed, max_support=2)
    full = solve(mdp, metric, quotient=False)
    pairs = np.random.default_rng(seed).integers(0, 25, size=(6, 2))
    q = solve(mdp, metric, pairs=pairs)
    assert isinstance(q, QuerySolution) and q.converged
    assert q.distances.shape == (6,)
    expected = full.distances[pairs[:, 0], pairs[:, 1]]
    assert np.all(np.abs(q.distances - expected) <= q.certified_error + full.certified_error)
    assert np.all(q.lower <= q.distances) and np.all(q.distances <= q.upper)


def test_only_the_pairs_the_queries_reach_are_solved():
    mdp = random_mdp(60, 2, seed=4, max_support=2)
    pairs = [(0, 1), (5, 9)]
    q = solve(mdp, "pi", pairs=pairs, quotient=False)
    reach = _reference_closure(mdp, pairs)
    assert q.explored == len(reach)
    assert q.explored < 60 * 59 // 2
    per_action = solve(mdp, "bisim", pairs=pairs, quotient=False)  # a max over every action's laws
    assert per_action.explored == len(_reference_closure(mdp, pairs, every_action=True)) >= q.explored


def test_a_diagonal_query_is_zero_and_no_query_is_an_empty_answer():
    mdp = random_mdp(10, 2, seed=5)
    q = solve(mdp, "pi", pairs=[(3, 3)])
    assert q.distances.tolist() == [0.0] and q.explored == 0
    empty = solve(mdp, "pi", pairs=np.zeros((0, 2), dtype=int))
    assert empty.distances.shape == (0,)


@pytest.mark.parametrize("metric", ["pi", "eps"])
def test_queries_on_a_model_that_merges_are_solved_between_blocks(metric):
    mdp = mirrored_rooms(policy=True, discount=0.9)
    full = solve(mdp, metric)
    n = mdp.n_states
    pairs = np.array([(0, n - 1), (1, n // 2), (2, 3)])
    q = solve(mdp, metric, pairs=pairs)
    assert "blocks of the largest relation" in q.method
    expected = full.distances[pairs[:, 0], pairs[:, 1]]
    assert np.all(np.abs(q.distances - expected) <= q.certified_error + full.certified_error)
    plain = solve(mdp, metric, pairs=pairs, quotient=False)
    assert "blocks" not in plain.method
    assert np.all(np.abs(plain.distances - expected) <= plain.certified_error + full.certified_error)


def test_a_closure_over_the_budget_is_refused_before_any_transport_work():
    mdp = random_mdp(40, 2, seed=6, max_support=3)
    with pytest.raises(InputError) as err:
        query_solution(mdp, operator("psm"), None, [(0, 1)], 1e-9, max_memory=10_000)
    assert err.value.param == "pairs" and "reach more than" in str(err.value)
    with pytest.raises(InputError) as err:  # pi explores; the queried pairs themselves must fit
        query_solution(mdp, operator("pi"), None, [(s, s + 1) for s in range(39)], 1e-9, max_memory=10_000)
    assert err.value.param == "pairs" and "query fewer pairs" in str(err.value)


def _lossy_chain(length: int, seed: int, fail: float = 1e-3) -> FiniteMDP:
    """A chain of ``length`` steps, each moving on, falling back to a random earlier step (1-5%) or failing
    (at most ``fail``), reward 1 on failing and 0 elsewhere: the values are small and every pair of steps
    reaches nearly every other, as in a retransmission protocol."""
    rng = np.random.default_rng(seed)
    n = length + 2
    rows, cols, vals = [], [], []
    for i in range(length):
        back, p, f = int(rng.integers(0, i + 1)), float(rng.uniform(0.01, 0.05)), fail * float(rng.uniform())
        rows += [i, i, i]
        cols += [i + 1 if i + 1 < length else length + 1, back, length]
        vals += [1 - p - f, p, f]
    rows += [length, length + 1]
    cols += [length + 1, length + 1]
    vals += [1.0, 1.0]
    P = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
    P.sum_duplicates()
    P = sp.csr_matrix(P.multiply(1 / P.sum(axis=1)))
    rewards = np.zeros((n, 1))
    rewards[length, 0] = 1.0
    return FiniteMDP(P, rewards, 0.9, policy=np.ones((n, 1)))


def test_only_pi_is_bracketed_by_the_values():
    assert [name for name, op in OPERATORS.items() if op.value_bracketed] == ["pi"]


@pytest.mark.parametrize("seed", range(4))
def test_the_policy_values_bracket_every_pi_distance(seed):
    """``|V(s) - V(t)| <= d(s, t) <= V(s) + V(t)`` for the values of the rewards shifted to be non-negative,
    on random MDPs whose rewards are partly negative, with every error bound taken into account."""
    base = random_mdp(30, 3, seed=seed, max_support=3)
    mdp = FiniteMDP(base.transitions, base.rewards - 0.4 * seed, 0.9, policy=base.policy)
    V, error = policy_values(mdp, 1e-13)
    assert error < 1e-12
    full = solve(mdp, "pi", quotient=False)
    low = np.abs(V[:, None] - V[None, :]) - 2 * error - full.certified_error
    high = V[:, None] + V[None, :] + 2 * error + full.certified_error
    off = ~np.eye(30, dtype=bool)
    assert np.all(low[off] <= full.distances[off]) and np.all(full.distances[off] <= high[off])
    assert np.max(full.distances[off] - np.abs(V[:, None] - V[None, :])[off]) > 1e-3  # the bracket is not tight


def test_the_policy_values_are_within_their_bound_of_the_exact_rational_values():
    mdp = _lossy_chain(12, 3, fail=0.2)
    V, error = policy_values(mdp, 1e-14)
    n, c = mdp.n_states, Fraction(mdp.discount)
    P = mdp.transition_pi
    rows = [[Fraction(float(x)) for x in P[s]] for s in range(n)]
    A = [
        [(Fraction(s == t) - c * rows[s][t] / sum(rows[s])) for t in range(n)] + [Fraction(float(mdp.reward_pi[s]))]
        for s in range(n)
    ]
    for k in range(n):  # Gauss-Jordan elimination in rational arithmetic
        pivot = next(i for i in range(k, n) if A[i][k] != 0)
        A[k], A[pivot] = A[pivot], A[k]
        A[k] = [x / A[k][k] for x in A[k]]
        for i in range(n):
            if i != k and A[i][k] != 0:
                A[i] = [x - A[i][k] * y for x, y in zip(A[i], A[k])]
    shift = Fraction(float(np.min(mdp.reward_pi))) / (1 - c)
    assert all(abs(Fraction(float(V[s])) - (A[s][n] - shift)) <= Fraction(error) for s in range(n))
    assert error < 1e-13


@pytest.mark.parametrize("length, seed", [(60, 0), (120, 1)])
def test_explored_queries_agree_with_the_all_pairs_solve(monkeypatch, length, seed):
    """Past :data:`bisimkit.query.CLOSURE_PAIRS` pi explores the pairs the queries depend on most and brackets
    the others: the answers agree with the all-pairs solve within both certificates, the brackets hold the
    exact values, and fewer pairs than the closure's are solved."""
    monkeypatch.setattr(query, "CLOSURE_PAIRS", 0)
    mdp = _lossy_chain(length, seed)
    pairs = [(0, s) for s in range(1, length, 7)] + [(5, 5), (length, length + 1)]
    q = solve(mdp, "pi", pairs=pairs, quotient=False)
    assert q.converged and q.certified_error <= 1e-9 and "bracketed by the policy's values" in q.method
    full = solve(mdp, "pi", quotient=False)
    exact = full.distances[[s for s, _ in pairs], [t for _, t in pairs]]
    assert np.all(np.abs(q.distances - exact) <= q.certified_error + full.certified_error)
    assert np.all(q.lower - full.certified_error <= exact) and np.all(exact <= q.upper + full.certified_error)
    assert q.distances[-2] == 0.0 and q.explored <= len(_reference_closure(mdp, pairs))
    if length == 120:
        assert q.explored < len(_reference_closure(mdp, pairs))


def test_explored_queries_of_a_policy_over_actions_agree_with_the_all_pairs_solve(monkeypatch):
    monkeypatch.setattr(query, "CLOSURE_PAIRS", 0)
    mdp = random_mdp(40, 3, seed=4, max_support=2)
    pairs = np.random.default_rng(4).integers(0, 40, size=(8, 2))
    q = solve(mdp, "pi", pairs=pairs, quotient=False)
    full = solve(mdp, "pi", quotient=False)
    exact = full.distances[pairs[:, 0], pairs[:, 1]]
    assert q.converged and np.all(np.abs(q.distances - exact) <= q.certified_error + full.certified_error)


def test_an_exploration_stopped_by_the_memory_budget_keeps_certified_brackets(monkeypatch):
    monkeypatch.setattr(query, "CLOSURE_PAIRS", 0)
    mdp = _lossy_chain(80, 2)
    pairs = [(0, 40), (3, 70)]
    q = query_solution(mdp, operator("pi"), None, pairs, 1e-9, max_memory=200 * (query.PAIR_BYTES + 9 * 64))
    assert not q.converged and "memory budget" in q.method and q.explored < 250 and q.floor == 0.0
    full = solve(mdp, "pi", quotient=False)
    exact = full.distances[[0, 3], [40, 70]]
    assert np.all(q.lower - full.certified_error <= exact) and np.all(exact <= q.upper + full.certified_error)
    assert np.all(np.abs(q.distances - exact) <= q.certified_error + full.certified_error)


@pytest.mark.parametrize(
    "pairs, needle",
    [
        ([(0, 99)], "state 99 is out of range"),
        ([(0, 1, 2)], "expected (s, t) pairs"),
        ([(0.5, 1.0)], "expected (s, t) pairs"),
    ],
)
def test_bad_queries_name_the_entry(pairs, needle):
    with pytest.raises(InputError) as err:
        solve(random_mdp(8, 2, seed=1), "pi", pairs=pairs)
    assert err.value.param == "pairs" and needle in str(err.value)


def test_operators_without_on_the_fly_queries_and_settings_that_do_not_apply_are_refused():
    mdp = random_mdp(8, 2, seed=1)
    with pytest.raises(InputError) as err:
        solve(mdp, "dbc", pairs=[(0, 1)])
    assert err.value.param == "pairs" and "bisim, pi, psm, eps, eps-avg" in str(err.value)
    with pytest.raises(InputError) as err:
        solve(mdp, "pi", pairs=[(0, 1)], method="vi")
    assert err.value.param == "method"
    with pytest.raises(InputError) as err:
        solve(mdp, "pi", pairs=[(0, 1)], discount=0.5)
    assert err.value.param == "discount"
    P = np.zeros((3, 2, 3))
    P[:, :, 0] = 1.0
    with pytest.raises(InputError, match="metric 'psm' needs a policy"):
        solve(FiniteMDP(P, np.zeros((3, 2)), 0.9), "psm", pairs=[(0, 1)])


def test_the_json_record_carries_the_pairs_and_the_bracket():
    q = solve(random_mdp(8, 2, seed=2), "psm", pairs=[(0, 1), (2, 7)])
    out = q.to_json()
    assert out["pairs"] == [[0, 1], [2, 7]] and len(out["lower"]) == 2 and out["explored"] == q.explored


def test_the_command_line_writes_one_row_per_queried_pair(tmp_path, capsys):
    from bisimkit_cli.main import main

    mdp = random_mdp(20, 2, seed=3, max_support=2)
    save_mdp(mdp, tmp_path / "m.npz")
    (tmp_path / "p.json").write_text(json.dumps([[0, 5], [2, 9]]))
    out = tmp_path / "d.csv"
    assert (
        main(
            ["solve", str(tmp_path / "m.npz"), "--metric", "pi", "--pairs", str(tmp_path / "p.json"), "--out", str(out)]
        )
        == 0
    )
    rows = out.read_text().splitlines()
    assert rows[0] == "s,t,distance,lower,upper" and len(rows) == 3
    full = solve(mdp, "pi")
    assert abs(float(rows[1].split(",")[2]) - full.distances[0, 5]) <= 1e-9
    assert main(["solve", str(tmp_path / "m.npz"), "--metric", "bisim", "--pairs", str(tmp_path / "p.json")]) == 0
    assert main(["solve", str(tmp_path / "m.npz"), "--metric", "dbc", "--pairs", str(tmp_path / "p.json")]) == 2
    assert "--pairs" in capsys.readouterr().err


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(certificate_cases(QUERY_METRICS, GROUNDS), st.randoms(use_true_random=False))
def test_queried_values_are_within_their_certificate_of_the_exact_rational_fixed_point(case, rnd):
    """The adversarial MDPs of the certificate audit (round-off, near-ties, large and tiny rewards), solved in
    rational arithmetic by the independent reference: every queried value is within its certificate."""
    mdp, metric, ground, tol, quotient = case
    note(f"the MDP in full precision: {mdp.to_dict()}")
    n = mdp.n_states
    pairs = [(rnd.randrange(n), rnd.randrange(n)) for _ in range(3)]
    exact = exact_fixed_point_fractions(mdp, metric, ground or "reward")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionWarning)
        sol = solve(mdp, metric, ground=ground, tol=tol, quotient=quotient, pairs=pairs)
    for (s, t), d in zip(pairs, sol.distances):
        error = abs(Fraction(float(d)) - exact[s][t])
        assert error <= Fraction(sol.certified_error) + Fraction(abs(float(d))) * Fraction(2) ** -53, (
            f"{metric} d({s}, {t}) = {d!r}: off by {float(error):.3g}, certificate {sol.certified_error:.3g}"
        )
    if sol.converged:
        assert sol.certified_error <= tol


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(certificate_cases(("pi",), GROUNDS), st.randoms(use_true_random=False))
def test_explored_values_are_within_their_certificate_of_the_exact_rational_fixed_point(case, rnd):
    """The same adversarial MDPs, every pi query solved by exploration with the value brackets beyond it."""
    mdp, metric, ground, tol, quotient = case
    note(f"the MDP in full precision: {mdp.to_dict()}")
    n = mdp.n_states
    pairs = [(rnd.randrange(n), rnd.randrange(n)) for _ in range(3)]
    exact = exact_fixed_point_fractions(mdp, metric, ground or "reward")
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        patch.setattr(query, "CLOSURE_PAIRS", 0)
        warnings.simplefilter("ignore", PrecisionWarning)
        sol = solve(mdp, metric, ground=ground, tol=tol, quotient=quotient, pairs=pairs)
    for (s, t), d, low, high in zip(pairs, sol.distances, sol.lower, sol.upper):
        error = abs(Fraction(float(d)) - exact[s][t])
        assert error <= Fraction(sol.certified_error) + Fraction(abs(float(d))) * Fraction(2) ** -53, (
            f"{metric} d({s}, {t}) = {d!r}: off by {float(error):.3g}, certificate {sol.certified_error:.3g}"
        )
        assert Fraction(float(low)) <= exact[s][t] <= Fraction(float(high))


def test_an_exploration_below_the_float64_floor_stops_with_a_precision_warning(monkeypatch):
    monkeypatch.setattr(query, "CLOSURE_PAIRS", 0)
    mdp = _lossy_chain(60, 0)
    with pytest.warns(PrecisionWarning):
        q = solve(mdp, "pi", pairs=[(0, 30)], quotient=False, tol=1e-18)
    assert not q.converged and q.floor > 1e-18 and q.iterations < query.MAX_STEPS
    full = solve(mdp, "pi", quotient=False)
    assert q.lower[0] - full.certified_error <= full.distances[0, 30] <= q.upper[0] + full.certified_error
