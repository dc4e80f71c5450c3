"""The between-MDPs benchmark's parts: SVI's chains read as SVI reads them, one side of a dense round (both sides
give the same cross block), and the one-line refusals of its options."""

import json

import numpy as np

from benchmarks.bench_between import main, one_side, svi_mdp


def test_an_svi_chain_is_a_one_action_mdp_with_normalised_rows(tmp_path):
    path = tmp_path / "chain.json"
    path.write_text(json.dumps({"transition_function": [[0, 2], [1, 3]], "reward": [0, 1], "nu_0": [0, 1]}))
    mdp = svi_mdp(path, discount=0.5)
    assert mdp.transitions[:, 0, :].tolist() == [[0.0, 1.0], [0.25, 0.75]]
    assert mdp.rewards[:, 0].tolist() == [0.0, 1.0] and mdp.initial_state == 1 and mdp.discount == 0.5


def test_both_sides_give_the_same_cross_block(tmp_path):
    union = one_side("union", 6, "pi", str(tmp_path / "union.npy"))
    between = one_side("between", 6, "pi", str(tmp_path / "between.npy"))
    a, b = np.load(tmp_path / "union.npy"), np.load(tmp_path / "between.npy")
    assert a.shape == b.shape == (6, 6) and union["converged"] and between["side"] == "between"
    assert np.max(np.abs(a - b)) <= union["certified_error"] + between["certified_error"]


def test_bad_options_are_one_line_and_exit_2(tmp_path, capsys):
    assert main(["--rounds", "0"]) == 2
    assert capsys.readouterr().err == "--rounds: must be at least 1, got 0\n"
    assert main(["--svi-code", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("--svi-code: ")
