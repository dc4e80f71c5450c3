"""The paper's results table: evaluation return per method (rows) and task (columns), in markdown.

Rows are SAC, DrQ, DrQ+DBC, ε-R, DrQ+PSE, ε-π; columns BiC, CS, CR, FS, RE, WW
(ball_in_cup-catch, cartpole-swingup, cheetah-run, finger-spin, reacher-easy,
walker-walk). A cell is ``mean ± std`` over seeds (population std) of each
seed's final evaluation return (the last row of its ``eval.csv``), or of the
evaluation at exactly ``--step`` environment steps (seeds without one are left
out); ``n/a`` where there is no run. The best mean of each column is in bold. A
footnote line gives the seeds per cell and the environment steps.

    python -m figures.results_table runs/ [--step 500000] [--out table.md]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

from bisimkit.errors import InputError, check_count

from .runs import METHOD_LABEL, METHOD_ORDER, TASK_ABBREV, TASK_ORDER, PathLike, Run, find_runs, ordered


@dataclass
class Cell:
    """The returns of one (method, task) across seeds, and the steps they were evaluated at."""

    values: np.ndarray
    steps: tuple[int, ...]
    splits: tuple[str, ...]

    @property
    def mean(self) -> float:
        """Mean over seeds."""
        return float(np.mean(self.values))

    @property
    def std(self) -> float:
        """Population standard deviation over seeds."""
        return float(np.std(self.values))

    @property
    def n(self) -> int:
        """Number of seeds."""
        return len(self.values)


def evaluation_at(run: Run, step: int | None = None) -> tuple[int, float] | None:
    """(step, mean return) of the run's last evaluation, or of the one at exactly ``step`` (None if absent)."""
    steps, values = run.series("mean_return")
    if not len(steps):
        return None
    if step is None:
        return int(steps[-1]), float(values[-1])
    hits = np.flatnonzero(steps == step)
    return (int(step), float(values[hits[-1]])) if len(hits) else None


def collect_cells(runs: list[Run], step: int | None = None) -> dict[tuple[str, str], Cell]:
    """The :class:`Cell` of every (method, task) with at least one seed evaluated (at ``step``)."""
    grouped: dict[tuple[str, str], list[tuple[int, float, tuple[str, ...]]]] = {}
    for run in runs:
        found = evaluation_at(run, step)
        if found is not None:
            grouped.setdefault((run.method, run.task), []).append((*found, run.splits))
    return {key: Cell(np.array([v for _, v, _ in rows]), tuple(s for s, _, _ in rows),
                      tuple(sorted({x for _, _, sp in rows for x in sp})))
            for key, rows in grouped.items()}


def _steps_text(steps: Iterable[int]) -> str:
    steps = sorted(set(steps))
    return f"{steps[0]:,}" if len(steps) == 1 else f"{steps[0]:,}–{steps[-1]:,}"


def _with_exceptions(label: str, per_cell: dict[tuple[str, str], str]) -> str:
    """``label: X`` for the most common value X, then ``(except METHOD/TASK: Y, ...)``."""
    common = Counter(per_cell.values()).most_common(1)[0][0]
    others = [f"{METHOD_LABEL.get(m, m)}/{TASK_ABBREV.get(t, t)}: {v}" for (m, t), v in per_cell.items()
              if v != common]
    return f"{label}: {common}" + (f" (except {', '.join(others)})" if others else "")


def footnote(cells: dict[tuple[str, str], Cell], step: int | None) -> str:
    """The table's footnote line: what a cell is, seeds per cell and environment steps."""
    what = "final evaluation return" if step is None else f"evaluation return at {step:,} environment steps"
    parts = [f"Each cell: mean ± std over seeds of the {what}; best mean per column in bold; n/a: no run"]
    if cells:
        splits = sorted({s for cell in cells.values() for s in cell.splits})
        parts.append(_with_exceptions("seeds per cell", {k: str(c.n) for k, c in cells.items()}))
        parts.append(_with_exceptions("environment steps", {k: _steps_text(c.steps) for k, c in cells.items()}))
        if splits:
            parts.append("evaluation split: " + ", ".join(splits) +
                         (" (held-out backgrounds)" if splits == ["eval"] else ""))
    return "*" + "; ".join(parts) + ".*"


def format_table(cells: dict[tuple[str, str], Cell], step: int | None = None, decimals: int = 1) -> str:
    """Markdown table (paper layout) of ``cells`` keyed by (method, task), then the footnote line."""
    tasks = list(TASK_ORDER) + ordered({t for _, t in cells} - set(TASK_ORDER), ())
    methods = list(METHOD_ORDER) + ordered({m for m, _ in cells} - set(METHOD_ORDER), ())
    best = {t: max((c.mean for (m, tt), c in cells.items() if tt == t), default=None) for t in tasks}
    lines = ["| Method | " + " | ".join(TASK_ABBREV.get(t, t) for t in tasks) + " |",
             "|:--|" + "--:|" * len(tasks)]
    for method in methods:
        row = []
        for task in tasks:
            cell = cells.get((method, task))
            if cell is None:
                row.append("n/a")
                continue
            text = f"{cell.mean:.{decimals}f} ± {cell.std:.{decimals}f}"
            row.append(f"**{text}**" if cell.mean >= best[task] else text)
        lines.append(f"| {METHOD_LABEL.get(method, method)} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n\n" + footnote(cells, step) + "\n"


def results_table(runs_root: PathLike | Iterable[PathLike], step: int | None = None) -> str:
    """The markdown results table of every run under ``runs_root`` (see the module doc)."""
    if step is not None:
        check_count("step", step, low=0)
    return format_table(collect_cells(find_runs(runs_root), step), step)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status (0, or 2 on bad input)."""
    parser = argparse.ArgumentParser(prog="python -m figures.results_table", description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="+", metavar="RUNS_ROOT", help="folder(s) to search for runs, or run folders")
    parser.add_argument("--step", type=int, default=None, help="use the evaluation at this env step (default: final)")
    parser.add_argument("--out", default=None, help="also write the table to this markdown file")
    args = parser.parse_args(argv)
    try:
        table = results_table(args.roots, args.step)
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(table)
    except (InputError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(table, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
