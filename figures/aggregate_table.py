"""Aggregates of trained runs: IQM, mean, median, optimality gap with 95% CIs, probability of
improvement, performance profiles (:mod:`bisimkit_runs.aggregate`, after Agarwal et al., NeurIPS 2021).

    python -m figures.aggregate_table runs/ --out aggregates/ [--step N] [--reps 10000] [--bounds TASK=LO:HI]

Runs are found and grouped as for the results table (:func:`bisimkit_runs.runs.group_runs`: one row
per method and configuration, the seeds of one configuration together); each seed's score is its
final evaluation return (or the one at exactly ``--step`` environment steps), normalised per task
by its stated bounds, ``(return - low) / (high - low)``: 0 to 1000 for every DCS task (an episode
is 1000 control steps with rewards in [0, 1]); a task without stated bounds needs ``--bounds
TASK=LOW:HIGH``. Every row must have runs on the same tasks, the same seeds on each of its tasks,
and its seeds of one task evaluated at the same step: otherwise the command names what is missing
or mixed in one line and exits 2 (never an average over what happens to be there).

``--out DIR`` gets ``aggregates.md`` (printed too), ``aggregates.csv`` (every number: scope, row,
estimator, point, low, high) and ``profiles.png`` (the performance profiles: the fraction of runs
above each normalised score, with pointwise 95% bands). The intervals are stratified-bootstrap
percentile intervals over seeds (``--reps`` replications, generator seeded with ``--seed``).

The numbers and tables are :mod:`bisimkit_runs.aggregate_table`'s; this module draws the profiles and
writes the files.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bisimkit.errors import InputError
from bisimkit.files import atomic_write_text
from bisimkit_runs.aggregate import DEFAULT_CONFIDENCE, DEFAULT_REPS
from bisimkit_runs.aggregate_table import PROFILE_TAUS, Aggregates, aggregate_runs, csv_text, markdown, parse_bounds
from bisimkit_runs.runs import METHOD_LABEL, PathLike


def plot_profiles(agg: Aggregates, out_png: PathLike) -> Path:
    """The performance profiles: the fraction of runs (all tasks) above each normalised score, a line per
    row with its pointwise 95% band."""
    from .learning_curves import METHOD_COLOR  # matplotlib: loaded only to draw (the tables need none)
    from .style import plt, save  # with the curves' colours

    colour = {METHOD_LABEL[m]: c for m, c in METHOD_COLOR.items() if m in METHOD_LABEL}  # as in the curves
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    for label in agg.scores.labels:
        point, low, high = agg.profiles[label]
        (line,) = ax.plot(PROFILE_TAUS, point, label=label, lw=1.6, color=colour.get(label))
        ax.fill_between(PROFILE_TAUS, low, high, color=line.get_color(), alpha=0.2, lw=0)
    ax.set_xlabel("normalised score τ")
    ax.set_ylabel("fraction of runs with score > τ")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")
    ax.set_title(f"Performance profiles ({len(agg.scores.tasks)} task(s), {DEFAULT_CONFIDENCE:.0%} bands)", fontsize=10)
    return save(fig, out_png, tight=True)


def write(agg: Aggregates, out: PathLike, suffix: str = "") -> dict[str, str]:
    """Write ``aggregates{suffix}.md``, ``aggregates{suffix}.csv`` and ``profiles{suffix}.png`` into folder
    ``out``; returns their paths by kind (``markdown``, ``csv``, ``profiles``)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    md, table = out / f"aggregates{suffix}.md", out / f"aggregates{suffix}.csv"
    png = plot_profiles(agg, out / f"profiles{suffix}.png")
    atomic_write_text(table, csv_text(agg))
    atomic_write_text(md, markdown(agg))
    return {"markdown": str(md), "csv": str(table), "profiles": str(png)}


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status (0, or 2 on bad input)."""
    parser = argparse.ArgumentParser(prog="python -m figures.aggregate_table", description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="+", metavar="RUNS_ROOT", help="folder(s) to search for runs, or run folders")
    parser.add_argument("--out", default=None, help="folder for aggregates.md, aggregates.csv and profiles.png")
    parser.add_argument("--step", type=int, default=None, help="use the evaluation at this env step (default: final)")
    parser.add_argument("--reps", type=int, default=DEFAULT_REPS, help="bootstrap replications (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap's generator (default 0)")
    parser.add_argument(
        "--bounds",
        action="append",
        default=[],
        metavar="TASK=LOW:HIGH",
        help="score bounds of a task without stated ones (DCS tasks: 0-1000)",
    )
    args = parser.parse_args(argv)
    try:
        agg = aggregate_runs(args.roots, args.step, args.reps, args.seed, parse_bounds(args.bounds))
        files = write(agg, args.out) if args.out else {}
    except (InputError, OSError) as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    print(markdown(agg), end="")
    if files:
        print(f"wrote {files['markdown']}, {files['csv']}, {files['profiles']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
