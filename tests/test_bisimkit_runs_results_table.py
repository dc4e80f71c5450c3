"""The results table's pieces: a cell's statistics, the Markdown layout with bold maxima, the footnote, the rows,
and the refusals of a bad step or a run set without CARLA runs."""

import numpy as np
import pytest
from run_folders import write_run

from bisimkit.errors import InputError
from bisimkit_runs.results_table import Cell, carla_table, collect_cells, footnote, format_table, table_and_listing
from bisimkit_runs.runs import find_runs, group_runs


def test_a_cell_by_hand():
    cell = Cell(np.array([100.0, 300.0]), (200, 200), ("eval",))
    assert (cell.mean, cell.std, cell.n) == (200.0, 100.0, 2)


def test_the_table_bolds_the_best_mean_per_column():
    cells = {
        ("DrQ", "walker-walk"): Cell(np.array([10.0]), (100,), ()),
        ("SAC", "walker-walk"): Cell(np.array([4.0, 6.0]), (100, 100), ()),
    }
    lines = format_table(cells, rows=["SAC", "DrQ"]).splitlines()
    assert lines[0].startswith("| Method | ") and lines[0].endswith(" | WW |")
    assert lines[2].startswith("| SAC | n/a") and lines[2].endswith("| 5.0 ± 1.0 |")
    assert lines[3].endswith("| **10.0 ± 0.0** |") and lines[4] == ""
    assert "seeds per cell: 1 (except SAC/WW: 2); environment steps: 100." in lines[5]  # a tie: the first


def test_the_footnote_says_what_a_cell_is():
    assert (
        footnote({}, None) == "*Each cell: mean ± std over seeds of the final evaluation return; best mean "
        "per column in bold; n/a: no run.*"
    )
    note = footnote({("DrQ", "walker-walk"): Cell(np.array([1.0]), (1000, 2000), ("eval",))}, 500, "dup")
    assert "evaluation return at 500 environment steps" in note and "environment steps: 1,000–2,000" in note
    assert "(held-out backgrounds)" in note and note.endswith("; dup.*")


def test_cells_are_the_evaluations_at_the_step(tmp_path):
    write_run(tmp_path, "walker-walk", "drq", 0, [(0, 1.0), (100, 5.0)])
    write_run(tmp_path, "walker-walk", "drq", 1, [(0, 3.0), (100, 7.0)])
    groups = group_runs(find_runs(tmp_path))
    assert collect_cells(groups)[("DrQ", "walker-walk")].values.tolist() == [5.0, 7.0]
    assert collect_cells(groups, step=0)[("DrQ", "walker-walk")].mean == 2.0
    table, listing = table_and_listing(tmp_path)
    assert "**6.0 ± 1.0**" in table and str(tmp_path) in listing
    with pytest.raises(InputError, match=r"^step: -1 is not a non-negative integer$"):
        table_and_listing(tmp_path, step=-1)
    with pytest.raises(InputError, match=r"^runs: no carla-highway run under "):
        carla_table(tmp_path)
