"""The verdict of the GPU DrQ fidelity check (benchmarks/drq_fidelity.py; the training itself needs a GPU)."""

import json

import numpy as np
import pytest

from benchmarks.drq_fidelity import PASS_MARK, context, main
from figures.reference_runs import drq_at, drq_runs


def run_folder(path, seed: int, finals: list[tuple[int, float]]):
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"config": {"seed": seed, "preset": "drq"}}))
    rows = ["env_step,mean_return,std_return,episodes,split,elapsed_s"]
    rows += [f"{step},{mean},10,10,train-settings,1.0" for step, mean in finals]
    (path / "eval.csv").write_text("\n".join(rows) + "\n")
    return path


def test_every_seed_must_reach_the_mark_at_100k(tmp_path, capsys):
    assert PASS_MARK == 759 - 92
    good = run_folder(tmp_path / "a", 0, [(0, 10), (50_000, 400), (100_000, 700)])
    also = run_folder(tmp_path / "b", 1, [(0, 12), (100_000, 667)])
    low = run_folder(tmp_path / "c", 2, [(0, 12), (100_000, 666.9)])
    short = run_folder(tmp_path / "d", 3, [(0, 12), (70_000, 800)])  # stopped early: not a pass
    long = run_folder(tmp_path / "e", 4, [(0, 12), (100_000, 700), (600_000, 860)])  # past DrQ's last evaluation
    out = tmp_path / "fig.png"
    assert main([str(good), str(also), "--out", str(out), "--json", str(tmp_path / "v.json")]) == 0
    assert out.stat().st_size > 0 and json.loads((tmp_path / "v.json").read_text())["passed"] is True
    assert capsys.readouterr().out.strip().endswith("PASS")
    assert main([str(good), str(low)]) == 1
    assert main([str(long), "--out", str(tmp_path / "long.png")]) == 0  # DrQ's band stops where its runs do
    assert main([str(short)]) == 1
    out = capsys.readouterr().out
    assert "at 70000 env steps" in out
    # the stopped run is set against DrQ's ten runs at 70k (387-639): 800 is above all of them
    assert "DrQ's 10 runs at 70k" in out and "above 10 of them" in out
    # the table for the README: our evaluations beside DrQ's runs (at 70k: median 533, range 387-639)
    assert "| env steps | 0 | 70k |" in out and "| seed 3 | 12 | 800 |" in out
    assert "| DrQ's runs, range | 7-37 | 387-639 |" in out and "| DrQ's runs, median | 17 | 533 |" in out


def test_drqs_own_runs_are_the_ones_behind_its_published_number():
    """The kept curves (figures/data/drq_planet_bench.csv) give DrQ's Table 1 entry for
    cartpole-swingup, 759 ± 92 over 10 seeds, at their evaluation nearest 100k (96k)."""
    runs = drq_runs("cartpole_swingup")
    assert sorted(runs) == list(range(1, 11))
    at = np.array([returns[list(steps).index(96_000)] for steps, returns in runs.values()])
    assert at.mean() == pytest.approx(759, abs=0.5) and at.std(ddof=1) == pytest.approx(92, abs=1)
    # at 96k two of DrQ's runs are below the mark (572, 655); interpolated at 100k one is (646)
    assert sorted(np.round(at[at < PASS_MARK])) == [572, 655]
    assert (drq_at(runs, 100_000) < PASS_MARK).sum() == 1
    assert {seeds for seeds in (len(drq_runs(env)) for env in ("walker_walk", "finger_spin"))} == {10}


def test_a_run_is_placed_among_drqs_runs_by_interpolation():
    runs = {1: (np.array([0, 10]), np.array([0.0, 100.0])), 2: (np.array([0, 10, 20]), np.array([0.0, 50.0, 60.0]))}
    assert drq_at(runs, 5).tolist() == [50.0, 25.0]
    assert drq_at(runs, 15).tolist() == [55.0]  # run 1 stops at 10: left out
    c = context(30.0, 5, runs)
    assert (c["drq_runs"], c["drq_mean"], c["drq_min"], c["drq_max"], c["above"]) == (2, 37.5, 25.0, 50.0, 1)
    assert context(1.0, 30, runs)["drq_runs"] == 0


def test_a_folder_without_evaluations_is_one_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main([str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: runs: ") and "no evaluation rows" in err[0]


def test_runs_of_both_update_paths_are_labelled_by_path(tmp_path, capsys):
    """benchmarks/gpu_check.sh fp32 sets float32 seeds beside the fast-path ones: each run says its path
    (config.json's ``fast``) once the two are mixed, and only then; the table has every run's evaluations."""
    fast = run_folder(tmp_path / "fast", 0, [(0, 10), (100_000, 760)])
    plain = run_folder(tmp_path / "plain", 0, [(0, 12), (50_000, 300), (100_000, 700)])
    for folder, flag in ((fast, True), (plain, False)):
        config = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**config, "fast": flag}))
    assert main([str(plain), str(fast), "--out", str(tmp_path / "both.png")]) == 0
    out = capsys.readouterr().out
    assert "| env steps | 0 | 50k | 100k |" in out  # every run's evaluations
    assert "| seed 0 (float32) | 12 | 300 | 700 |" in out and "| seed 0 (bf16 fast path) | 10 |  | 760 |" in out
    assert main([str(plain)]) == 0
    assert "| seed 0 | 12 | 300 | 700 |" in capsys.readouterr().out
