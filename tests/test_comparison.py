"""Several metrics side by side: the metric list, Spearman's correlation, the summary and its CSV."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from bisimkit import example, solve
from bisimkit.comparison import SUMMARY_FIELDS, check_compare, compare, parse_metrics, spearman
from bisimkit.errors import InputError


def test_metric_lists_are_read_once_each():
    assert parse_metrics(" pi, mico,pi ,") == ["pi", "mico"]
    assert parse_metrics(["eps-bar", "pi"]) == ["eps-bar", "pi"]
    with pytest.raises(InputError, match=r"^metrics: no metric named"):
        parse_metrics(" , ")
    with pytest.raises(InputError, match=r"^metrics: .*'nope'"):
        parse_metrics("pi,nope")


def test_spearman_by_hand():
    assert spearman(np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 30.0])) == pytest.approx(1.0)
    assert spearman(np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])) == pytest.approx(-1.0)
    # ranks (1, 2, 3) and (1.5, 1.5, 3): correlation sqrt(3)/2
    assert spearman(np.array([1.0, 2.0, 3.0]), np.array([5.0, 5.0, 9.0])) == pytest.approx(np.sqrt(3) / 2)
    assert np.isnan(spearman(np.ones(3), np.arange(3.0))) and np.isnan(spearman(np.ones(1), np.ones(1)))


def test_a_ground_for_metrics_without_one_is_refused():
    with pytest.raises(InputError, match=r"^ground: none of mico has a ground term"):
        check_compare(example("chain"), "mico", ground="reward")


def test_the_comparison_holds_each_solution_and_its_summary():
    mdp = example("chain")
    result = compare(mdp, "pi,mico")
    assert np.array_equal(result.distances["mico"], solve(mdp, "mico").distances)
    rows = result.summary()
    assert [row["metric"] for row in rows] == ["pi", "mico"]
    assert rows[0]["spearman_pi"] == pytest.approx(1.0)
    D = result.distances["pi"]
    assert rows[0]["max"] == D[~np.eye(mdp.n_states, dtype=bool)].max()
    parsed = list(csv.DictReader(io.StringIO(result.to_csv())))
    assert list(parsed[0])[: len(SUMMARY_FIELDS)] == list(SUMMARY_FIELDS)
    assert float(parsed[1]["max"]) == rows[1]["max"]  # 17 digits: the float round-trips
