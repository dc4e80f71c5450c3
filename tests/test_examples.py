"""The scripts in ``examples/`` run as a researcher runs them (``python examples/NAME.py``), at small sizes
through their own flags, and the README lists every one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def run(script: str, *args: str, cwd: Path) -> str:
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl"),
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_my_mdp_from_a_file_arrays_and_gymnasium(tmp_path):
    out = run("my_mdp.py", "--out", "mine.json", cwd=tmp_path)
    assert out.startswith(f"{EXAMPLES / 'tiny-rooms.json'}: 4 states, 2 actions, discount 0.9")
    assert "π-bisimulation classes: [[0], [1], [2], [3]]" in out
    assert "saved mine.json; d_pi = [[0.0, 0.0, 0.5], [0.0, 0.0, 0.5], [0.5, 0.5, 0.0]]" in out
    assert "a bad file is one line: transitions: " in out
    from bisimkit import load_mdp

    assert load_mdp(tmp_path / "mine.json").n_states == 3
    pytest.importorskip("gymnasium")
    assert "FrozenLake-v1: 16 states" in out


def test_compare_metrics_writes_the_figures(tmp_path):
    out = run("compare_metrics.py", "--metrics", "pi,eps-bar", "--out", "cmp", cwd=tmp_path)
    assert out.splitlines()[0].strip().startswith("pi: largest distance 3.998, certified error")
    names = {p.name for p in (tmp_path / "cmp").iterdir()}
    assert {"summary.csv", "heatmap-pi.png", "heatmap-eps-bar.png", "difference-pi-minus-eps-bar.png"} <= names


def test_check_claim_on_a_file_and_the_state_order_finding(tmp_path):
    out = run("check_claim.py", cwd=tmp_path)
    verdicts = {
        line.split()[0] + (" " + line.split()[1] if line.split()[1].startswith("(") else ""): "FAILS"
        not in line.split("margin")[0]
        for line in out.splitlines()
        if line.startswith("C")
    }
    assert verdicts == {"C3": True, "C4": True, "C4 (literal)": True, "C10": True, "C10 (reverse)": False}
    # C4 in index order fails on the bundled witness (docs/claims.md)
    witness = run("check_claim.py", "--mdp", "coupling-order", "--claims", "C4", cwd=tmp_path)
    assert witness.startswith("C4               FAILS")


def test_learn_metric_gets_close_to_the_exact_one(tmp_path):
    pytest.importorskip("torch")
    out = run("learn_metric.py", "--steps", "200", cwd=tmp_path)
    line = next(row for row in out.splitlines() if row.startswith("largest error"))
    assert float(line.split("= ")[1].split("%")[0]) < 2.0
    assert "exact   d(0, .): [0.0, 1.54, 3.625, 4.604]" in out


def test_train_agent_in_the_smoke_setting_and_plot(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("dm_control")
    out = run(
        "train_agent.py",
        "--methods",
        "eps-r",
        "--seeds",
        "0",
        "--env-steps",
        "80",
        "--episode-steps",
        "80",
        "--out",
        "ex",
        cwd=tmp_path,
    )
    assert out.startswith("eps-r seed 0: final evaluation return ")
    assert "after 80 environment steps" in out
    assert "| ε-R | n/a | " in out and "### Aggregates over tasks" in out and "| ε-R | 1 | " in out
    for name in ("curves.png", "profiles.png"):
        assert (tmp_path / "ex" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "ex" / "runs" / "cartpole-swingup" / "eps-r" / "seed0" / "eval.csv").is_file()


def test_metric_check_learned_against_exact(tmp_path):
    pytest.importorskip("torch")
    out = run(
        "metric_check.py",
        "--steps",
        "6",
        "--batch",
        "16",
        "--image-size",
        "16",
        "--draws",
        "3",
        "--out",
        "mc",
        cwd=tmp_path,
    )
    assert out.startswith("eps-r on the ring scene, 8 states, 6 updates:")
    assert "targets met: mean_relative_error " in out
    import numpy as np

    from bisimkit import load_mdp, solve

    exact = np.load(tmp_path / "mc" / "exact.npy")  # the certified fixed point of the scene's MDP
    np.testing.assert_allclose(exact, solve(load_mdp(tmp_path / "mc" / "mdp.json"), "eps-bar").distances, atol=1e-8)


def test_the_readme_lists_every_example():
    readme = (ROOT / "README.md").read_text()
    scripts = sorted(p.name for p in EXAMPLES.glob("*.py"))
    assert len(scripts) >= 5
    missing = [name for name in scripts if f"examples/{name}" not in readme]
    assert missing == []
