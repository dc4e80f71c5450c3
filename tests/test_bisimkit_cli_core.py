"""The core commands' helpers: what an MDP argument names, the model-file options, the summary of a solution,
the info report, the option names the one-line errors use."""

import argparse

import numpy as np
import pytest

from bisimkit import example, save_mdp
from bisimkit.errors import InputError
from bisimkit.solvers import Solution, solve
from bisimkit_cli.core import (
    build_parser,
    describe_mdp,
    load_mdp_or_example,
    main,
    model_options,
    option_strings,
    shown_distances,
    summarize,
)


def test_an_mdp_argument_is_a_file_or_an_example(tmp_path):
    chain = example("chain")
    path = save_mdp(chain, tmp_path / "chain.json")
    assert np.array_equal(load_mdp_or_example(str(path)).transitions, chain.transitions)
    assert load_mdp_or_example("chain").n_states == chain.n_states
    with pytest.raises(InputError, match=r"^nope: no such file \(bundled examples: "):
        load_mdp_or_example("nope")


def test_model_options_apply_to_model_files_only():
    assert model_options("m.drn", argparse.Namespace(reward="goal", discount=None, policy=None)) == {"reward": "goal"}
    assert model_options("chain", argparse.Namespace()) == {}
    with pytest.raises(
        InputError,
        match=r"^--discount: applies to model files \(\.drn, \.tra\); chain carries its "
        r"own discount$",
    ):
        model_options("chain", argparse.Namespace(reward=None, discount=0.5, policy=None))


def test_values_within_the_certificate_are_shown_as_zero():
    sol = Solution("pi", np.array([[0.0, 1e-11], [1e-11, 0.0]]), 1, 1e-10, 0.0, "test", 1e-9)
    shown, threshold = shown_distances(sol)
    assert threshold == 1e-10 and shown.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert sol.distances[0, 1] == 1e-11


def test_the_summary_names_the_model_and_the_solve():
    mdp = example("chain")
    text = summarize(mdp, solve(mdp, "pi"))
    assert text.startswith(f"{mdp.label}: metric pi; n={mdp.n_states}, m={mdp.n_actions}, discount=")
    assert "certified error" in text and "NOT CONVERGED" not in text


def test_info_reports_sizes_and_relations():
    text = describe_mdp(example("chain"))
    assert f"states: {example('chain').n_states}" in text and "validation: ok" in text
    assert "relation blocks (eps with reward ground): E_bisim: " in text


def test_the_option_names_cover_the_subcommands_and_errors_use_them(capsys):
    options = option_strings(build_parser())
    assert {"--metric", "--out", "--tol"} <= options
    assert main(["solve", "chain", "--metric", "pi", "--tol", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bisimkit: error: ") and err.count("\n") == 1


def test_summary_shows_values_within_the_certificate_as_zero(capsys):
    from bisimkit.solvers import Solution
    from bisimkit_cli.core import summarize

    D = np.array([[0.0, 1.28e-65, 2.0], [1.28e-65, 0.0, 3e-12], [2.0, 3e-12, 0.0]])
    sol = Solution("pi", D, 1, 1e-10, 0.1, "test", 1e-9)
    text = summarize(example("chain"), sol)
    assert "e-65" not in text and "e-12" not in text and "pairs at distance 0: 2" in text
    assert "min 0," in text and "shown as 0" in text
    assert sol.distances[0, 1] == 1.28e-65  # the array keeps the raw values
