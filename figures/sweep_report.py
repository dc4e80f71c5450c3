"""Gather a sweep into the paper's tables, learning curves and one tidy CSV: ``python -m agents.sweep gather ROOT
--out DIR``.

A sweep root (``python -m agents.sweep launch``) holds ``sweep.json`` (its grid and runs), ``runs/NAME/`` and
``state/NAME.json``. A *condition* is one combination of the grid's axes other than task, method and seed (its
``[conditions.NAME]`` bundle and any other varied field): the paper's three tables are three conditions. Per
condition, ``DIR`` gets:

* ``table-COND.md``: the paper's table layout (:mod:`bisimkit_runs.results_table`: mean ± std over seeds of the final
  evaluation, best mean per column in bold, seeds per cell in the footnote; a condition of carla-highway runs
  only gets the paper's CARLA table, ours beside the paper's values), then what is missing;
* ``curves-COND.png``: learning curves (:mod:`figures.learning_curves`: mean ± std band per method, a panel per
  task), with ``curves-COND.runs.txt``;
* ``aggregates-COND.md``, ``aggregates-COND.csv`` and ``profiles-COND.png`` (:mod:`bisimkit_runs.aggregate_table`: IQM,
  mean, median and optimality gap of the normalised scores with 95% stratified-bootstrap intervals, per method and
  per task, the probability of improvement of every pair of methods, the performance profiles); the aggregate
  section also follows the condition's table. A condition whose runs miss a seed or a task gets one line naming
  what is missing instead (no aggregate over what happens to be there);

and, for the whole sweep, ``tables.md`` (every condition's table under a heading), ``evaluations.csv`` (every
row of every run's ``eval.csv`` and ``eval_train.csv`` with the run's name, status, condition and grid values)
and ``missing.txt``. A partial sweep gathers what has evaluations and names the runs that have none yet or are
not done. ``COND`` is ``all`` for a grid of tasks, methods and seeds only.

Reads JSON and CSV files only: the sweep's own files through :mod:`bisimkit_runs.sweeps`, the runs through
:mod:`bisimkit_runs.runs` (the paper's task and method order: :mod:`bisimkit_runs.names`).
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import sys
from pathlib import Path

from bisimkit.errors import InputError
from bisimkit.extras import report_missing
from bisimkit.files import atomic_write_text
from bisimkit_runs.aggregate import DEFAULT_REPS
from bisimkit_runs.aggregate_table import aggregate_runs, markdown
from bisimkit_runs.files import CONFIG_FILE, EVAL_FIELDS, EVAL_FILE, EVAL_FILES
from bisimkit_runs.names import CARLA_TASK
from bisimkit_runs.results_table import carla_table, table_and_listing
from bisimkit_runs.sweeps import RUNS_DIR, read_state, read_sweep

from . import aggregate_table
from .learning_curves import plot_learning_curves

BASE_AXES = ("task", "method", "seed")


def run_status(root: Path, name: str) -> str:
    """A run's status from its state file (:func:`bisimkit_runs.sweeps.read_state`); ``pending`` when
    the file is missing or unreadable (gather reports what exists)."""
    try:
        return str(read_state(root, name).get("status", "pending"))
    except InputError:
        return "pending"


def condition_of(values: dict) -> str:
    """The condition label of a run's grid values (``all`` when the grid varies only task, method, seed)."""
    parts = []
    for axis, value in values.items():
        if axis in BASE_AXES:
            continue
        if axis == "condition":
            parts.append(str(value))
        else:
            shown = "auto" if value is None else ("true" if value is True else "false" if value is False else value)
            parts.append(f"{axis}={shown}")
    return ",".join(parts) or "all"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+=,-]", "_", text)


def _rows(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def gather(root: str | Path, out: str | Path, step: int | None = None, reps: int | None = None) -> dict:
    """Write the tables, curves, aggregates, tidy CSV and missing list of sweep ``root`` into ``out`` (see the
    module doc; ``reps``: bootstrap replications of the aggregates, default
    :data:`bisimkit_runs.aggregate.DEFAULT_REPS`); returns ``{"conditions": {label: files}, "missing": [...], "runs": n,
    "with_evaluations": n}``."""
    root, out = Path(root), Path(out)
    sweep = read_sweep(root)
    axes = [a for a in sweep.get("grid", {}).get("axes", []) if a not in BASE_AXES]
    conditions: dict[str, list[dict]] = {}
    for run in sweep["runs"]:
        conditions.setdefault(condition_of(run["values"]), []).append(run)
    out.mkdir(parents=True, exist_ok=True)
    tidy = io.StringIO()
    writer = csv.DictWriter(
        tidy,
        ["run", "status", "condition", "task", "method", "seed", *axes, "file", *EVAL_FIELDS],
        extrasaction="ignore",
    )
    writer.writeheader()
    missing, tables, result = [], [], {"conditions": {}, "runs": len(sweep["runs"]), "with_evaluations": 0}
    for label, runs in conditions.items():
        folders, absent = [], []
        for run in runs:
            name, folder = run["name"], root / RUNS_DIR / run["name"]
            status = run_status(root, name)
            settings = {"run": name, "status": status, "condition": label, **run["values"]}
            rows = _rows(folder / EVAL_FILE)
            for file in EVAL_FILES.values():
                for row in rows if file == EVAL_FILE else _rows(folder / file):
                    writer.writerow({**settings, "file": file, **row})
            if rows and (folder / CONFIG_FILE).is_file():
                folders.append(folder)
            if status != "done":
                absent.append(f"{name} ({status}{'' if rows else ', no evaluation yet'})")
        result["with_evaluations"] += len(folders)
        missing += [f"{label}: {a}" for a in absent]
        note = (
            f"*Missing: {len(absent)} of {len(runs)} runs of this condition are not done: "
            f"{'; '.join(absent[:20])}{'; ...' if len(absent) > 20 else ''} (the cells hold the runs "
            f"that have evaluations).*\n"
            if absent
            else f"*All {len(runs)} runs of this condition are done.*\n"
        )
        slug = _slug(label)
        files = {}
        if folders:
            carla = {run["values"].get("task", run.get("config", {}).get("task")) for run in runs} == {CARLA_TASK}
            table, listing = (carla_table if carla else table_and_listing)(folders, step)
            body = f"## {label}\n\n{table}\n{note}"
            atomic_write_text(out / f"table-{slug}.runs.txt", listing)
            png = plot_learning_curves(folders, out / f"curves-{slug}.png")
            files = {"table": str(out / f"table-{slug}.md"), "curves": str(png)}
            try:
                agg = aggregate_runs(folders, step, reps or DEFAULT_REPS)
            except InputError as exc:
                body += f"\n*Aggregates not computed: {str(exc).splitlines()[0]}.*\n"
            else:
                files.update(
                    {
                        f"aggregates_{kind}": path
                        for kind, path in aggregate_table.write(agg, out, suffix=f"-{slug}").items()
                    }
                )
                body += "\n" + markdown(agg)
            atomic_write_text(out / f"table-{slug}.md", body)
        else:
            body = f"## {label}\n\nNo run of this condition has an evaluation yet.\n\n{note}"
        tables.append(body)
        result["conditions"][label] = files
    atomic_write_text(
        out / "tables.md", f"# Sweep {sweep.get('grid', {}).get('name') or root.name}\n\n" + "\n".join(tables)
    )
    atomic_write_text(out / "evaluations.csv", tidy.getvalue())
    atomic_write_text(out / "missing.txt", "".join(m + "\n" for m in missing))
    result["missing"] = missing
    return result


def main(argv: list[str] | None = None) -> int:
    """``python -m agents.sweep gather ROOT --out DIR [--step N]``; exit 0, or 2 on bad input."""
    parser = argparse.ArgumentParser(prog="python -m agents.sweep gather", description=__doc__.split("\n\n")[0])
    parser.add_argument("root", help="sweep root")
    parser.add_argument("--out", required=True, help="folder for the tables, curves and evaluations.csv")
    parser.add_argument("--step", type=int, default=None, help="tables at this environment step (default: final)")
    parser.add_argument(
        "--reps",
        type=int,
        default=DEFAULT_REPS,
        help="bootstrap replications of the aggregates' intervals (default %(default)s)",
    )
    args = parser.parse_args(argv)
    try:
        result = gather(args.root, args.out, args.step, args.reps)
    except InputError as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        return report_missing(exc)
    print(
        f"gathered {result['with_evaluations']} of {result['runs']} runs into {args.out}: "
        f"{len(result['conditions'])} condition(s), tables.md (with aggregates), evaluations.csv"
    )
    if result["missing"]:
        print(f"missing ({len(result['missing'])} runs not done; listed in {Path(args.out) / 'missing.txt'}):")
        for line in result["missing"][:20]:
            print(f"  {line}")
        if len(result["missing"]) > 20:
            print(f"  ... and {len(result['missing']) - 20} more")
    return 0


if __name__ == "__main__":
    sys.exit(main())
