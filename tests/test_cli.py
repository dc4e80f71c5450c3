"""The command line: outputs, file formats, and one-line errors with exit status 2."""

import csv
import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bisimkit
from bisimkit import example, save_mdp
from bisimkit_cli.core import main

ROOT = Path(__file__).resolve().parents[1]


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
    "sum": (
        {"transitions": [[[0.5, 0.4]], [[0, 1]]], "rewards": [[0], [0]], "discount": 0.9},
        "transitions[s=0, a=0] sums to 0.9",
    ),
    "negative": (
        {"transitions": [[[1.5, -0.5]], [[0, 1]]], "rewards": [[0], [0]], "discount": 0.9},
        "transitions[s=0, a=0, s'=1] = -0.5 is negative",
    ),
    "discount": ({"transitions": [[[1.0]]], "rewards": [[0]], "discount": 1.0}, "discount = 1.0"),
    "nan": (
        {"transitions": [[[1.0]]], "rewards": [[float("nan")]], "discount": 0.5},
        "rewards[s=0, a=0] is not finite",
    ),
    "policy": (
        {"transitions": [[[1.0, 0]], [[0, 1.0]]], "rewards": [[0], [0]], "policy": [[1.0], [0.5]], "discount": 0.5},
        "policy[s=1] sums to 0.5",
    ),
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


@pytest.mark.parametrize(
    "args, message",
    [
        (["solve", "four-state", "--metric", "nope"], "unknown metric 'nope'"),
        (["solve", "missing.json", "--metric", "pi"], "missing.json: no such file"),
        (["solve", "four-state"], "--metric"),
        (["solve", "four-state", "--metric", "pi", "--tol", "-3"], "expected a positive number"),
        (
            ["solve", "four-state", "--metric", "pi", "--max-iterations", "0"],
            "--max-iterations: expected a positive integer",
        ),
        (
            ["solve", "four-state", "--metric", "pi", "--max-iterations", "-2"],
            "--max-iterations: expected a positive integer",
        ),
        (["solve", "four-state", "--metric", "pi", "--out", "x.txt"], "--out: unsupported file type"),
        (["solve", "mirrored-rooms", "--metric", "pi"], "needs a policy"),
        (
            ["solve", "four-state", "--metric", "eps", "--ground", "nofile"],
            "neither reward, policy nor an existing file",
        ),
        (["relation", "four-state", "--kind", "weird"], "invalid choice"),
        (["solve", "four-state", "--metric", "pi", "--ground", "policy"], "--ground: metric 'pi' has no ground term"),
        (
            ["solve", "four-state", "--against", "four-state", "--metric", "mico", "--ground", "reward"],
            "--ground: metric 'mico' has no ground term",
        ),
        (["relation", "four-state", "--kind", "pi", "--ground", "policy"], "--ground: applies to --kind eps only"),
        (["frobnicate"], "invalid choice"),
    ],
)
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


def _flag_messages(path) -> list[str]:
    """``name:line`` of each ``InputError(...)`` whose text names a ``--flag`` anywhere in it."""
    import ast
    import re

    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "InputError":
            texts = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            if any(re.search(r"--[a-z]", t) for t in texts):
                out.append(f"{path.name}:{node.lineno}")
    return out


def test_no_library_message_speaks_command_line(tmp_path):
    """Only the command-line package (``bisimkit_cli/``) may word an error with a
    ``--flag``; the library names its parameters, which the command line shows as flags."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    assert _flag_messages(root / "bisimkit_cli" / "core.py")  # the scan sees flags where they are
    probe = tmp_path / "probe.py"
    probe.write_text('raise InputError(f"applies with --executor only ({x})", param="jobs")\n')
    assert _flag_messages(probe) == ["probe.py:1"]
    offenders = [
        m
        for package in ("bisimkit", "validation", "figures")
        for p in sorted((root / package).rglob("*.py"))
        for m in _flag_messages(p)
    ]
    assert offenders == []


# ------------------------------------------------- what a first-time user reads
def _uniform_mdp(tmp_path):
    """Three states, two actions, a uniform policy, one rewarding state."""
    P = np.zeros((3, 2, 3))
    P[:, :, 0] = P[:, :, 1] = 0.5
    R = np.zeros((3, 2))
    R[0] = 1.0
    path = tmp_path / "uniform.json"
    path.write_text(
        json.dumps(
            {"transitions": P.tolist(), "rewards": R.tolist(), "policy": np.full((3, 2), 0.5).tolist(), "discount": 0.9}
        )
    )
    return path


@pytest.mark.parametrize("args", [["--metric", "psm"], ["--metric", "eps", "--ground", "policy"]])
def test_a_vanishing_ground_is_warned_about(tmp_path, capsys, args):
    assert main(["solve", str(_uniform_mdp(tmp_path)), *args, "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "warning: the policy ground" in err and "action_values" in err and err.count("warning") == 1


def test_no_warning_when_the_ground_is_informative(tmp_path, capsys):
    assert main(["solve", str(_uniform_mdp(tmp_path)), "--metric", "eps", "--quiet"]) == 0
    assert "warning" not in capsys.readouterr().err
    from bisimkit import load_mdp, solve
    from bisimkit.solvers import ZeroGroundWarning

    with pytest.warns(ZeroGroundWarning, match="same mean action"):
        solve(load_mdp(_uniform_mdp(tmp_path)), "psm")


def test_a_fresh_process_solves_at_once_and_says_nothing_of_its_kernels(tmp_path):
    """``bisimkit solve --quiet`` in a fresh process, a small problem and one above the small-problem size:
    the compiled kernels are installed and take every call, so nothing is compiled, nothing falls back
    to Python (bisimkit.kernels) and stderr stays empty."""
    from bisimkit.generators import random_mdp
    from bisimkit.kernels import SMALL_PROBLEM_CELLS, mdp_cells

    mdp = random_mdp(30, 2, seed=0, max_support=4)
    assert mdp_cells(mdp.n_states, mdp.n_actions, mdp.transitions) > SMALL_PROBLEM_CELLS
    path = save_mdp(mdp, tmp_path / "mdp.json")
    for spec in ("chain", str(path)):
        run = subprocess.run(
            [sys.executable, "-m", "bisimkit", "solve", spec, "--metric", "pi", "--quiet"],
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert run.returncode == 0 and run.stderr == "", (spec, run.stderr[-2000:])


def test_the_version_is_written_once_and_every_reader_agrees():
    """``bisimkit --version``, ``bisimkit.__version__`` and the installed metadata give one version, which
    pyproject.toml reads from ``__version__`` (it writes none of its own)."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    project = pyproject.split("[project]", 1)[1].split("\n[", 1)[0]
    assert 'dynamic = ["version"]' in project and not re.search(r"^version\s*=", project, re.M)
    assert 'metadata.version.input = "bisimkit/__init__.py"' in pyproject
    assert re.fullmatch(r"\d+\.\d+\.\d+", bisimkit.__version__)
    code, out, _ = run_cli("--version")
    assert code == 0 and out.strip() == f"bisimkit {bisimkit.__version__}"
    assert importlib.metadata.version("bisimkit") == bisimkit.__version__
    assert f"## [{bisimkit.__version__}]" in (ROOT / "CHANGELOG.md").read_text()


# ------------------------------------------------------------------ model files
MODEL_DIR = __import__("pathlib").Path(__file__).parent / "data" / "model_files"


def test_model_file_solve_matches_the_chain_written_out(tmp_path):
    """tiny.drn with the label goal as reward, c = 0.5, is the dense chain below (transitions of the file)."""
    from bisimkit import FiniteMDP, solve

    chain = FiniteMDP(
        transitions=[[[0, 1 / 3, 2 / 3]], [[0.25, 0.75, 0]], [[0, 0, 1]]],
        rewards=[[0], [0], [1]],
        policy=[[1], [1], [1]],
        discount=0.5,
    )
    out = tmp_path / "d.npy"
    for spec in ("tiny.drn", "tiny.tra"):
        code, stdout, stderr = run_cli(
            "solve",
            str(MODEL_DIR / spec),
            "--metric",
            "pi",
            "--reward",
            "goal",
            "--discount",
            "0.5",
            "--out",
            str(out),
            "--quiet",
        )
        assert code == 0, stderr
        expected = solve(chain, "pi")
        np.testing.assert_allclose(np.load(out), expected.distances, atol=2 * expected.certified_error + 1e-12)


def test_model_file_reward_structures_and_relation(capsys):
    from bisimkit import load_mdp, relation_blocks

    path = str(MODEL_DIR / "tiny.drn")
    assert main(["relation", path, "--kind", "pi", "--reward", "bonus"]) == 0
    blocks = json.loads(capsys.readouterr().out)
    assert blocks == relation_blocks(load_mdp(path, reward="bonus"), "pi")
    assert main(["relation", path, "--kind", "pi"]) == 0  # no reward: every state alike
    assert json.loads(capsys.readouterr().out) == [[0, 1, 2]]
    assert main(["solve", path, "--metric", "pi", "--reward", "reward:cost", "--quiet"]) == 0
    assert "discount=0.9" in capsys.readouterr().out  # the default discount of a model file


def test_model_file_policy_option(tmp_path, capsys):
    path = str(MODEL_DIR / "swapped.drn")
    assert main(["solve", path, "--metric", "pi", "--reward", "r"]) == 2  # an MDP has no policy of its own
    assert "policy" in capsys.readouterr().err
    assert main(["solve", path, "--metric", "pi", "--reward", "r", "--policy", "uniform", "--quiet"]) == 0
    capsys.readouterr()
    policy = tmp_path / "pi.json"
    policy.write_text("[[1, 0], [0, 1]]")
    assert main(["solve", path, "--metric", "pi", "--reward", "r", "--policy", str(policy), "--quiet"]) == 0


@pytest.mark.parametrize(
    "args, needle",
    [
        (["solve", "four-state", "--metric", "pi", "--reward", "goal"], "--reward: applies to model files"),
        (["relation", "four-state", "--kind", "pi", "--discount", "0.5"], "--discount: applies to model files"),
        (["solve", str(MODEL_DIR / "tiny.drn"), "--metric", "pi", "--reward", "nosuch"], "unknown reward 'nosuch'"),
        (["solve", str(MODEL_DIR / "tiny.drn"), "--metric", "pi", "--discount", "1"], "--discount"),
        (["info", str(MODEL_DIR / "tiny.drn"), "--policy", "missing.npy"], "--policy: missing.npy: no such file"),
    ],
)
def test_model_file_options_refused_in_one_line(args, needle):
    code, stdout, stderr = run_cli(*args)
    assert code == 2 and stdout == ""
    assert len(stderr.strip().splitlines()) == 1 and needle in stderr, stderr


# ------------------------------------------------------------------ the labelled-chain distance (lmc)
#: 0 -> 1 or 2 (1/2 each), 1 -> 3, 2 and 3 loop; 0, 1, 2 carry {a}, 3 carries {b}: at c = 1, d(0, 2) = 1/2 and
#: every other pair of distinct states is at distance 1.
CHAIN_DRN = (
    "@type: DTMC\n@parameters\n\n@reward_models\n\n@nr_states\n4\n@model\n"
    "state 0 init a\n\taction 0\n\t\t1 : 0.5\n\t\t2 : 0.5\nstate 1 a\n\taction 0\n\t\t3 : 1\n"
    "state 2 a\n\taction 0\n\t\t2 : 1\nstate 3 b\n\taction 0\n\t\t3 : 1\n"
)


def test_solve_lmc_undiscounted_summary_and_outputs(tmp_path, capsys):
    model = tmp_path / "chain.drn"
    model.write_text(CHAIN_DRN)
    assert main(["solve", str(model), "--metric", "lmc", "--discount", "1", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "metric lmc, ground labels; n=4, discount=1" in out and "pairs at distance 0: 0; at distance 1: 5" in out
    out_json = tmp_path / "d.json"
    assert main(["solve", str(model), "--metric", "lmc", "--discount", "1", "--out", str(out_json), "--quiet"]) == 0
    data = json.loads(out_json.read_text())
    assert data["metric"] == "lmc" and data["discount"] == 1.0 and data["converged"]
    D, lower, upper = (np.array(data[key]) for key in ("distances", "lower", "upper"))
    assert abs(D[0, 2] - 0.5) <= data["certified_error"] and lower[0, 2] <= 0.5 <= upper[0, 2]
    assert D[0, 1] == 1.0 and D[1, 2] == 1.0
    # without --discount: the model's own (0.9 for a model file); d(0, 2) = c^2 / 2
    assert main(["solve", str(model), "--metric", "lmc", "--out", str(out_json), "--quiet"]) == 0
    assert abs(json.loads(out_json.read_text())["distances"][0][2] - 0.405) <= 1e-9


def test_solve_lmc_pairs_query_and_ground_file(tmp_path, capsys):
    model = tmp_path / "chain.drn"
    model.write_text(CHAIN_DRN)
    pairs = tmp_path / "pairs.json"
    pairs.write_text("[[0, 2], [3, 1]]")
    out = tmp_path / "q.csv"
    assert (
        main(
            [
                "solve",
                str(model),
                "--metric",
                "lmc",
                "--discount",
                "1",
                "--pairs",
                str(pairs),
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    rows = list(csv.reader(out.open()))
    assert rows[0] == ["s", "t", "distance", "lower", "upper"] and [r[:2] for r in rows[1:]] == [["0", "2"], ["3", "1"]]
    assert abs(float(rows[1][2]) - 0.5) < 1e-9 and float(rows[2][2]) == 1.0
    ground = tmp_path / "g.json"
    ground.write_text(json.dumps([[0, 0, 0, 0.5], [0, 0, 0, 0.5], [0, 0, 0, 0.5], [0.5, 0.5, 0.5, 0]]))
    assert (
        main(
            [
                "solve",
                str(model),
                "--metric",
                "lmc",
                "--discount",
                "1",
                "--ground",
                str(ground),
                "--pairs",
                str(pairs),
                "--quiet",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert f"ground {ground}" in text and "d(3, 1) = 0.5" in text


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--discount", "0"], "--discount: 0.0 is not in (0, 1]"),
        (["--discount", "1.5"], "--discount: expected a discount factor in [0, 1]"),
        (["--ground", "BAD_GROUND"], "--ground: "),
        (["--pairs", "BAD_PAIRS"], "--pairs: "),
        (["--method", "vi"], "--method: does not apply to --metric lmc"),
        (["--against", "chain"], "--against: does not apply to --metric lmc"),
    ],
)
def test_solve_lmc_bad_input_exits_2_with_one_line(tmp_path, args, needle):
    model = tmp_path / "chain.drn"
    model.write_text(CHAIN_DRN)
    (tmp_path / "g.json").write_text(json.dumps((np.ones((4, 4)) * 1.5 - 1.5 * np.eye(4)).tolist()))
    (tmp_path / "p.json").write_text("[[0, 9]]")
    args = [
        str(tmp_path / "g.json") if a == "BAD_GROUND" else str(tmp_path / "p.json") if a == "BAD_PAIRS" else a
        for a in args
    ]
    code, stdout, stderr = run_cli("solve", str(model), "--metric", "lmc", *args, "--quiet")
    assert code == 2 and stdout == ""
    assert len(stderr.strip().splitlines()) == 1 and needle in stderr, stderr


def test_solve_lmc_on_a_file_without_labels_names_them(tmp_path, capsys):
    path = save_mdp(example("chain"), tmp_path / "chain.json")
    assert main(["solve", str(path), "--metric", "lmc", "--discount", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("bisimkit: error: labels:") and "carries no labels" in err
