"""``python -m figures.results_table``: the results table of run folders, with the aggregates."""

from pathlib import Path

import pytest

from run_folders import make_runs


@pytest.fixture
def runs(tmp_path) -> Path:
    return make_runs(tmp_path)


def test_results_table_with_aggregates(runs, tmp_path, capsys):
    from figures.results_table import main

    out = tmp_path / "t.md"
    assert main([str(runs), "--out", str(out), "--aggregates"]) == 0
    text = out.read_text()
    assert text == capsys.readouterr().out
    assert text.index("| Method | BiC |") < text.index("### Aggregates over tasks") < text.index(
        "### Probability of improvement")
    assert (tmp_path / "t.profiles.png").is_file() and (tmp_path / "t.aggregates.csv").is_file()
