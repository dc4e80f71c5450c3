"""The paper's results table, evaluation return per method and task in markdown, as a command: the table
itself (its rows, columns, cells and footnote) is :mod:`bisimkit_runs.results_table`'s. It prints the
table; the run folders behind every cell are listed on stderr and, with ``--out table.md``, in
``table.runs.txt``.

    python -m figures.results_table runs/ [--step 500000] [--out table.md] [--aggregates]

``--aggregates`` appends the aggregates of :mod:`figures.aggregate_table` (IQM, mean, median and
optimality gap of the normalised scores with 95% stratified-bootstrap intervals, per method and per
task, and the probability of improvement of every pair); a run set that misses a seed or a task is
refused with one line naming it.

``--carla`` gives the paper's CARLA table instead (:func:`carla_table`): the carla-highway
runs only, rows SAC, DBC, ε-R, PSE, ε-π (``drq+dbc`` and ``drq+pse`` run without DrQ there,
see ``agents.config``), one column of ours and one of the paper's values.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Iterable

from bisimkit.errors import InputError
from bisimkit_runs.aggregate_table import aggregate_runs, csv_text, markdown
from bisimkit_runs.results_table import carla_table, table_and_listing
from bisimkit_runs.runs import PathLike

from .aggregate_table import plot_profiles


def results_table(runs_root: PathLike | Iterable[PathLike], step: int | None = None) -> str:
    """The markdown results table of every run under ``runs_root`` (see the module doc)."""
    return table_and_listing(runs_root, step)[0]


def runs_listing_path(out_md: PathLike) -> Path:
    """Where ``--out``'s listing of the runs goes: ``table.md`` -> ``table.runs.txt``."""
    return Path(out_md).with_suffix(".runs.txt")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status (0, or 2 on bad input)."""
    parser = argparse.ArgumentParser(prog="python -m figures.results_table", description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="+", metavar="RUNS_ROOT", help="folder(s) to search for runs, or run folders")
    parser.add_argument("--step", type=int, default=None, help="use the evaluation at this env step (default: final)")
    parser.add_argument("--out", default=None, help="also write the table to this markdown file")
    parser.add_argument(
        "--carla",
        action="store_true",
        help="the paper's CARLA table: carla-highway runs only, next to the paper's values",
    )
    parser.add_argument(
        "--aggregates",
        action="store_true",
        help="append IQM, mean, median, optimality gap with 95%% CIs, probability of improvement "
        "(figures.aggregate_table); with --out, TABLE.aggregates.csv and TABLE.profiles.png too",
    )
    args = parser.parse_args(argv)
    try:
        table, listing = (carla_table if args.carla else table_and_listing)(args.roots, args.step)
        if args.aggregates:
            agg = aggregate_runs(args.roots, args.step)
            table += "\n" + markdown(agg)
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            if args.aggregates:
                plot_profiles(agg, Path(args.out).with_suffix(".profiles.png"))
                Path(args.out).with_suffix(".aggregates.csv").write_text(csv_text(agg))
            Path(args.out).write_text(table)
            runs_listing_path(args.out).write_text(listing)
    except (InputError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(table, end="")
    where = f" (also in {runs_listing_path(args.out)})" if args.out else ""
    print(f"runs per cell{where}:\n{listing}", end="", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
