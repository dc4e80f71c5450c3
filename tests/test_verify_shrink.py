"""Counterexamples of ``bisimkit verify``: hypothesis shrinks a failing claim to a small case, and the case is
written as an MDP file that ``verify --mdp`` reads back."""

import json

import numpy as np

from bisimkit import load_mdp
from validation import verify as V
from validation.claims import CLAIMS
from validation.findings import crossed_actions
from validation.verify_rows import Row
from validation.verify_shrink import save_counterexample, shrink


def test_a_family_without_a_strategy_gives_no_case():
    assert shrink(CLAIMS[0], "no-such-family", max_examples=5, seconds=1) is None


def test_a_counterexample_is_written_as_an_mdp_file_with_its_ground(tmp_path):
    claim = next(c for c in CLAIMS if c.label == "C10 (reverse)")
    case = crossed_actions()
    case.ground = np.zeros((8, 8))
    relative, detail = save_counterexample(Row(claim, "random-sparse"), case, tmp_path, shrunk=True)
    path = tmp_path / relative
    assert path.name == "C10-reverse-random-sparse.json"
    assert json.loads(path.read_text())["name"].startswith("counterexample to C10 (reverse) (random-sparse, shrunk): ")
    assert load_mdp(path).to_dict()["transitions"] == case.mdp.to_dict()["transitions"]
    assert np.array_equal(np.load(path.with_suffix(".ground.npy")), case.ground) and detail


def test_shrinking_finds_a_small_counterexample():
    claim = next(c for c in V.CLAIMS if c.label == "C10 (reverse)")
    case = V.shrink(claim, "random-sparse", max_examples=60, seconds=30)
    assert case is not None and case.mdp.n_states <= 4
    assert not claim.check(V.FixedPoints(case)).held
