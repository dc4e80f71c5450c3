"""``bisimkit solve`` on linear-Gaussian JSON files with ``--pairs``: outputs and one-line errors."""

import json
import subprocess
import sys

import numpy as np
import pytest

from bisimkit.gaussian.exact import distance
from bisimkit.gaussian.examples import gaussian_example
from bisimkit.gaussian.model import save_gaussian
from bisimkit_cli.core import main

PAIRS = [[[0, 0], [1, 0]], [[0, 0], [0, 1]], [[0.5, -0.5], [0.5, -0.5]]]


def run_cli(*args):
    """In a subprocess: the real exit status and stderr (no traceback may escape)."""
    proc = subprocess.run([sys.executable, "-m", "bisimkit", *args], capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


def run_main(capsys, *args):
    """In process (faster): ``main`` turns InputError into one line on stderr and status 2;
    any other exception would propagate and fail the test."""
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def files(tmp_path):
    out = {}
    for name in ("linear-2d", "quadratic-2d", "squashed-2d"):
        out[name] = str(save_gaussian(gaussian_example(name), tmp_path / f"{name}.json"))
    pairs = tmp_path / "pairs.json"
    pairs.write_text(json.dumps(PAIRS))
    out["pairs"] = str(pairs)
    np.save(tmp_path / "pairs.npy", np.array(PAIRS, dtype=float))
    out["npy"] = str(tmp_path / "pairs.npy")
    return out


@pytest.mark.parametrize("metric", ["pi", "eps-bar"])
def test_exact_distances_with_error_bars(files, tmp_path, capsys, metric):
    assert main(["solve", files["linear-2d"], "--metric", metric, "--pairs", files["pairs"]]) == 0
    out = capsys.readouterr().out
    assert "exact series" in out and "certified tail" in out
    expected = distance(gaussian_example("linear-2d"), metric, "reward", [p[0] for p in PAIRS], [p[1] for p in PAIRS])
    assert f"{expected.values[0]:.10g}" in out
    path = tmp_path / "d.json"
    assert main(["solve", files["linear-2d"], "--metric", metric, "--pairs", files["npy"], "--out", str(path)]) == 0
    data = json.loads(path.read_text())
    assert data["method"] == "exact series" and len(data["distances"]) == 3
    assert np.allclose(data["distances"], expected.values, rtol=1e-15, atol=0)
    assert all(e < 1e-10 for e in data["errors"]) and data["distances"][2] == 0


def test_monte_carlo_with_intervals(files, tmp_path, capsys):
    path = tmp_path / "mc.json"
    args = [
        "solve",
        files["quadratic-2d"],
        "--metric",
        "eps-bar",
        "--pairs",
        files["pairs"],
        "--method",
        "mc",
        "--samples",
        "500",
        "--seed",
        "4",
        "--out",
        str(path),
    ]
    assert main(args) == 0
    data = json.loads(path.read_text())
    exact = distance(
        gaussian_example("quadratic-2d"), "eps-bar", "reward", [p[0] for p in PAIRS], [p[1] for p in PAIRS]
    ).values
    assert data["method"] == "monte carlo" and data["monte_carlo"]["samples"] == 500
    assert all(lo <= v <= hi for lo, v, hi in zip(data["lower"], exact, data["upper"]))
    # squashed policy: no exact form, auto falls back to Monte Carlo with a certified truncation bound
    assert (
        main(
            [
                "solve",
                files["squashed-2d"],
                "--metric",
                "eps-bar",
                "--pairs",
                files["pairs"],
                "--samples",
                "200",
                "--ground",
                "policy",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "Monte Carlo" in out and "truncation bound" in out and "inf" not in out


def test_csv_output_and_info(files, tmp_path, capsys):
    path = tmp_path / "d.csv"
    assert (
        main(
            [
                "solve",
                files["linear-2d"],
                "--metric",
                "eps-bar",
                "--ground",
                "policy",
                "--pairs",
                files["pairs"],
                "--out",
                str(path),
            ]
        )
        == 0
    )
    lines = path.read_text().strip().splitlines()
    assert lines[0] == "pair,distance,lower,upper" and len(lines) == 4
    assert main(["info", files["quadratic-2d"]]) == 0
    out = capsys.readouterr().out
    assert "spectral radius" in out and "reward: quadratic" in out and "eps-bar (reward)" in out


@pytest.mark.parametrize(
    "model, extra, message",
    [
        ("quadratic-2d", ["--metric", "pi"], "no exact form with a quadratic reward"),
        ("squashed-2d", ["--metric", "pi"], "tanh-squashed"),
        ("linear-2d", ["--metric", "pi", "--method", "mc"], "only eps-bar has a Monte Carlo estimator"),
        ("linear-2d", ["--metric", "bisim"], "has no exact form on Gaussian MDPs"),
        ("linear-2d", ["--metric", "eps-bar", "--ground", "value"], "unknown ground metric 'value'"),
        ("linear-2d", ["--metric", "eps-bar", "--method", "vi"], "does not apply to Gaussian MDPs"),
        ("linear-2d", ["--metric", "pi", "--max-iterations", "3"], "--max-iterations: applies to finite MDPs only"),
        ("linear-2d", ["--metric", "eps-bar", "--out", "x.npy"], "unsupported file type '.npy'"),
        ("linear-2d", ["--metric", "eps-bar", "--samples", "0"], "expected a positive integer"),
    ],
)
def test_bad_requests_exit_2_with_one_line(files, capsys, model, extra, message):
    code, _, err = run_main(capsys, "solve", files[model], "--pairs", files["pairs"], *extra)
    assert code == 2, err
    assert err.strip().count("\n") == 0 and "Traceback" not in err
    assert message in err


@pytest.mark.parametrize(
    "content, message",
    [
        ([[[0, 0], [1, 0, 2]]], "pairs[0][1]: expected 2 numbers (the state dimension), got 3 numbers"),
        ([[[0, 0], [1]]], "pairs[0][1]: expected 2 numbers (the state dimension), got 1 number"),
        ([[[0, 0]]], "pairs[0]: expected a pair [z, z']"),
        ([], "pairs: the file holds no pairs"),
        ([[[0, "a"], [1, 0]]], "pairs[0][0][1]: expected a number"),
        ([[[0, 0], [1, float("nan")]]], "pairs[0][1][1] is not finite"),
        ({"pairs": 1}, "pairs: expected a list of [z, z'] pairs, got dict"),
    ],
)
def test_bad_pairs_files(files, tmp_path, capsys, content, message):
    path = tmp_path / "bad-pairs.json"
    path.write_text(json.dumps(content))
    code, _, err = run_main(capsys, "solve", files["linear-2d"], "--metric", "pi", "--pairs", str(path))
    assert code == 2 and "Traceback" not in err and err.strip().count("\n") == 0
    assert message in err


def test_bad_model_files_and_missing_pairs(files, tmp_path, capsys):
    data = json.loads(open(files["linear-2d"]).read())
    data["K"] = [[0.1, 0.2, 0.3]]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    code, _, err = run_cli("solve", str(bad), "--metric", "pi", "--pairs", files["pairs"])
    assert code == 2 and "K: expected shape (1, 2), got (1, 3)" in err and "Traceback" not in err
    code, _, err = run_main(capsys, "solve", files["linear-2d"], "--metric", "pi")
    assert code == 2 and "--pairs: required for Gaussian MDPs" in err
    code, _, err = run_main(capsys, "solve", "four-state", "--metric", "dbc", "--pairs", files["pairs"])
    assert code == 2 and "--pairs: applies to Gaussian MDP files only" in err
    # pi takes queried state pairs on a finite MDP: Gaussian pairs are not those
    code, _, err = run_main(capsys, "solve", "four-state", "--metric", "pi", "--pairs", files["pairs"])
    assert code == 2 and "expected a list of [s, t] state indices" in err
