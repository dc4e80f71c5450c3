"""The released package: ``python -m build`` makes the sdist and, from it, the wheel (the C++ kernels
compiled); the wheel, installed into a fresh virtual environment, solves an MDP and passes
``bisimkit verify --quick`` there, away from the source tree.

Building compiles the extension (about a minute of CPU) and installing fetches the dependencies, so
the test is marked ``wheel`` and left out of the default run; ``.ci/run`` runs it as a step of its
own: ``python -m pytest -m wheel tests/integration/test_wheel.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import numpy as np
import pytest

from bisimkit import example, solve

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.wheel


def run(args: list, cwd: Path, timeout: int = 900, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run a command, failing the test with its output when it exits non-zero."""
    proc = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, f"{' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    pytest.importorskip("build", reason="the 'release' extra (python -m build) is not installed")
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--outdir", out, ROOT], cwd=out, timeout=1800)
    return out


def version_of_tree() -> str:
    """``__version__`` as bisimkit/__init__.py writes it (the one place the version is written)."""
    line = next(x for x in (ROOT / "bisimkit" / "__init__.py").read_text().splitlines() if x.startswith("__version__"))
    return line.split("=", 1)[1].strip().strip("\"'")


def test_the_sdist_carries_the_sources_the_wheel_is_built_from(dist):
    (sdist,) = dist.glob("bisimkit-*.tar.gz")
    assert sdist.name == f"bisimkit-{version_of_tree()}.tar.gz"
    with tarfile.open(sdist) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    assert {"pyproject.toml", "CMakeLists.txt", "bisimkit/__init__.py", "bisimkit/py.typed"} <= names
    assert any(name.startswith("native/") and name.endswith(".cpp") for name in names)


def test_the_wheel_holds_the_packages_the_compiled_kernels_and_py_typed(dist):
    (wheel,) = dist.glob("bisimkit-*.whl")
    assert wheel.name.startswith(f"bisimkit-{version_of_tree()}-")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "bisimkit/py.typed" in names
    assert any(name.startswith("bisimkit_native") for name in names)
    for package in ("bisimkit", "bisimkit_cli", "bisimkit_runs", "validation", "figures", "agents"):
        assert f"{package}/__init__.py" in names, package


def test_the_installed_wheel_solves_and_verifies(dist, tmp_path):
    (wheel,) = dist.glob("bisimkit-*.whl")
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python, bisimkit = env / "bin" / "python", env / "bin" / "bisimkit"
    # Nothing of the checkout or of the test's own environment reaches the fresh one.
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "SKBUILD_EDITABLE_SKIP")
    }
    clean["PATH"] = os.pathsep.join([str(env / "bin"), clean.get("PATH", "")])
    run([python, "-m", "pip", "install", "-q", wheel], cwd=tmp_path, env=clean)
    code = "import bisimkit, bisimkit_native; print(bisimkit.__file__); print(bisimkit.__version__)"
    where = run([python, "-c", code], cwd=tmp_path, env=clean).stdout.split()
    assert Path(where[0]).is_relative_to(env) and where[1] == version_of_tree()
    assert run([bisimkit, "--version"], cwd=tmp_path, env=clean).stdout.strip() == f"bisimkit {version_of_tree()}"

    run(
        [bisimkit, "solve", "four-state", "--metric", "pi", "--out", tmp_path / "d.json", "--quiet"],
        cwd=tmp_path,
        env=clean,
    )
    record = json.loads((tmp_path / "d.json").read_text())
    here = solve(example("four-state"), "pi")  # the source tree's solve, in this process
    assert record["converged"] and record["certified_error"] <= record["tolerance"]
    gap = np.max(np.abs(np.array(record["distances"]) - here.distances))
    assert gap <= record["certified_error"] + here.certified_error
    verify = run([bisimkit, "verify", "--quick", "--out", tmp_path / "verify-out"], cwd=tmp_path, env=clean)
    assert (tmp_path / "verify-out" / "report.md").exists(), verify.stdout
