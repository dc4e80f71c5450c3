"""The quotient benchmark's comparison: on planted copies the quotient has the base's blocks and both solves
agree within their certificates; an unknown case is refused by the command line."""

import json
import sys

import pytest

from benchmarks.bench_quotient import compare, emit, main
from bisimkit.generators import planted_bisimulation, random_mdp


def test_planted_copies_collapse_to_the_base_and_both_solves_agree():
    base = random_mdp(5, 2, seed=0, max_support=2)
    mdp, _ = planted_bisimulation(base, 3, seed=1)
    record = compare("planted", mdp, "pi", repeat=1)
    assert (record["n"], record["m"]) == (15, 2) and record["blocks"] <= 5
    assert (
        record["agree"]
        and record["max_difference"] <= record["certified_error_quotient"] + record["certified_error_plain"]
    )
    assert len(record["runs_quotient"]) == len(record["runs_plain"]) == 1


def test_records_are_one_json_line_and_unknown_cases_are_refused(monkeypatch, capsys):
    emit({"case": "x", "speedup": 2.0})
    assert json.loads(capsys.readouterr().out) == {"case": "x", "speedup": 2.0}
    monkeypatch.setattr(sys, "argv", ["bench_quotient", "--cases", "nope"])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 2 and "--cases: unknown ['nope']" in capsys.readouterr().err
