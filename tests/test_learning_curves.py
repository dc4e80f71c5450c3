"""The learning curves: seeds averaged on the union of their steps, and the command's one-line errors."""

from run_folders import write_run


def test_curve_aggregation_across_seeds(tmp_path):
    from bisimkit_runs.runs import find_runs
    from figures.learning_curves import curves

    write_run(tmp_path, "cheetah-run", "drq", 0, [(0, 0), (100, 100), (200, 200), (300, 300)])
    write_run(tmp_path, "cheetah-run", "drq", 1, [(0, 0), (150, 300), (200, 400)])
    (curve,) = curves(find_runs(tmp_path))
    # union of steps, never cut to the shorter seed: seed 1 interpolated at 100 -> 200, and at 300 only
    # seed 0 is averaged (the count drops to 1 there)
    assert curve.steps.tolist() == [0, 100, 150, 200, 300]
    assert curve.mean.tolist() == [0, 150, 225, 300, 300]
    assert curve.std.tolist() == [0, 50, 75, 100, 0]
    assert curve.counts.tolist() == [2, 2, 2, 2, 1]
    assert curve.seeds == 2 and curve.label == "DrQ"


def test_learning_curves_cli_errors(tmp_path, capsys):
    from figures.learning_curves import main

    assert main([str(tmp_path / "missing"), "--out", str(tmp_path / "x.png")]) == 2
    assert "runs:" in capsys.readouterr().err
    write_run(tmp_path, "cheetah-run", "drq", 0, [(0, 0), (100, 1)])
    assert main([str(tmp_path), "--out", str(tmp_path / "x.png"), "--metric", "nonsense"]) == 2
    assert capsys.readouterr().err.startswith("error: metric: 'nonsense'")
    assert not (tmp_path / "x.png").exists()
