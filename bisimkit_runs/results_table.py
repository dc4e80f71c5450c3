"""The paper's results table: evaluation return per method (rows) and task (columns), in markdown
(``python -m figures.results_table`` prints and writes it).

Rows are SAC, DrQ, DrQ+DBC, ε-R, DrQ+PSE, ε-π; columns BiC, CS, CR, FS, RE, WW
(ball_in_cup-catch, cartpole-swingup, cheetah-run, finger-spin, reacher-easy,
walker-walk). A cell is ``mean ± std`` over seeds (population std) of each
seed's final evaluation return (the last row of its ``eval.csv``), or of the
evaluation at exactly ``--step`` environment steps (seeds without one are left
out); ``n/a`` where there is no run. The best mean of each column is in bold. A
footnote line gives the seeds per cell and the environment steps, and names
any duplicate seed left out.

The seeds of a cell share their whole configuration (:func:`bisimkit_runs.runs.group_runs`:
every learning field of ``config.json`` but the seed). A method run under
several configurations gets one row per configuration, labelled by the fields
that differ (``ε-R (env_steps=4000)``); a seed met twice in one configuration
counts once (the run evaluated furthest). :func:`table_and_listing` gives the run folders behind
every cell with the table.

:func:`carla_table` is the paper's CARLA table instead: the carla-highway runs only, rows SAC,
DBC, ε-R, PSE, ε-π (``drq+dbc`` and ``drq+pse`` run without DrQ there, see ``agents.config``),
one column of ours and one of the paper's values.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from bisimkit.errors import InputError, check_count

from .names import CARLA_TASK
from .runs import (
    METHOD_LABEL,
    METHOD_ORDER,
    TASK_ABBREV,
    TASK_ORDER,
    Group,
    PathLike,
    describe_groups,
    duplicate_note,
    evaluation_at,
    find_runs,
    group_runs,
    ordered,
)


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


def collect_cells(groups: list[Group], step: int | None = None) -> dict[tuple[str, str], Cell]:
    """The :class:`Cell` of every group (keyed by its row label and task) with at least one seed
    evaluated (at ``step``)."""
    cells = {}
    for group in groups:
        rows = [(found, run) for run in group.runs if (found := evaluation_at(run, step)) is not None]
        if rows:
            cells[(group.label, group.task)] = Cell(
                np.array([v for (_, v), _ in rows]),
                tuple(s for (s, _), _ in rows),
                tuple(sorted({x for _, run in rows for x in run.splits})),
            )
    return cells


def row_labels(groups: list[Group]) -> list[str]:
    """The table's rows: every paper method (its plain label when it has no run), each method's
    configurations in :func:`~bisimkit_runs.runs.group_runs` order, then methods outside the paper's."""
    rows = []
    for method in list(METHOD_ORDER) + ordered({g.method for g in groups} - set(METHOD_ORDER), ()):
        labels = [g.label for g in groups if g.method == method]
        for label in labels or [METHOD_LABEL.get(method, method)]:
            if label not in rows:
                rows.append(label)
    return rows


def _steps_text(steps: Iterable[int]) -> str:
    steps = sorted(set(steps))
    return f"{steps[0]:,}" if len(steps) == 1 else f"{steps[0]:,}–{steps[-1]:,}"


def _with_exceptions(label: str, per_cell: dict[tuple[str, str], str]) -> str:
    """``label: X`` for the most common value X, then ``(except ROW/TASK: Y, ...)``."""
    common = Counter(per_cell.values()).most_common(1)[0][0]
    others = [f"{row}/{TASK_ABBREV.get(t, t)}: {v}" for (row, t), v in per_cell.items() if v != common]
    return f"{label}: {common}" + (f" (except {', '.join(others)})" if others else "")


def footnote(cells: dict[tuple[str, str], Cell], step: int | None, duplicates: str = "") -> str:
    """The table's footnote line: what a cell is, seeds per cell, environment steps, any ``duplicates``
    note (:func:`~bisimkit_runs.runs.duplicate_note`)."""
    what = "final evaluation return" if step is None else f"evaluation return at {step:,} environment steps"
    parts = [f"Each cell: mean ± std over seeds of the {what}; best mean per column in bold; n/a: no run"]
    if cells:
        splits = sorted({s for cell in cells.values() for s in cell.splits})
        parts.append(_with_exceptions("seeds per cell", {k: str(c.n) for k, c in cells.items()}))
        parts.append(_with_exceptions("environment steps", {k: _steps_text(c.steps) for k, c in cells.items()}))
        if splits:
            parts.append(
                "evaluation split: " + ", ".join(splits) + (" (held-out backgrounds)" if splits == ["eval"] else "")
            )
    if duplicates:
        parts.append(duplicates)
    return "*" + "; ".join(parts) + ".*"


def format_table(
    cells: dict[tuple[str, str], Cell],
    step: int | None = None,
    decimals: int = 1,
    rows: list[str] | None = None,
    duplicates: str = "",
) -> str:
    """Markdown table (paper layout) of ``cells`` keyed by (row label, task), then the footnote line;
    ``rows``: the row labels in order (default: the paper's methods, then any other row of ``cells``)."""
    tasks = list(TASK_ORDER) + ordered({t for _, t in cells} - set(TASK_ORDER), ())
    if rows is None:
        rows = [METHOD_LABEL[m] for m in METHOD_ORDER]
        rows += [r for r in dict.fromkeys(r for r, _ in cells) if r not in rows]
    best = {t: max((c.mean for (_, tt), c in cells.items() if tt == t), default=None) for t in tasks}
    lines = ["| Method | " + " | ".join(TASK_ABBREV.get(t, t) for t in tasks) + " |", "|:--|" + "--:|" * len(tasks)]
    for label in rows:
        row = []
        for task in tasks:
            cell = cells.get((label, task))
            if cell is None:
                row.append("n/a")
                continue
            text = f"{cell.mean:.{decimals}f} ± {cell.std:.{decimals}f}"
            row.append(f"**{text}**" if cell.mean >= best[task] else text)
        lines.append(f"| {label} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n\n" + footnote(cells, step, duplicates) + "\n"


def table_and_listing(runs_root: PathLike | Iterable[PathLike], step: int | None = None) -> tuple[str, str]:
    """The markdown results table of every run under ``runs_root`` (see the module doc) and the listing
    of the run folders behind its cells (:func:`~bisimkit_runs.runs.describe_groups`)."""
    if step is not None:
        check_count("step", step, low=0)
    groups = group_runs(find_runs(runs_root))
    table = format_table(collect_cells(groups, step), step, rows=row_labels(groups), duplicates=duplicate_note(groups))
    return table, describe_groups(groups)


#: The paper's CARLA table: (method, row label, paper's mean, paper's std), in its order.
CARLA_ROWS = (
    ("sac", "SAC", 168, 9),
    ("drq+dbc", "DBC", 160, 7),
    ("eps-r", "ε-R", 157, 11),
    ("drq+pse", "PSE", 158, 11),
    ("eps-pi", "ε-π", 148, 23),
)


def carla_table(
    runs_root: PathLike | Iterable[PathLike], step: int | None = None, decimals: int = 1
) -> tuple[str, str]:
    """The paper's CARLA table of the carla-highway runs under ``runs_root`` (ours next to the paper's
    values; a method under several configurations gets a row per configuration) and the listing of the
    run folders behind its cells."""
    if step is not None:
        check_count("step", step, low=0)
    runs = [run for run in find_runs(runs_root) if run.task == CARLA_TASK]
    if not runs:
        raise InputError(f"runs: no {CARLA_TASK} run under {runs_root}")
    groups = group_runs(runs)
    cells = collect_cells(groups, step)
    lines = ["| Method | CARLA highway (ours) | paper |", "|:--|--:|--:|"]
    ours = {label: cell for (label, _), cell in cells.items()}
    best = max((c.mean for c in ours.values()), default=None)
    known = {m for m, *_ in CARLA_ROWS}
    rows = [(m, name, f"{mean} ± {std}") for m, name, mean, std in CARLA_ROWS]
    rows += [(m, METHOD_LABEL.get(m, m), "n/a") for m in ordered({g.method for g in groups} - known, ())]
    for method, name, paper in rows:
        labels = [g.label for g in groups if g.method == method] or [None]
        for label in labels:
            cell = ours.get(label)
            text = "n/a" if cell is None else f"{cell.mean:.{decimals}f} ± {cell.std:.{decimals}f}"
            if cell is not None and cell.mean >= best:
                text = f"**{text}**"
            shown = name if label is None else name + label[len(METHOD_LABEL.get(method, method)) :]
            lines.append(f"| {shown} | {text} | {paper} |")
    table = (
        "\n".join(lines)
        + "\n\n"
        + footnote({(label, CARLA_TASK): cell for label, cell in ours.items()}, step, duplicate_note(groups))
        + "\n"
    )
    return table, describe_groups(groups)
