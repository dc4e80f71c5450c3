"""The revisions benchmark's parts: one timed solve in a fresh process of a tree, and the one-line refusals of a
tree that is no checkout, no rounds, or no such workload."""

from pathlib import Path

import pytest

from benchmarks.bench_revisions import main, run_case

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # a fresh interpreter loads the solvers and warms them up (about 10 s on a shared core)
def test_one_case_runs_in_a_fresh_process_of_the_tree():
    record = run_case(ROOT, "pi-dense", "benchmarks.bench_pi_dense", 8, "pi")
    assert (record["workload"], record["n"], record["metric"]) == ("pi-dense", 8, "pi")
    assert record["converged"] and record["seconds"] > 0


def test_bad_options_are_one_line_and_exit_2(tmp_path, capsys):
    assert main(["--against", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(f"--against: {tmp_path} is not a bisimkit checkout")
    assert main(["--against", str(ROOT), "--rounds", "0"]) == 2
    assert capsys.readouterr().err == "--rounds: must be at least 1, got 0\n"
    assert main(["--against", str(ROOT), "--only", "nope"]) == 2
    assert capsys.readouterr().err.startswith("--only: no workload named nope (choose from ")
