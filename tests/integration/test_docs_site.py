"""The documentation builds as a site: Sphinx with MyST and the furo theme over docs/ (docs/conf.py),
the API reference generated from the docstrings, offline, with every warning an error. Marked ``docs``
(left out of the default run; ``.ci/run`` runs it with the snippets, ``-m docs``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.docs


def test_the_site_builds_without_a_warning(tmp_path):
    for module in ("sphinx", "myst_parser", "furo"):
        pytest.importorskip(module, reason=f"the 'docs' extra is not installed ({module} is missing)")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "--keep-going",
            "-q",
            "-b",
            "html",
            "-d",
            str(tmp_path / "doctrees"),
            str(ROOT / "docs"),
            str(tmp_path / "html"),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stderr[-6000:]
    html = tmp_path / "html"
    for page in ("index", "guide/install", "guide/own_mdp", "results/drq_fidelity", "agents", "changelog"):
        assert (html / f"{page}.html").exists(), page
    api = (html / "api.html").read_text()
    assert 'id="bisimkit.solve"' in api and 'id="bisimkit.model_files.read_drn"' in api
