"""The verify job: report files, exit status, counterexamples, resume, figures."""

import json
import subprocess
import sys

from bisimkit import load_mdp
from validation import verify as V


def test_report_exit_status_and_counterexamples(tmp_path):
    report = V.verify(out=tmp_path, cases=2, claims=["C1", "C4"], figures=False, progress=False, shrink_examples=0)
    assert (tmp_path / "report.json").exists() and (tmp_path / "report.md").exists()
    data = json.loads((tmp_path / "report.json").read_text())
    # coupling-order breaks C4: an established finding, so the run passes and says so
    assert data["exit_status"] == 0 and data["surprises"] == [] and "C4" in data["violated_asserted"]
    assert [f["label"] for f in data["findings"] if f["reproduced"]] == ["C4"]
    row = next(r for r in data["rows"] if r["label"] == "C4" and r["family"] == "examples")
    assert row["status"] == "fails (known)" and row["counterexample"]
    assert "index order" in data["verdicts"]["C4"] and "## Established findings" in V.markdown(report)
    mdp = load_mdp(tmp_path / row["counterexample"])  # a valid MDP file
    assert mdp.n_states == 6
    c1 = [r for r in data["rows"] if r["label"] == "C1"]
    assert c1 and all(r["status"] == "held" for r in c1)
    assert "| C1" not in V.markdown(report) and "C4" in V.markdown(report)


def test_a_new_failure_is_a_surprise(tmp_path, monkeypatch):
    """A claim that is no established finding failing makes the job exit 1 and is listed."""
    from validation import claims as C, verify_plan

    broken = [
        C.Claim(**{**c.__dict__, "check": (lambda fp: C.Outcome(False, -1.0, "made to fail"))})
        if c.label == "C3"
        else c
        for c in V.ALL_CLAIMS
    ]
    monkeypatch.setattr(verify_plan, "ALL_CLAIMS", broken)  # where the plan picks them
    report = V.verify(out=tmp_path, cases=1, claims=["C3"], figures=False, progress=False, shrink_examples=0)
    assert report["exit_status"] == 1 and report["surprises"] and "C3 on" in report["surprises"][0]
    assert "made to fail" in report["surprises"][0] and "## Surprises" in (tmp_path / "report.md").read_text()


def test_a_finding_that_stops_reproducing_is_a_surprise(tmp_path, monkeypatch):
    """Strict: if C4's witness does not break C4, the job exits 1 and says which finding."""
    from validation import findings as F

    fixed = [
        F.Finding(**{**f.__dict__, "witness": F.two_absorbing_states, "witness_name": "absorbing"})
        if f.label == "C4"
        else f
        for f in F.FINDINGS
    ]
    monkeypatch.setattr(F, "FINDINGS", fixed)
    report = V.verify(out=tmp_path, cases=1, claims=["C4"], figures=False, progress=False, shrink_examples=0)
    assert report["exit_status"] == 1
    assert any("C4: the established finding did not reproduce" in s for s in report["surprises"])


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


def test_cli_rejects_unknown_claim():
    proc = subprocess.run(
        [sys.executable, "-m", "bisimkit", "verify", "--claims", "C99"], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "unknown claim 'C99'" in proc.stderr and "Traceback" not in proc.stderr


def test_verify_draws_figures_with_the_writer_it_is_given(tmp_path):
    drawn = []

    def writer(out, data):
        drawn.append(data)
        path = out / "fake.png"
        path.write_bytes(b"png")
        return [path]

    report = V.verify(out=tmp_path, cases=1, claims=["C7"], quick=True, figures=writer, progress=False)
    assert report["figures"] == ["fake.png"] and "![fake.png](fake.png)" in (tmp_path / "report.md").read_text()
    assert drawn[0].scatter is not None and drawn[0].losses is None


def test_c10_note_comes_from_the_claim_definition():
    claim = next(c for c in V.CLAIMS if c.label == "C10")
    reverse = next(c for c in V.CLAIMS if c.label == "C10 (reverse)")
    rows = [V.Row(claim, "random-dense", cases=2, held=2), V.Row(reverse, "random-dense", cases=2, held=1)]
    assert V.verdicts(rows)["C10"].endswith(". " + claim.note)
    rows[1].held = 2
    assert claim.note not in V.verdicts(rows)["C10"]
