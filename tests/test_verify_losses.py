"""The learned-loss rows (L1-L6) of the verify job, with and without torch."""

import json

import pytest

from validation import learning, verify as V


def test_loss_rows_report_and_figure(tmp_path):
    pytest.importorskip("torch")
    report = V.verify(out=tmp_path, claims=["L3"], quick=True, figures=False, progress=False)
    rows = [r for r in report["rows"] if r["claim"] == "L3"]
    assert len(rows) == 1 and rows[0]["status"] == "held" and rows[0]["worst_margin"] > 0
    assert report["exit_status"] == 0 and report["verdicts"]["L3"] == "held in all 1 cases"
    run = report["losses"]["runs"][0]
    assert run["metric"] == "psm-sampled" and run["final_error"] <= run["tolerance"] and run["exact_diagonal"] > 0
    assert len(run["steps"]) == len(run["error"]) and run["error"][-1] < run["error"][0]
    text = (tmp_path / "report.md").read_text()
    assert "## Learned losses" in text and "| L3 | psm | psm-sampled |" in text
    assert json.loads((tmp_path / "report.json").read_text())["losses"]["runs"][0]["id"] == "L3"

    from figures.loss_convergence import plot_loss_curves

    path = plot_loss_curves(tmp_path / "loss.png", [(r["loss"], r["family"], r) for r in report["losses"]["runs"]])
    assert path.read_bytes()[:4] == b"\x89PNG" and path.stat().st_size > 10_000


def test_loss_rows_are_skipped_without_torch(tmp_path, monkeypatch):
    monkeypatch.setattr(learning, "torch_available", lambda: False)
    report = V.verify(out=tmp_path, cases=1, claims=["C7", "L1", "L5"], figures=False, progress=False)
    assert report["exit_status"] == 0
    assert not [r for r in report["rows"] if r["claim"].startswith("L")]
    assert report["losses"]["skipped"].startswith("skipped: torch is not installed")
    assert "Loss checks skipped: torch is not installed" in (tmp_path / "report.md").read_text()
