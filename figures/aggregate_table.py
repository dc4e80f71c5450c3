"""Aggregates of trained runs: IQM, mean, median, optimality gap with 95% CIs, probability of
improvement, performance profiles (:mod:`figures.aggregate`, after Agarwal et al., NeurIPS 2021).

    python -m figures.aggregate_table runs/ --out aggregates/ [--step N] [--reps 10000] [--bounds TASK=LO:HI]

Runs are found and grouped as for the results table (:func:`figures.runs.group_runs`: one row
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
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np

from agents.dcs import TASKS
from bisimkit.errors import InputError, check_count
from bisimkit.files import atomic_write_text

from .aggregate import (DEFAULT_CONFIDENCE, DEFAULT_REPS, ESTIMATOR_LABEL, ESTIMATORS, Interval, improvement_interval,
                        interval_estimates, normalise, profile_interval)
from .runs import METHOD_LABEL, TASK_ABBREV, Group, PathLike, evaluation_at, find_runs, group_runs

#: Score bounds of the Distracting Control Suite tasks: 1000 control steps, rewards in [0, 1].
DCS_BOUNDS = (0.0, 1000.0)
#: Points of the performance profile (normalised scores).
PROFILE_TAUS = np.linspace(0.0, 1.0, 101)


def dcs_tasks() -> tuple[str, ...]:
    """Every DCS task (``agents.dcs.TASKS``)."""
    return tuple(TASKS)


def task_bounds(task: str, bounds: dict[str, tuple[float, float]] | None = None) -> tuple[float, float]:
    """The (low, high) score bounds of ``task``: ``bounds`` first, then 0-1000 for DCS tasks."""
    if bounds and task in bounds:
        return bounds[task]
    if task in dcs_tasks():
        return DCS_BOUNDS
    raise InputError(f"no score bounds for task {task!r} (DCS tasks are 0-1000); give them as {task}=LOW:HIGH",
                     param="bounds")


def parse_bounds(items: Iterable[str]) -> dict[str, tuple[float, float]]:
    """``TASK=LOW:HIGH`` strings as a dict."""
    out = {}
    for item in items:
        task, _, span = item.partition("=")
        low, _, high = span.partition(":")
        try:
            pair = (float(low), float(high))
        except ValueError:
            raise InputError(f"{item!r} is not TASK=LOW:HIGH", param="bounds") from None
        if not task or not np.isfinite(pair).all() or not pair[1] > pair[0]:
            raise InputError(f"{item!r} is not TASK=LOW:HIGH with LOW < HIGH", param="bounds")
        out[task] = pair
    return out


@dataclass
class Scores:
    """Normalised score matrices of every row (method and configuration), on the same tasks."""

    tasks: list[str]
    labels: list[str]
    raw: dict[str, np.ndarray]          # label -> (seeds, tasks) returns
    normalised: dict[str, np.ndarray]   # label -> (seeds, tasks) in [0, 1] for in-bounds returns
    seeds: dict[str, tuple[int, ...]]
    steps: dict[str, tuple[int, ...]]   # label -> evaluation step per task
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)


def _seeds(seeds: Iterable[int]) -> str:
    return ", ".join(map(str, sorted(seeds)))


def score_matrices(groups: list[Group], step: int | None = None,
                   bounds: dict[str, tuple[float, float]] | None = None) -> Scores:
    """The :class:`Scores` of ``groups``; :class:`InputError` (one line) naming every missing or mixed
    cell: a seed without an evaluation (at ``step``), seeds of one cell evaluated at different steps, a
    row missing a task the others have, a row whose tasks have different seeds."""
    if not groups:
        raise InputError("no runs to aggregate", param="runs")
    tasks = list(dict.fromkeys(g.task for g in groups))
    labels = list(dict.fromkeys(g.label for g in groups))
    problems: list[str] = []
    cells: dict[tuple[str, str], dict[int, tuple[int, float]]] = {}
    for group in groups:
        found = {}
        for run in group.runs:
            hit = evaluation_at(run, step)
            if hit is None:
                problems.append(f"missing: {group.label} on {group.task} seed {run.seed} has no evaluation"
                                + (f" at step {step}" if step is not None else ""))
            else:
                found[run.seed] = hit
        at = sorted({s for s, _ in found.values()})
        if len(at) > 1:
            problems.append(f"mixed steps: {group.label} on {group.task}: " + ", ".join(
                f"seed {seed} at {s}" for seed, (s, _) in sorted(found.items())) + " (pass --step N)")
        cells[(group.label, group.task)] = found
    for label in labels:
        have = [t for t in tasks if (label, t) in cells]
        if len(have) != len(tasks):
            lacking = [t for t in tasks if t not in have]
            problems.append(f"mixed tasks: {label} has no run on {', '.join(lacking)} "
                            f"(the run set covers {', '.join(tasks)})")
            continue
        seed_sets = {t: set(cells[(label, t)]) for t in tasks}
        every = set().union(*seed_sets.values())
        for t in tasks:
            if seed_sets[t] != every:
                problems.append(f"missing seeds: {label} on {t} lacks seed(s) {_seeds(every - seed_sets[t])} "
                                f"(its other tasks have {_seeds(every)})")
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise InputError("; ".join(problems[:3]) + more, param="runs")
    stated = {t: task_bounds(t, bounds) for t in tasks}
    raw, norm, seeds, steps = {}, {}, {}, {}
    for label in labels:
        order = sorted(cells[(label, tasks[0])])
        raw[label] = np.array([[cells[(label, t)][s][1] for t in tasks] for s in order])
        norm[label] = np.stack([normalise(raw[label][:, j], *stated[t]) for j, t in enumerate(tasks)], axis=1)
        seeds[label] = tuple(order)
        steps[label] = tuple(next(iter(cells[(label, t)].values()))[0] for t in tasks)
    return Scores(tasks, labels, raw, norm, seeds, steps, stated)


@dataclass
class Aggregates:
    """Every aggregate of a :class:`Scores`."""

    scores: Scores
    overall: dict[str, dict[str, Interval]]                  # label -> estimator -> interval
    per_task: dict[tuple[str, str], dict[str, Interval]]     # (label, task) -> estimator -> interval
    improvement: dict[tuple[str, str], Interval]             # (x, y) -> P(x > y)
    profiles: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]
    reps: int
    seed: int


def compute(scores: Scores, reps: int = DEFAULT_REPS, seed: int = 0) -> Aggregates:
    """Intervals of every row overall and per task, the probability of improvement of every ordered pair
    of rows, and every row's performance profile; one generator seeded with ``seed`` draws them all."""
    reps = check_count("reps", reps)
    rng = np.random.default_rng(check_count("seed", seed, low=0))
    overall = {label: interval_estimates(scores.normalised[label], reps, rng=rng) for label in scores.labels}
    per_task = {(label, t): interval_estimates(scores.normalised[label][:, [j]], reps, rng=rng)
                for label in scores.labels for j, t in enumerate(scores.tasks)}
    improvement = {(x, y): improvement_interval(scores.normalised[x], scores.normalised[y], reps, rng=rng)
                   for x in scores.labels for y in scores.labels if x != y}
    profiles = {label: profile_interval(scores.normalised[label], PROFILE_TAUS, reps, rng=rng)
                for label in scores.labels}
    return Aggregates(scores, overall, per_task, improvement, profiles, reps, seed)


def _abbrev(task: str) -> str:
    return TASK_ABBREV.get(task, task)


def markdown(agg: Aggregates, decimals: int = 3) -> str:
    """The aggregates as markdown: overall table, per-task table, probability-of-improvement matrix."""
    s = agg.scores
    bounds = sorted({f"{lo:g}–{hi:g}" for lo, hi in s.bounds.values()})
    lines = ["### Aggregates over tasks", "",
             f"*Normalised score: (return − low) / (high − low) per task (bounds {', '.join(bounds)}); "
             f"point estimate [{DEFAULT_CONFIDENCE:.0%} stratified-bootstrap CI, {agg.reps:,} replications, "
             f"seed {agg.seed}]; "
             f"{len(s.tasks)} task(s): {', '.join(map(_abbrev, s.tasks))}; the optimality gap is "
             f"1 − mean(min(score, 1)), lower is better.*", "",
             "| Method | seeds | " + " | ".join(ESTIMATOR_LABEL[e] for e in ("iqm", "mean", "median", "optimality_gap"))
             + " |", "|:--|--:|" + "--:|" * 4]
    for label in s.labels:
        row = agg.overall[label]
        lines.append(f"| {label} | {len(s.seeds[label])} | " + " | ".join(
            row[e].text(decimals) for e in ("iqm", "mean", "median", "optimality_gap")) + " |")
    lines += ["", "### Per task", "",
              "*Over one task the median is the mean; return mean ± std: the raw evaluation return over seeds "
              "(population std).*", "",
              "| Task | Method | IQM | Mean | Optimality gap | return mean ± std |", "|:--|:--|--:|--:|--:|--:|"]
    for j, task in enumerate(s.tasks):
        for label in s.labels:
            row, raw = agg.per_task[(label, task)], s.raw[label][:, j]
            lines.append(f"| {_abbrev(task)} | {label} | {row['iqm'].text(decimals)} | {row['mean'].text(decimals)} | "
                         f"{row['optimality_gap'].text(decimals)} | {raw.mean():.1f} ± {raw.std():.1f} |")
    lines += ["", "### Probability of improvement", "",
              f"*Row over column: P(row > column), averaged over tasks [{DEFAULT_CONFIDENCE:.0%} CI].*", "",
              "| P(row > column) | " + " | ".join(s.labels) + " |", "|:--|" + "--:|" * len(s.labels)]
    for x in s.labels:
        lines.append(f"| {x} | " + " | ".join("—" if x == y else agg.improvement[(x, y)].text(2)
                                              for y in s.labels) + " |")
    return "\n".join(lines) + "\n"


def csv_text(agg: Aggregates) -> str:
    """Every number: ``scope,row,other,estimator,point,low,high`` (scope ``all``, a task, or ``improvement``)."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["scope", "row", "other", "estimator", "point", "low", "high"])
    for label, row in agg.overall.items():
        for e in ESTIMATORS:
            writer.writerow(["all", label, "", e, row[e].point, row[e].low, row[e].high])
    for (label, task), row in agg.per_task.items():
        for e in ESTIMATORS:
            writer.writerow([task, label, "", e, row[e].point, row[e].low, row[e].high])
    for (x, y), iv in agg.improvement.items():
        writer.writerow(["improvement", x, y, "probability_of_improvement", iv.point, iv.low, iv.high])
    return buf.getvalue()


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
    ax.set_title(f"Performance profiles ({len(agg.scores.tasks)} task(s), {DEFAULT_CONFIDENCE:.0%} bands)",
                 fontsize=10)
    return save(fig, out_png, tight=True)


def aggregate_runs(roots: PathLike | Iterable[PathLike], step: int | None = None, reps: int = DEFAULT_REPS,
                   seed: int = 0, bounds: dict[str, tuple[float, float]] | None = None) -> Aggregates:
    """Find, group and aggregate the runs under ``roots`` (see the module doc)."""
    if step is not None:
        check_count("step", step, low=0)
    check_count("reps", reps)
    check_count("seed", seed, low=0)
    return compute(score_matrices(group_runs(find_runs(roots)), step, bounds), reps, seed)


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
    parser.add_argument("--bounds", action="append", default=[], metavar="TASK=LOW:HIGH",
                        help="score bounds of a task without stated ones (DCS tasks: 0-1000)")
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
