"""Queried pairs solved on the fly (bisimkit.query): the same values as the all-pairs solve, within both
certificates, on exactly the pairs the queries reach; bad queries refused in one line."""

from __future__ import annotations

import json
import warnings
from fractions import Fraction

import numpy as np
import pytest
from exact_reference import GROUNDS, exact_fixed_point_fractions
from hypothesis import HealthCheck, given, note, settings, strategies as st

from bisimkit import solve
from bisimkit.engine import PrecisionWarning
from bisimkit.errors import InputError
from bisimkit.examples import mirrored_rooms
from bisimkit.generators import random_mdp
from bisimkit.mdp import FiniteMDP, save_mdp
from bisimkit.operators import QUERY_METRICS, operator
from bisimkit.query import QuerySolution, query_solution
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
        query_solution(mdp, operator("pi"), None, [(0, 1)], 1e-9, max_memory=10_000)
    assert err.value.param == "pairs" and "reach more than" in str(err.value)


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
