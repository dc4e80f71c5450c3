"""``python -m figures.aggregate_table``: the tables, CSV and profiles of run folders, and its one-line errors."""

import csv
import struct
from pathlib import Path

import numpy as np
import pytest
from run_folders import make_runs, write_run

from bisimkit_runs import aggregate as ag


@pytest.fixture
def runs(tmp_path) -> Path:
    return make_runs(tmp_path)


def test_aggregate_cli_writes_tables_csv_and_profiles(runs, tmp_path, capsys):
    from figures.aggregate_table import main

    out = tmp_path / "agg"
    assert main([str(runs), "--out", str(out), "--reps", "500"]) == 0
    printed = capsys.readouterr().out
    assert printed == (out / "aggregates.md").read_text()
    x = np.array([[0.3, 0.6], [0.5, 0.7], [0.4, 0.8]])
    line = next(row for row in printed.splitlines() if row.startswith("| DrQ | 3 |"))
    assert f"{ag.aggregate_iqm(x):.3f} [" in line and f"{ag.aggregate_mean(x):.3f} [" in line
    assert "| CS | DrQ |" in printed and "400.0 ± 81.6 |" in printed  # per task, next to mean ± std
    rows = list(csv.DictReader(open(out / "aggregates.csv")))
    mean = next(r for r in rows if r["scope"] == "all" and r["row"] == "DrQ" and r["estimator"] == "mean")
    assert float(mean["point"]) == pytest.approx(0.55) and float(mean["low"]) <= 0.55 <= float(mean["high"])
    poi = {(r["row"], r["other"]): float(r["point"]) for r in rows if r["scope"] == "improvement"}
    assert poi[("DrQ", "ε-R")] + poi[("ε-R", "DrQ")] == pytest.approx(1.0)
    # CS: drq (3, 5, 4) vs eps-r (3.5, 4.5, 9): 0 + 2 + 1 = 3 wins of 9; WW: (6, 7, 8) vs (6.5, 1, 8.5): 1 + 2 + 2 = 5
    assert poi[("DrQ", "ε-R")] == pytest.approx((3 / 9 + 5 / 9) / 2)
    png = (out / "profiles.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24])[0] >= 400


@pytest.mark.parametrize(
    "damage, message",
    [
        (
            lambda root: __import__("shutil").rmtree(root / "walker-walk" / "eps-r"),
            "runs: mixed tasks: ε-R has no run on walker-walk (the run set covers cartpole-swingup, walker-walk)",
        ),
        (
            lambda root: __import__("shutil").rmtree(root / "walker-walk" / "drq" / "seed1"),
            "runs: missing seeds: DrQ on walker-walk lacks seed(s) 1 (its other tasks have 0, 1, 2)",
        ),
        (
            lambda root: (root / "cartpole-swingup" / "drq" / "seed2" / "eval.csv").write_text(
                "env_step,mean_return\n0,0\n100,5\n"
            ),
            "runs: mixed steps: DrQ on cartpole-swingup: seed 0 at 200, seed 1 at 200, seed 2 at 100 (pass --step N)",
        ),
        (
            lambda root: write_run(root, "carla-highway", "drq", 0, [(0, 1)]),
            "runs: missing seeds: DrQ on carla-highway lacks seed(s) 1, 2 (its other tasks have 0, 1, 2); "
            "mixed tasks: ε-R has no run on carla-highway",
        ),
    ],
)
def test_mixed_or_missing_runs_are_one_line_and_exit_2(runs, tmp_path, capsys, damage, message):
    from figures.aggregate_table import main

    damage(runs)
    out = tmp_path / "agg"
    assert main([str(runs), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: " + message) and err.count("\n") == 1
    assert not out.exists()


def test_unknown_bounds_and_bad_flags(tmp_path, capsys):
    from figures.aggregate_table import main

    write_run(tmp_path, "carla-highway", "drq", 0, [(0, 1), (10, 150)])
    assert main([str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: bounds: no score bounds for task 'carla-highway'")
    assert main([str(tmp_path), "--bounds", "carla-highway=0:300", "--reps", "200"]) == 0
    assert "| DrQ | 1 | 0.500 [0.500, 0.500]" in capsys.readouterr().out
    for flags, field in (
        (["--bounds", "carla-highway=3:1"], "bounds"),
        (["--reps", "0"], "reps"),
        (["--step", "-1"], "step"),
    ):
        assert main([str(tmp_path), *flags]) == 2
        assert capsys.readouterr().err.startswith(f"error: {field}: ")
