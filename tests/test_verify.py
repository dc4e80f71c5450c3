"""The verify job: report files, exit status, counterexamples, resume, figures."""

import json
import subprocess
import sys

import numpy as np
import pytest

from bisimkit import load_mdp
from validation import verify as V


def test_report_exit_status_and_counterexamples(tmp_path):
    report = V.verify(out=tmp_path, cases=2, claims=["C1", "C4"], figures=False, progress=False, shrink_examples=0)
    assert (tmp_path / "report.json").exists() and (tmp_path / "report.md").exists()
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["exit_status"] == 1 and "C4" in data["violated_asserted"]  # coupling-order breaks C4
    row = next(r for r in data["rows"] if r["label"] == "C4" and r["family"] == "examples")
    assert row["status"] == "VIOLATED" and row["counterexample"]
    mdp = load_mdp(tmp_path / row["counterexample"])  # a valid SPEC file
    assert mdp.n_states == 6
    c1 = [r for r in data["rows"] if r["label"] == "C1"]
    assert c1 and all(r["status"] == "held" for r in c1)
    assert "| C1" not in V.markdown(report) and "C4" in V.markdown(report)


def test_only_passing_claims_exit_zero(tmp_path):
    report = V.verify(out=tmp_path, cases=2, claims=["C3", "C9"], figures=False, progress=False)
    assert report["exit_status"] == 0 and all(r["status"] == "held" for r in report["rows"])


def test_resume_skips_finished_families(tmp_path, monkeypatch):
    V.verify(out=tmp_path, cases=2, claims=["C7"], figures=False, progress=False)

    def boom(*args, **kwargs):
        raise AssertionError("family re-run despite --resume")

    monkeypatch.setattr(V, "run_family", boom)
    report = V.verify(out=tmp_path, cases=2, claims=["C7"], figures=False, progress=False, resume=True)
    assert report["exit_status"] == 0 and len(report["rows"]) > 0


def test_shrinking_finds_a_small_counterexample():
    claim = next(c for c in V.CLAIMS if c.label == "C10 (reverse)")
    case = V.shrink(claim, "random-sparse", max_examples=60, seconds=30)
    assert case is not None and case.mdp.n_states <= 4
    assert not claim.check(V.FixedPoints(case)).held


def test_cli_rejects_unknown_claim():
    proc = subprocess.run([sys.executable, "-m", "bisimkit", "verify", "--claims", "C99"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "unknown claim 'C99'" in proc.stderr and "Traceback" not in proc.stderr


def test_figures_are_written(tmp_path):
    from figures.diagonal import plot_sampled_diagonals
    from figures.heatmaps import plot_metric_heatmaps
    from figures.scatter import plot_bound_scatter
    from validation.claims import FixedPoints
    from validation.families import FAMILIES

    rng = np.random.default_rng(0)
    fps = [("random-dense", FixedPoints(FAMILIES["random-dense"].make(rng))) for _ in range(2)]
    for path in (plot_metric_heatmaps(tmp_path / "h.png"), plot_bound_scatter(tmp_path / "s.png", fps),
                 plot_sampled_diagonals(tmp_path / "d.png", mdps=1)):
        assert path.read_bytes()[:4] == b"\x89PNG" and path.stat().st_size > 10_000
