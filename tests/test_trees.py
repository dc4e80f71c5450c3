"""benchmarks.trees: a child process's environment imports another checkout's code first."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchmarks.trees import tree_env


def test_tree_comes_first_on_the_path(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    env = tree_env(tmp_path, OMP_NUM_THREADS="1")
    assert env["PYTHONPATH"].split(":") == [str(tmp_path), "/elsewhere"]
    assert env["OMP_NUM_THREADS"] == "1"


def test_child_imports_the_trees_package(tmp_path, monkeypatch):
    monkeypatch.delenv("PYTHONPATH", raising=False)
    package = tmp_path / "bisimkit"
    package.mkdir()
    (package / "__init__.py").write_text("WHERE = 'tree'\n")
    code = "import bisimkit; print(bisimkit.WHERE, bisimkit.__file__)"
    out = subprocess.run(
        [sys.executable, "-c", code], env=tree_env(tmp_path), cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[0] == "tree" and Path(out[1]).parent == package
