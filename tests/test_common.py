"""The benchmarks' shared harness: the two MDP recipes, the peak memory, one measurement record and the
scripts' command line."""

import json
import sys

import numpy as np
import pytest

from benchmarks import common
from bisimkit import solve


def test_the_recipes_are_seeded_and_the_sparse_one_caps_the_successors():
    a, b = common.published_mdp(12, seed=3), common.published_mdp(12, seed=3)
    assert np.array_equal(a.transitions, b.transitions) and a.n_actions == 4 and a.discount == common.DISCOUNT
    sparse = common.sparse_mdp(30, m=2, successors=3)
    assert (sparse.transitions > 0).sum(axis=2).max() <= 3 and sparse.n_states == 30


def test_a_record_without_the_baseline_is_the_solve():
    mdp = common.published_mdp(8)
    record = common.measure("dense", mdp, "pi", budget=0)
    sol = solve(mdp, "pi", tol=common.TOL)
    assert (record["n"], record["m"], record["method"]) == (8, 4, sol.method) and "baseline" not in record
    assert record["certified_error"] <= common.TOL and record["peak_mib"] > 1


def test_the_command_line_prints_one_record_per_metric_and_refuses_an_unknown_one(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["bench", "--n", "6", "--budget", "0", "--metrics", "pi,mico"])
    common.main("dense", lambda n, seed: common.published_mdp(n, seed=seed), ["pi", "mico", "eps"])
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["metric"] for line in lines] == ["pi", "mico"]
    monkeypatch.setattr(sys, "argv", ["bench", "--n", "6", "--metrics", "nope"])
    with pytest.raises(SystemExit) as exit_:
        common.main("dense", common.published_mdp, ["pi"])
    assert exit_.value.code == 2 and "unknown metric(s) ['nope'] for dense" in capsys.readouterr().err
