"""The coupling study's records: the table over seeds, the findings, and one figure.

    python -m figures.coupling_study [--records benchmarks/results/coupling_study]
        [--out docs/results/coupling_study.png] [--table RECORDS/table.md] [--page docs/results/coupling_study.md]

Reads every record ``RECORDS/MODE/SCENE/METHOD/seedK/summary.json`` that
``python -m benchmarks.coupling_study`` wrote and, per mode, scene and method,
aggregates each number over the seeds: the mean and its 95% stratified-bootstrap
interval (:func:`bisimkit_runs.aggregate.interval_estimates`, one task, the seeds as
runs). Writes the table (markdown), the figure (the error of the learned metric
against the metric each method intends, method by method, every seed a point) and,
with ``--page``, the table and findings into the block of that page between
``<!-- coupling-study:begin -->`` and ``<!-- coupling-study:end -->``.

The findings compare the two pairs of methods that differ only in the coupling
(eps-r beside its independent variant on the reward ground, eps-pi beside drq+pse
on the policy ground) by their error against the intended metric: a pair is
separated when the two intervals do not overlap, and the sentence says which
coupling is closer, whichever it is. The targets (entangled methods within 5% mean
and 15% max of their own fixed points, isolated) are met when the interval's upper
end is under the mark.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

from bisimkit.errors import InputError
from bisimkit.files import atomic_write_text, check_output
from bisimkit_runs.aggregate import DEFAULT_CONFIDENCE, interval_estimates

from .style import plt, save

MODES = ("isolated", "agent")
#: The study's scenes and seeds per cell (``benchmarks.coupling_study``'s defaults).
SCENES = ("ring", "sprite", "sprite-noisy")
SEEDS = 5
#: Study methods in table order, and the coupling family each one's loss samples with.
METHOD_ORDER = ("eps-r", "indep-r", "eps-pi", "drq+pse", "drq+dbc", "dbc")
FAMILY = {
    "eps-r": "entangled",
    "eps-pi": "entangled",
    "indep-r": "independent",
    "drq+pse": "independent",
    "drq+dbc": "DBC",
    "dbc": "DBC",
}
COLOURS = {"entangled": "tab:blue", "independent": "tab:orange", "DBC": "tab:grey"}
#: The pairs that differ only in the coupling: (entangled, independent, ground).
PAIRS = (("eps-r", "indep-r", "reward"), ("eps-pi", "drq+pse", "policy"))
#: The targets of the entangled methods against their own fixed points (isolated mode).
TARGET_MEAN, TARGET_MAX = 0.05, 0.15
#: Each aggregated number: (key, where it is in a record, whether it is a percentage).
NUMBERS = (
    ("intended_mean", ("intended", "errors", "mean_relative_error"), True),
    ("intended_max", ("intended", "errors", "max_relative_error"), True),
    ("intended_mean_upper", ("intended", "errors", "mean_relative_error_upper"), True),
    ("intended_per_pair", ("intended", "errors", "per_pair_mean_relative_error"), True),
    ("intended_spearman", ("intended", "errors", "spearman"), False),
    ("own_mean", ("own", "errors", "mean_relative_error"), True),
    ("own_max", ("own", "errors", "max_relative_error"), True),
    ("invariance", ("invariance", "seen"), False),
    ("invariance_held_out", ("invariance", "held_out"), False),
    ("held_out_intended_mean", ("intended", "held_out_errors", "mean_relative_error"), True),
)
BEGIN, END = "<!-- coupling-study:begin -->", "<!-- coupling-study:end -->"
#: Fields every record has (what the table, figure and findings read).
REQUIRED = (
    "mode",
    "scene",
    "method",
    "seed",
    "intended",
    "own",
    "invariance",
    "samples_per_pair",
    "steps",
    "batch",
    "image_size",
)


# ------------------------------------------------------------------ records
def load_records(folder) -> list[dict]:
    """Every ``summary.json`` under ``folder/MODE/SCENE/METHOD/seedK/`` (staging folders, whose names start with
    a dot, are skipped), checked for the fields the table reads; one line naming the file and field otherwise."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder} is not a folder of coupling-study records", param="records")
    records = []
    for path in sorted(folder.glob("*/*/*/seed*/summary.json")):
        if any(part.startswith(".") for part in path.relative_to(folder).parts):
            continue
        try:
            record = json.loads(path.read_text())
        except ValueError as exc:
            raise InputError(f"{path}: not JSON ({exc})", param="records") from None
        if not isinstance(record, dict):
            raise InputError(f"{path}: expected a JSON object", param="records")
        for key in REQUIRED:
            if key not in record:
                raise InputError(f"{path}: no field {key!r}", param="records")
        record["_path"] = str(path)
        records.append(record)
    return records


def _get(record: dict, where: tuple[str, ...]):
    value = record
    for key in where:
        if not isinstance(value, dict) or value.get(key) is None:
            return None
        value = value[key]
    return value


def aggregate(records: list[dict], reps: int = 10_000) -> dict[tuple[str, str, str], dict]:
    """Per (mode, scene, method): the seeds and, for each of :data:`NUMBERS` the records hold, its mean over
    the seeds with the 95% stratified-bootstrap interval (``{"mean", "low", "high", "values"}``)."""
    cells: dict[tuple[str, str, str], list[dict]] = {}
    for record in records:
        cells.setdefault((record["mode"], record["scene"], record["method"]), []).append(record)
    out = {}
    for key, group in cells.items():
        group = sorted(group, key=lambda r: r["seed"])
        row = {"seeds": [r["seed"] for r in group], "records": group}
        for name, where, _ in NUMBERS:
            values = [_get(r, where) for r in group]
            values = [float(v) for v in values if v is not None and math.isfinite(float(v))]
            if not values:
                continue
            est = interval_estimates(np.asarray(values)[:, None], reps=reps, rng=0)["mean"]
            row[name] = {"mean": est.point, "low": est.low, "high": est.high, "values": values}
        out[key] = row
    return out


def _order(cells) -> list[tuple[str, str, str]]:
    scenes = []
    for _, scene, _ in cells:
        if scene not in scenes:
            scenes.append(scene)
    rank = {m: i for i, m in enumerate(METHOD_ORDER)}
    return sorted(
        cells, key=lambda k: (MODES.index(k[0]) if k[0] in MODES else 9, scenes.index(k[1]), rank.get(k[2], 99), k[2])
    )


def _cell(row: dict, name: str, percent: bool) -> str:
    """``mean [low, high]``; a number of one seed alone, with no interval."""
    if name not in row:
        return "–"
    v = row[name]
    scale, form = (100, "{:.1f}%") if percent else (1, "{:.3f}")
    text = form.format(scale * v["mean"])
    if len(v["values"]) < 2:
        return text
    return f"{text} [{form.format(scale * v['low']).rstrip('%')}, {form.format(scale * v['high']).rstrip('%')}]"


def markdown_table(cells: dict) -> str:
    """One table per mode: a row per scene and method, each number its mean over the seeds [95% interval]."""
    parts = []
    for mode in MODES:
        keys = [k for k in _order(cells) if k[0] == mode]
        if not keys:
            continue
        parts.append(
            f"**{mode}** (mean over seeds [{DEFAULT_CONFIDENCE:.0%} stratified-bootstrap interval]; a "
            "number of one seed has none)\n"
        )
        parts.append(
            "| scene | method | coupling | vs intended: mean | max | vs own fixed point: mean | max | "
            "per-pair mean (intended) | Spearman (intended) | invariance, seen | invariance, held-out | "
            "seeds |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
        )
        for key in keys:
            row = cells[key]
            intended = row["records"][0]["intended"]["name"]
            own = row["records"][0]["own"].get("name") or "none"
            upper = ""
            if (
                "intended_mean_upper" in row
                and row["intended_mean_upper"]["mean"] > row["intended_mean"]["mean"] + 1e-12
            ):
                upper = f" (at most {100 * row['intended_mean_upper']['mean']:.1f}%)"
            parts.append(
                f"| {key[1]} | {key[2]} | {FAMILY.get(key[2], '?')} | {intended}: "
                f"{_cell(row, 'intended_mean', True)}{upper} | {_cell(row, 'intended_max', True)} | "
                f"{own}: {_cell(row, 'own_mean', True)} | {_cell(row, 'own_max', True)} | "
                f"{_cell(row, 'intended_per_pair', True)} | {_cell(row, 'intended_spearman', False)} | "
                f"{_cell(row, 'invariance', False)} | {_cell(row, 'invariance_held_out', False)} | "
                f"{len(row['seeds'])} |"
            )
        parts.append("")
    return "\n".join(parts) + "\n"


def _seeds(n: int) -> str:
    return f"{n} seed" if n == 1 else f"{n} seeds"


def findings(cells: dict) -> list[str]:
    """The coupling pairs compared by their error against the intended metric, and the entangled methods'
    targets against their own fixed points in both modes, one sentence each (whatever the sign)."""
    lines = []
    scenes = []
    for _, scene, _ in _order(cells):
        if scene not in scenes:
            scenes.append(scene)
    for mode in MODES:
        for scene in scenes:
            for ent, ind, ground in PAIRS:
                a, b = cells.get((mode, scene, ent)), cells.get((mode, scene, ind))
                if not a or not b or "intended_mean" not in a or "intended_mean" not in b:
                    continue
                x, y = a["intended_mean"], b["intended_mean"]
                seeds = min(len(a["seeds"]), len(b["seeds"]))
                if seeds < 2:
                    verdict = "no interval, no verdict"
                elif x["high"] < y["low"]:
                    verdict = f"the entangled coupling is closer ({ent})"
                elif y["high"] < x["low"]:
                    verdict = f"the independent coupling is closer ({ind})"
                else:
                    verdict = "the intervals overlap: no coupling is closer at this number of seeds"
                lines.append(
                    f"{mode}, {scene}, {ground} ground: {ent} {_cell(a, 'intended_mean', True)} against "
                    f"{ind} {_cell(b, 'intended_mean', True)} mean error to the intended metric, "
                    f"{_seeds(seeds)}: {verdict}."
                )
    for mode, scene in [(mode, scene) for mode in MODES for scene in scenes]:
        for method in ("eps-r", "eps-pi"):
            row = cells.get((mode, scene, method))
            if not row or "own_mean" not in row or "own_max" not in row:
                continue
            mean, worst = row["own_mean"], row["own_max"]
            met = mean["high"] <= TARGET_MEAN and worst["high"] <= TARGET_MAX
            point = mean["mean"] <= TARGET_MEAN and worst["mean"] <= TARGET_MAX
            verdict = (
                "met with the interval" if met else ("met by the mean, not by the interval" if point else "missed")
            )
            if len(row["seeds"]) < 2:
                verdict = ("met by its one seed" if point else "missed by its one seed") + " (no interval)"
            lines.append(
                f"{mode}, {scene}, {method} against its own fixed point: {_cell(row, 'own_mean', True)} "
                f"mean, {_cell(row, 'own_max', True)} max, {_seeds(len(row['seeds']))} (targets 5% and "
                f"15%): {verdict}."
            )
    return lines


def settings_line(records: list[dict]) -> str:
    """The settings the records share, or each one's values where they differ."""
    keys = ("steps", "batch", "image_size", "samples_per_pair", "mc_samples", "draws", "device")
    parts = []
    for key in keys:
        values = sorted({str(r.get(key)) for r in records})
        parts.append(f"{key} {'/'.join(values)}")
    return ", ".join(parts)


# ------------------------------------------------------------------- figure
def plot_coupling_study(path, cells: dict):
    """Rows: isolated, agent; columns: scenes. In each panel, per method, every seed's mean error against the
    metric the method intends (% of its largest distance; where that metric is only bracketed, the least error
    with a line up to the largest), and the mean over seeds with its 95% interval."""
    scenes = list(SCENES) + sorted({scene for _, scene, _ in cells} - set(SCENES))
    fig, axes = plt.subplots(2, len(scenes), figsize=(3.9 * len(scenes), 6.6), squeeze=False, sharey="row")
    rng = np.random.default_rng(0)
    for r, mode in enumerate(MODES):
        for c, scene in enumerate(scenes):
            ax = axes[r][c]
            methods = list(METHOD_ORDER) + sorted({m for (_, _, m) in cells} - set(METHOD_ORDER))
            for x, method in enumerate(methods):
                row = cells.get((mode, scene, method))
                if row is None or "intended_mean" not in row:
                    continue
                colour = COLOURS.get(FAMILY.get(method, "DBC"), "tab:grey")
                values = np.asarray(row["intended_mean"]["values"]) * 100
                upper = np.asarray(row.get("intended_mean_upper", row["intended_mean"])["values"]) * 100
                xs = x + rng.uniform(-0.15, 0.15, len(values))
                for xi, lo, hi in zip(xs, values, upper):
                    if hi > lo + 1e-9:
                        ax.plot([xi, xi], [lo, hi], color=colour, alpha=0.35, lw=1)
                ax.scatter(xs, values, color=colour, s=18, zorder=3)
                agg = row["intended_mean"]
                ax.errorbar(
                    [x + 0.3],
                    [100 * agg["mean"]],
                    yerr=[[100 * (agg["mean"] - agg["low"])], [100 * (agg["high"] - agg["mean"])]],
                    fmt="D",
                    color="black",
                    ms=4,
                    capsize=3,
                    zorder=4,
                )
            ax.axhline(100 * TARGET_MEAN, color="tab:red", ls=":", lw=1)
            ax.set_xticks(range(len(methods)))
            ax.set_xticklabels(methods, rotation=35, ha="right", fontsize=8)
            ax.set_xlim(-0.5, len(methods) - 0.3)
            ax.set_ylim(bottom=0)
            ax.set_title(f"{scene}, {mode}", fontsize=9)
            ax.grid(axis="y", alpha=0.3)
            if not any((mode, scene, m) in cells for m in methods):
                ax.text(0.5, 0.5, "no records yet", transform=ax.transAxes, ha="center", va="center", color="grey")
            if c == 0:
                ax.set_ylabel("mean error against the\nintended metric (% of its max)")
    handles = [
        plt.Line2D([], [], marker="o", ls="", color=COLOURS[k], label=f"{k} coupling" if k != "DBC" else "DBC's losses")
        for k in COLOURS
    ]
    handles.append(plt.Line2D([], [], marker="D", ls="", color="black", label="mean over seeds, 95% interval"))
    handles.append(plt.Line2D([], [], ls=":", color="tab:red", label="5%"))
    fig.legend(handles=handles, loc="lower center", ncol=5, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return save(fig, path)


# --------------------------------------------------------------------- page
def coverage(cells: dict) -> str:
    """The page's sentence on how much of the study's grid (modes x scenes x methods, :data:`SEEDS` seeds
    each) the records fill, from :func:`aggregate`'s cells."""
    planned = len(MODES) * len(SCENES) * len(METHOD_ORDER)
    full = sum(1 for row in cells.values() if len(row["seeds"]) >= SEEDS)
    if full == planned:
        return f"**Every one of the {planned} cells has all {SEEDS} seeds.**"
    return (
        f"**{len(cells)} of the {planned} cells have a record, {full} of them all {SEEDS} seeds**: a cell "
        "without a row below has no record yet, and a number of one seed has no interval."
    )


def page_block(cells: dict, records: list[dict], figure: str | None) -> str:
    """What goes between the page's markers: the settings, the table, the findings and the figure."""
    if not records:
        return (
            f"{BEGIN}\n*No records yet: run `python -m benchmarks.coupling_study` (the command above), then "
            f"`python -m figures.coupling_study --page docs/results/coupling_study.md`.*\n{END}"
        )
    lines = [
        BEGIN,
        f"Generated from {len(records)} records by `python -m figures.coupling_study`; settings: "
        f"{settings_line(records)}. {coverage(cells)}",
        "",
        markdown_table(cells),
        "**Findings** (generated from the table):",
        "",
    ]
    lines += [f"* {line}" for line in findings(cells)] or ["* no pair has records in both members yet"]
    if figure:
        lines += ["", f"![the learned metric against the intended one, per method, seeds as points]({figure})"]
    lines.append(END)
    return "\n".join(lines)


def update_page(page, block: str) -> Path:
    """Replace the block between the markers of ``page`` with ``block``; one line when a marker is missing."""
    page = Path(page)
    if not page.is_file():
        raise InputError(f"{page} does not exist", param="page")
    text = page.read_text()
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise InputError(f"{page}: expected one {BEGIN} line followed by one {END} line", param="page")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return atomic_write_text(page, head + block + tail)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--records",
        default="benchmarks/results/coupling_study",
        help="folder of the study's records (default benchmarks/results/coupling_study)",
    )
    parser.add_argument(
        "--out", default="docs/results/coupling_study.png", help="the figure (default docs/results/coupling_study.png)"
    )
    parser.add_argument("--table", default=None, help="the table as markdown (default RECORDS/table.md)")
    parser.add_argument("--page", default=None, help="a page whose coupling-study block is replaced")
    parser.add_argument(
        "--figure-link",
        default="coupling_study.png",
        help="the figure's path as the page links it (default coupling_study.png, beside the page)",
    )
    args = parser.parse_args(argv)
    try:
        records = load_records(args.records)
        table = Path(args.table) if args.table else Path(args.records) / "table.md"
        check_output(args.out)
        check_output(table, param="table")
        cells = aggregate(records)
        print(plot_coupling_study(args.out, cells))
        text = markdown_table(cells) + "\n" + "\n".join(f"* {line}" for line in findings(cells)) + "\n"
        print(atomic_write_text(table, text))
        if args.page:
            print(update_page(args.page, page_block(cells, records, args.figure_link)))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
