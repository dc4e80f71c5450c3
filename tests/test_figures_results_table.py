"""``python -m figures.results_table``: the results table of run folders (cells, bold maxima, footnote), with the
aggregates."""

from pathlib import Path

import pytest
from run_folders import make_runs, synthetic_runs


@pytest.fixture
def runs(tmp_path) -> Path:
    return make_runs(tmp_path)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    """Runs with known numbers (:func:`run_folders.synthetic_runs`)."""
    return synthetic_runs(tmp_path_factory.mktemp("synthetic"))


EXPECTED_TABLE = """\
| Method | BiC | CS | CR | FS | RE | WW |
|:--|--:|--:|--:|--:|--:|--:|
| SAC | n/a | 150.0 ± 50.0 | n/a | n/a | n/a | n/a |
| DrQ | n/a | **400.0 ± 100.0** | n/a | n/a | n/a | n/a |
| DrQ+DBC | n/a | n/a | n/a | n/a | n/a | n/a |
| ε-R | n/a | n/a | n/a | n/a | n/a | **700.0 ± 0.0** |
| DrQ+PSE | **800.2 ± 0.0** | n/a | n/a | n/a | n/a | n/a |
| ε-π | n/a | n/a | n/a | n/a | n/a | 650.0 ± 0.0 |
"""


def test_results_table_with_aggregates(runs, tmp_path, capsys):
    from figures.results_table import main

    out = tmp_path / "t.md"
    assert main([str(runs), "--out", str(out), "--aggregates"]) == 0
    text = out.read_text()
    assert text == capsys.readouterr().out
    assert (
        text.index("| Method | BiC |")
        < text.index("### Aggregates over tasks")
        < text.index("### Probability of improvement")
    )
    assert (tmp_path / "t.profiles.png").is_file() and (tmp_path / "t.aggregates.csv").is_file()


def test_results_table_cells_and_bold(synthetic):
    from figures.results_table import results_table

    table = results_table(synthetic)
    body, foot = table.split("\n\n")
    assert body + "\n" == EXPECTED_TABLE
    assert foot.count("\n") == 1 and foot.startswith("*") and foot.rstrip().endswith(".*")
    assert "final evaluation return" in foot
    assert "seeds per cell: 1 (except SAC/CS: 2, DrQ/CS: 2)" in foot
    assert "environment steps: 200;" in foot
    assert "held-out backgrounds" in foot


def test_results_table_at_a_step_and_ties(synthetic):
    from figures.results_table import results_table

    rows = results_table(synthetic, step=100).splitlines()
    assert rows[2] == "| SAC | n/a | 100.0 ± 50.0 | n/a | n/a | n/a | n/a |"
    assert rows[3] == "| DrQ | n/a | **250.0 ± 50.0** | n/a | n/a | n/a | n/a |"
    # walker-walk ties at 400: both bold; ball_in_cup has no evaluation at step 100
    assert rows[5].endswith("| **400.0 ± 0.0** |") and rows[7].endswith("| **400.0 ± 0.0** |")
    assert rows[6] == "| DrQ+PSE | n/a | n/a | n/a | n/a | n/a | n/a |"
    assert "evaluation return at 100 environment steps" in rows[-1]


def test_results_table_cli(synthetic, tmp_path, capsys):
    from figures.results_table import main

    out = tmp_path / "t.md"
    assert main([str(synthetic), "--out", str(out)]) == 0
    assert capsys.readouterr().out == out.read_text()
    assert out.read_text().startswith(EXPECTED_TABLE)
    assert main([str(tmp_path / "empty")]) == 2
    assert capsys.readouterr().err.startswith("error: runs:")


def test_the_carla_table_lays_runs_out_as_the_paper(tmp_path, capsys):
    import json

    from agents.config import make_config
    from figures.results_table import main

    def run(method, seed, final, task_preset="carla"):
        folder = tmp_path / "runs" / method / f"seed{seed}"
        folder.mkdir(parents=True)
        cfg = make_config(task_preset, method=method, seed=seed).resolved().to_dict()
        (folder / "config.json").write_text(json.dumps({"config": cfg, "backgrounds": "CARLA"}))
        (folder / "eval.csv").write_text(
            "env_step,mean_return,std_return,episodes,split,elapsed_s\n"
            f"0,1.0,0,10,train-settings,1\n500000,{final},3,10,train-settings,9\n"
        )

    run("sac", 0, 150.0), run("sac", 1, 170.0), run("drq+dbc", 0, 140.0)
    run("eps-r", 0, 900.0, task_preset="smoke")  # a DCS run: not in the CARLA table
    assert main([str(tmp_path / "runs"), "--carla"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[:7] == [
        "| Method | CARLA highway (ours) | paper |",
        "|:--|--:|--:|",
        "| SAC | **160.0 ± 10.0** | 168 ± 9 |",
        "| DBC | 140.0 ± 0.0 | 160 ± 7 |",
        "| ε-R | n/a | 157 ± 11 |",
        "| PSE | n/a | 158 ± 11 |",
        "| ε-π | n/a | 148 ± 23 |",
    ]
    assert "500,000" in table[-1]
