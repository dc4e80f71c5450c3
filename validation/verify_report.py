"""The report of ``bisimkit verify`` (:mod:`validation.verify`): verdicts and surprises from the
rows, ``report.json`` and ``report.md``, and the summary the command line prints."""

from __future__ import annotations

import math
from pathlib import Path

from bisimkit.files import atomic_write_json, atomic_write_text

from . import learning
from .findings import FINDINGS_BY_LABEL, WitnessResult, check_witnesses
from .verify_plan import USER_FAMILY, Plan
from .verify_rows import Row


def check_findings(plan: Plan) -> list[WitnessResult]:
    """Each established finding among the selected claims, rechecked on its witness MDP."""
    return check_witnesses(plan.claims, {c.label for c in plan.claims})


def surprises(rows: list[Row], witnesses: list[WitnessResult]) -> list[str]:
    """One line per verdict that differs from what is recorded: a row that failed and is no
    established finding, or a finding that did not reproduce on its witness."""
    out = [
        f"{r.label} on {r.family}: {r.status} ({r.cases - r.held}/{r.cases} cases; {r.worst_detail})"
        for r in rows
        if r.surprise
    ]
    out += [
        f"{w.finding.label}: the established finding did not reproduce on its witness "
        f"'{w.finding.witness_name}' ({w.detail})"
        for w in witnesses
        if not w.reproduced
    ]
    return out


def write_report(
    plan: Plan,
    rows: list[Row],
    losses: dict,
    figure_paths: list[str],
    phase_seconds: dict,
    seconds: float,
    witnesses: list[WitnessResult] | None = None,
    shards: dict | None = None,
) -> dict:
    """Write ``report.json`` and ``report.md``; returns the report. ``shards``: how a sharded run
    ran (:mod:`validation.verify_shards`), kept as the report's ``shards``; each shard in its
    ``failed`` list is a surprise (its cases are missing from the rows)."""
    witnesses = check_findings(plan) if witnesses is None else witnesses
    found = surprises(rows, witnesses)
    found += [
        f"shard {f['shard']} ({f['what']}) failed {f['attempts']} times, its results are missing: {f['error']}"
        for f in (shards or {}).get("failed", [])
    ]
    violated = [r for r in rows if r.asserted and r.expect == "holds" and r.held < r.cases]
    report = {
        "config": plan.config,
        "seconds": seconds,
        "phase_seconds": phase_seconds,
        "rows": [r.to_json() for r in rows],
        "verdicts": verdicts(rows),
        "findings": [w.to_json() for w in witnesses],
        "surprises": found,
        "losses": losses,
        "figures": figure_paths,
        "exit_status": 1 if found else 0,
        "violated_asserted": sorted({r.label for r in violated}),
    }
    if shards is not None:
        report["shards"] = shards
    atomic_write_json(plan.out / "report.json", report)
    atomic_write_text(plan.out / "report.md", markdown(report))
    return report


def _summary(rows: list[Row]) -> str:
    """One clause for the rows of one claim label."""
    total = sum(r.cases for r in rows)
    held = sum(r.held for r in rows)
    bad = [r for r in rows if r.held < r.cases]
    where = ", ".join(f"{r.family} {r.cases - r.held}/{r.cases}" for r in bad)
    if rows[0].expect in ("gap", "varies"):
        largest = max((-r.worst_margin for r in rows if not math.isinf(r.worst_margin)), default=0.0)
        if rows[0].expect == "gap":
            return f"strict gap in {total - held}/{total} cases ({where or 'none'}); largest gap {largest:.3g}"
        return (
            f"varies with the order in {total - held}/{total} cases ({where or 'none'}); largest spread {largest:.3g}"
        )
    if not bad:
        return f"held in all {total} cases"
    word = "fails (established finding)" if rows[0].known else ("VIOLATED" if rows[0].asserted else "fails")
    why = FINDINGS_BY_LABEL[rows[0].label].verdict if rows[0].known else ""
    return f"{word} in {total - held}/{total} cases ({where})" + (f", {why}" if why else "")


def verdicts(rows: list[Row]) -> dict[str, str]:
    """One sentence per claim id, from the evidence, followed by the claims' own notes
    (:attr:`Claim.note`) where their condition is met."""
    labels: dict[str, dict[str, list[Row]]] = {}
    for r in rows:
        labels.setdefault(r.claim.id, {}).setdefault(r.label, []).append(r)
    out = {}
    for cid, groups in labels.items():
        ordered = sorted(groups.items(), key=lambda kv: kv[0] != cid)  # the project's reading first
        out[cid] = "; ".join(
            (f"[{label[len(cid) + 2 : -1]}] " if label != cid else "") + _summary(rs) for label, rs in ordered
        )
        held = {label: all(r.held == r.cases for r in rs) for label, rs in groups.items()}
        for label, rs in ordered:
            note = rs[0].claim.note
            if note and held[label] and not all(held.values()):
                out[cid] += ". " + note
    return out


def table(rows: list[dict]) -> str:
    """Plain-text table: claim, family, cases, held, worst margin, seconds, status."""
    head = ("claim", "family", "cases", "held", "worst margin", "seconds", "status")
    body = [
        (
            r["label"],
            r["family"],
            str(r["cases"]),
            str(r["held"]),
            "-" if r["worst_margin"] is None else f"{r['worst_margin'] + 0.0:.3g}",
            f"{r['seconds']:.2f}",
            r["status"],
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*b) for b in body]
    return "\n".join(lines)


READINGS = """\
**Readings.** The project defines E_eps with *equal class masses* of P(s,a) and P(t,a')
(the usual bisimulation reading); the paper's Def. 4.3 literally asks for *identical*
laws P(s,a) = P(t,a'). Rows marked `(literal)` use the second reading; they are
reported, not asserted. The literal reading of C2 fails for a trivial reason: two
absorbing states with equal rewards have different laws (each a point mass on itself)
yet distance 0, and the same literal reading would break the pi-bisimulation theorem
the paper builds on. Under the class-mass reading C2 holds, and C4's "d_eps-bar = 0
on E_eps" depends on how the states are numbered: the entangled coupling follows the
state order, so with the given (index) order it can pair successors from different
classes and fail, while with each E_eps class numbered consecutively it holds on every
case (C11). C2 and C4 therefore cannot both hold *for every state order*. For C10,
d_eps >= d_eps-avg is a theorem (a policy-weighted mixture of per-action optimal
couplings is a coupling of the policy-averaged laws); the reverse fails.
C5 is checked where its hypotheses provably hold (`monotone-product`: coordinate-
independent transitions, d_eps-bar separable with Monge coordinate terms, the finite
form of "separable convex") and its gap is measured where they fail.

Rows marked `(continuous)` check C5, C6 and C8 in continuous space (docs/gaussian.md):
on random linear-Gaussian MDPs and a heteroscedastic pendulum with a tanh-squashed
policy (C6, C8), on pendulum transition laws with separable convex costs (C5, exact LP
on product quantile quantisations against the entangled coupling, and the closed form
against shared-noise sampling), and where the hypotheses fail (C5 gap: correlated
covariances, exactly by Bures; a Euclidean cost, by LP and a glued coupling with a
99.9% lower confidence bound). Continuous families run at most 40 cases (12 and 8 for
the LP families; fewer with --quick).
"""


LOSS_READING = """\
Each loss of `bisimkit.losses` (the functions the agents import) trains a free table
d[s, t], diagonal included, from sampled batches of one-hot or embedded states on a
finite MDP, whose policy and transitions are inverse-CDF samplers of uniform noise:
shared noise is the entangled coupling, independent noise the product coupling. The
expected target is then the operator named in the row, so the table must converge to
its exact fixed point (`bisimkit solve`). A row holds when the final max error over all
pairs is at most 1% of the largest exact distance.
"""


def loss_markdown(losses: dict) -> list[str]:
    """The learned-loss section of the report."""
    if not losses or (not losses.get("runs") and "skipped" not in losses):
        return []
    lines = ["## Learned losses (docs/losses.md)", ""]
    if "skipped" in losses:
        return lines + [f"Loss checks {losses['skipped']}.", ""]
    cfg = losses.get("config", {})
    lines += [
        LOSS_READING,
        f"Training: {cfg.get('steps')} SGD steps, batch {cfg.get('batch')}, "
        f"{cfg.get('samples')} target samples, seed {cfg.get('seed')}.",
        "",
        "| check | loss | fixed point | MDP | max error | tolerance | max d(s,s) exact / learned | seconds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in losses["runs"]:
        metric = r["metric"] + (f" ({r['ground']})" if r["ground"] else "")
        lines.append(
            f"| {r['id']} | {r['loss']} | {metric} | {r['family']} ({r['mdp']}) | {r['final_error']:.2e} "
            f"| {r['tolerance']:.2e} | {r['exact_diagonal']:.3g} / {r['learned_diagonal']:.3g} "
            f"| {r['seconds']:.1f} |"
        )
    return lines + [""]


def finding_markdown(findings: list[dict]) -> list[str]:
    """The established findings (``validation/findings.py``) and whether each reproduced."""
    if not findings:
        return []
    lines = [
        "",
        "## Established findings",
        "",
        "Declared in `validation/findings.py`; each must reproduce on its witness MDP "
        "(sampled rows of these claims may fail or hold).",
        "",
        "| claim | expected | witness | reproduced | why |",
        "|---|---|---|---|---|",
    ]
    for f in findings:
        lines.append(
            f"| {f['label']} | {f['expected']} | {f['witness']}: {f['detail']} "
            f"| {'yes' if f['reproduced'] else '**no**'} | {f['reason']} |"
        )
    return lines


def markdown(report: dict) -> str:
    """The human-readable report."""
    cfg = report["config"]
    scope = (
        f"The MDPs given ({', '.join(cfg['mdps'])}) as family `{USER_FAMILY}`: every claim that applies "
        f"to them; no loss checks or figures (they are about the generated families)"
        if cfg.get("mdps")
        else f"{cfg['cases']} cases per family, seed {cfg['seed']}"
    )
    lines = [
        "# bisimkit verify report",
        "",
        f"{scope}, {report['seconds']:.1f} s "
        f"({', '.join(f'{k} {v:.1f} s' for k, v in report['phase_seconds'].items())}). "
        f"Exit status {report['exit_status']}"
        + (
            f": {len(report['surprises'])} verdict(s) differ from what is recorded (surprises, below)."
            if report['exit_status']
            else ": every verdict matches what is recorded (every claim held except "
            "the established findings, and each of those reproduced)."
        ),
        "",
        "## Verdicts",
        "",
    ]
    for cid, text in report["verdicts"].items():
        lines.append(f"- **{cid}**: {text}")
    lines += ["", "## Surprises", ""]
    lines += [f"- {text}" for text in report["surprises"]] or ["None: every verdict is as recorded."]
    lines += finding_markdown(report.get("findings", []))
    lines += [
        "",
        READINGS,
        "## Results",
        "",
        "Margin: the worst signed slack of the claim over the cases (negative = violated by that much); "
        "a distance, except C2 (minus the number of state pairs whose relation and zero set disagree) "
        "and C7 (spare cells under the bound).",
        "",
        "```",
        table(report["rows"]),
        "```",
        "",
    ]
    lines += loss_markdown(report.get("losses", {}))
    ces = [r for r in report["rows"] if r["counterexample"]]
    if ces:
        lines += [
            "## Counterexamples",
            "",
            "Each is an MDP JSON file (`bisimkit info FILE`, `bisimkit solve FILE --metric ...`) holding one "
            "case of its row: the one hypothesis shrank, or else the row's smallest failing case, so its "
            "margin (shown here, and what `bisimkit verify --mdp FILE` reproduces) can be milder than the "
            "row's worst in the table.",
            "",
        ]
        for r in ces:
            lines.append(
                f"- {r['label']} on {r['family']}: [{r['counterexample']}]({r['counterexample']})"
                f"{' (shrunk by hypothesis)' if r['shrunk'] else ''}: {r['counterexample_detail']}"
            )
        lines.append("")
    if report["figures"]:
        lines += ["## Figures", ""]
        for p in report["figures"]:
            lines += [f"![{p}]({p})", ""]
    return "\n".join(lines)


def console_summary(report: dict, out: str | Path) -> str:
    """What the command line prints after a run: the table, the verdicts, where the report is."""
    lines = [table(report["rows"]), ""]
    lines += [f"{cid}: {text}" for cid, text in report["verdicts"].items()]
    if "skipped" in report.get("losses", {}):
        lines.append(f"L1-L{len(learning.LOSS_CHECKS)}: {report['losses']['skipped']}")
    known = [f["label"] for f in report.get("findings", []) if f["reproduced"]]
    if known:
        lines.append(f"established findings reproduced: {', '.join(known)} (validation/findings.py)")
    lines += [f"SURPRISE: {text}" for text in report.get("surprises", [])]
    lines.append(
        f"\nreport: {Path(out) / 'report.md'} ({report['seconds']:.1f} s); exit status {report['exit_status']}"
    )
    return "\n".join(lines)
