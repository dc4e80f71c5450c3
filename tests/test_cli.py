"""The command line: outputs, file formats, and one-line errors with exit status 2."""

import csv
import json
import subprocess
import sys

import numpy as np
import pytest

from bisimkit import example, save_mdp
from bisimkit.cli import main


def run_cli(*args):
    proc = subprocess.run([sys.executable, "-m", "bisimkit", *args], capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


def test_solve_summary_and_outputs(tmp_path, capsys):
    assert main(["solve", "four-state", "--metric", "pi"]) == 0
    out = capsys.readouterr().out
    assert "certified error" in out and "4.5" in out
    for suffix in (".npy", ".json", ".csv"):
        path = tmp_path / f"d{suffix}"
        assert main(["solve", "four-state", "--metric", "pi", "--out", str(path)]) == 0
        if suffix == ".npy":
            D = np.load(path)
        elif suffix == ".json":
            data = json.loads(path.read_text())
            assert {"metric", "distances", "iterations", "certified_error", "seconds"} <= set(data)
            assert data["metric"] == "pi"
            D = np.array(data["distances"])
        else:
            D = np.array([[float(v) for v in row] for row in csv.reader(path.open())])
        assert D[0, 3] == pytest.approx(5.5)


def test_solve_file_with_ground(tmp_path, capsys):
    path = save_mdp(example("chain"), tmp_path / "chain.json")
    assert main(["solve", str(path), "--metric", "eps", "--ground", "policy"]) == 0
    assert "ground policy" in capsys.readouterr().out


def test_relation_and_info(capsys):
    assert main(["relation", "four-state", "--kind", "pi"]) == 0
    assert json.loads(capsys.readouterr().out) == [[0], [1, 2], [3]]
    assert main(["info", "product-grid"]) == 0
    out = capsys.readouterr().out
    assert "states: 16" in out and "coordinate-independent transitions: yes" in out
    assert main(["examples"]) == 0 and "mirrored-rooms" in capsys.readouterr().out
    assert main(["metrics"]) == 0 and "eps-bar" in capsys.readouterr().out


def test_examples_write(tmp_path, capsys):
    assert main(["examples", "--write", str(tmp_path)]) == 0
    assert (tmp_path / "mirrored-rooms.json").exists()


BAD = {
    "shape": ({"transitions": [[0.5, 0.5]], "rewards": [[0]], "discount": 0.9}, "transitions: expected a 3-D array"),
    "sum": ({"transitions": [[[0.5, 0.4]], [[0, 1]]], "rewards": [[0], [0]], "discount": 0.9},
            "transitions[s=0, a=0] sums to 0.9"),
    "negative": ({"transitions": [[[1.5, -0.5]], [[0, 1]]], "rewards": [[0], [0]], "discount": 0.9},
                 "transitions[s=0, a=0, s'=1] = -0.5 is negative"),
    "discount": ({"transitions": [[[1.0]]], "rewards": [[0]], "discount": 1.0}, "discount = 1.0"),
    "nan": ({"transitions": [[[1.0]]], "rewards": [[float("nan")]], "discount": 0.5}, "rewards[s=0, a=0] is not finite"),
    "policy": ({"transitions": [[[1.0, 0]], [[0, 1.0]]], "rewards": [[0], [0]], "policy": [[1.0], [0.5]],
                "discount": 0.5}, "policy[s=1] sums to 0.5"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_files_exit_2_with_one_line(tmp_path, case):
    data, message = BAD[case]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data).replace("NaN", "NaN"))
    code, out, err = run_cli("solve", str(path), "--metric", "bisim")
    assert code == 2, err
    assert err.strip().count("\n") == 0 and "Traceback" not in err
    assert message in err


@pytest.mark.parametrize("args, message", [
    (["solve", "four-state", "--metric", "nope"], "unknown metric 'nope'"),
    (["solve", "missing.json", "--metric", "pi"], "missing.json: no such file"),
    (["solve", "four-state"], "--metric"),
    (["solve", "four-state", "--metric", "pi", "--tol", "-3"], "expected a positive number"),
    (["solve", "four-state", "--metric", "pi", "--out", "x.txt"], "--out: unsupported file type"),
    (["solve", "mirrored-rooms", "--metric", "pi"], "needs a policy"),
    (["solve", "four-state", "--metric", "eps", "--ground", "nofile"], "neither reward, policy nor an existing file"),
    (["relation", "four-state", "--kind", "weird"], "invalid choice"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_arguments_exit_2(tmp_path, args, message):
    code, out, err = run_cli(*args)
    assert code == 2
    assert err.strip().count("\n") == 0 and "Traceback" not in err
    assert message in err


def test_unreadable_file(tmp_path):
    path = tmp_path / "bin.json"
    path.write_bytes(b"\xff\xfe\x00")
    code, _, err = run_cli("info", str(path))
    assert code == 2 and "bin.json" in err and "Traceback" not in err


def test_library_errors_name_the_parameter_and_the_cli_names_the_option(capsys):
    from bisimkit import InputError, example, solve

    with pytest.raises(InputError) as info:
        solve(example("four-state"), "nonsense")
    assert str(info.value).startswith("metric: unknown metric 'nonsense'") and info.value.param == "metric"
    assert main(["solve", "four-state", "--metric", "nonsense"]) == 2
    assert "bisimkit: error: --metric: unknown metric 'nonsense'" in capsys.readouterr().err


def test_no_library_message_speaks_command_line():
    """Only the command-line modules may word an error as a ``--flag``."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    cli_modules = {root / "bisimkit" / "cli.py"} | set((root / "entrypoints").glob("*.py"))
    pattern = re.compile(r"""InputError\(\s*f?["']--""")
    offenders = [str(p.relative_to(root)) for package in ("bisimkit", "validation", "figures")
                 for p in (root / package).rglob("*.py") if p not in cli_modules and pattern.search(p.read_text())]
    assert offenders == []
