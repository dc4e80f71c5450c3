"""The report of ``bisimkit verify``: surprises, the verdict per claim, the table, the Markdown and the console
summary, from rows made by hand."""

from validation.claims import CLAIMS
from validation.findings import FINDINGS, FINDINGS_BY_LABEL, WitnessResult
from validation.verify_report import console_summary, loss_markdown, markdown, surprises, table, verdicts
from validation.verify_rows import Row


def holding_claim():
    return next(c for c in CLAIMS if c.expect == "holds" and c.label not in FINDINGS_BY_LABEL)


def rows():
    held, failed = Row(holding_claim(), "random-dense"), Row(holding_claim(), "random-sparse")
    held.record(True, 0.5, "fine", 1.0)
    failed.record(True, 0.5, "fine", 1.0)
    failed.record(False, -0.25, "off by 0.25", 1.0)
    return held, failed


def test_a_failing_row_and_a_finding_that_did_not_reproduce_are_surprises():
    held, failed = rows()
    lost = WitnessResult(FINDINGS[0], reproduced=False, detail="held")
    found = surprises([held, failed], [lost, WitnessResult(FINDINGS[0], True, "")])
    assert found == [
        f"{failed.label} on random-sparse: {failed.status} (1/2 cases; off by 0.25)",
        f"{FINDINGS[0].label}: the established finding did not reproduce on its witness "
        f"'{FINDINGS[0].witness_name}' (held)",
    ]
    assert surprises([held], []) == []


def test_the_table_has_a_line_per_row():
    held, failed = rows()
    text = table([held.to_json(), failed.to_json()])
    lines = text.splitlines()
    assert lines[0].split() == ["claim", "family", "cases", "held", "worst", "margin", "seconds", "status"]
    assert len(lines) == 4 and "-0.25" in lines[3] and lines[2].split()[2:4] == ["1", "1"]
    assert len(table([]).splitlines()) == 2


def test_one_verdict_per_claim():
    held, failed = rows()
    out = verdicts([held, failed])
    assert list(out) == [held.claim.id] and out[held.claim.id]


def report_of(rows_, surprises_=()):
    return {
        "config": {"cases": 2, "seed": 0},
        "seconds": 1.0,
        "phase_seconds": {"claims": 1.0},
        "exit_status": 1 if surprises_ else 0,
        "verdicts": verdicts(rows_),
        "surprises": list(surprises_),
        "rows": [r.to_json() for r in rows_],
        "figures": [],
        "losses": {"skipped": "skipped: no torch"},
    }


def test_the_markdown_and_the_console_say_the_exit_status():
    held, failed = rows()
    report = report_of([held, failed], ["a surprise"])
    text = markdown(report)
    assert text.startswith("# bisimkit verify report") and "Exit status 1: 1 verdict(s) differ" in text
    assert "- a surprise" in text and "Loss checks skipped: no torch." in text
    assert "None: every verdict is as recorded." in markdown(report_of([held]))
    console = console_summary(report, "out")
    assert "SURPRISE: a surprise" in console and console.endswith("report: out/report.md (1.0 s); exit status 1")


def test_the_loss_section_is_empty_without_runs():
    assert loss_markdown({}) == [] and loss_markdown({"runs": []}) == []
    assert loss_markdown({"skipped": "skipped"})[0] == "## Learned losses (docs/losses.md)"
