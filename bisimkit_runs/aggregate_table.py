"""Aggregates of trained runs: IQM, mean, median, optimality gap with 95% CIs, probability of
improvement, performance profiles (:mod:`bisimkit_runs.aggregate`, after Agarwal et al., NeurIPS 2021),
as markdown and CSV; ``python -m figures.aggregate_table`` writes them with the profiles' figure.

Runs are found and grouped as for the results table (:func:`bisimkit_runs.runs.group_runs`: one row
per method and configuration, the seeds of one configuration together); each seed's score is its
final evaluation return (or the one at exactly ``step`` environment steps), normalised per task
by its stated bounds, ``(return - low) / (high - low)``: 0 to 1000 for every DCS task (an episode
is 1000 control steps with rewards in [0, 1]); a task without stated bounds needs them given
(``TASK=LOW:HIGH``). Every row must have runs on the same tasks, the same seeds on each of its tasks,
and its seeds of one task evaluated at the same step: otherwise :func:`score_matrices` names what is
missing or mixed in one line (never an average over what happens to be there). The intervals are
stratified-bootstrap percentile intervals over seeds (``reps`` replications, generator seeded with
``seed``).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from bisimkit.errors import InputError, check_count

from .aggregate import (
    DEFAULT_CONFIDENCE,
    DEFAULT_REPS,
    ESTIMATOR_LABEL,
    ESTIMATORS,
    Interval,
    improvement_interval,
    interval_estimates,
    normalise,
    profile_interval,
)
from .names import DCS_TASKS
from .runs import TASK_ABBREV, Group, PathLike, evaluation_at, find_runs, group_runs

#: Score bounds of the Distracting Control Suite tasks: 1000 control steps, rewards in [0, 1].
DCS_BOUNDS = (0.0, 1000.0)
#: Points of the performance profile (normalised scores).
PROFILE_TAUS = np.linspace(0.0, 1.0, 101)


def dcs_tasks() -> tuple[str, ...]:
    """Every DCS task (:data:`bisimkit_runs.names.DCS_TASKS`)."""
    return DCS_TASKS


def task_bounds(task: str, bounds: dict[str, tuple[float, float]] | None = None) -> tuple[float, float]:
    """The (low, high) score bounds of ``task``: ``bounds`` first, then 0-1000 for DCS tasks."""
    if bounds and task in bounds:
        return bounds[task]
    if task in dcs_tasks():
        return DCS_BOUNDS
    raise InputError(
        f"no score bounds for task {task!r} (DCS tasks are 0-1000); give them as {task}=LOW:HIGH", param="bounds"
    )


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
    raw: dict[str, np.ndarray]  # label -> (seeds, tasks) returns
    normalised: dict[str, np.ndarray]  # label -> (seeds, tasks) in [0, 1] for in-bounds returns
    seeds: dict[str, tuple[int, ...]]
    steps: dict[str, tuple[int, ...]]  # label -> evaluation step per task
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)


def _seeds(seeds: Iterable[int]) -> str:
    return ", ".join(map(str, sorted(seeds)))


def score_matrices(
    groups: list[Group], step: int | None = None, bounds: dict[str, tuple[float, float]] | None = None
) -> Scores:
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
                problems.append(
                    f"missing: {group.label} on {group.task} seed {run.seed} has no evaluation"
                    + (f" at step {step}" if step is not None else "")
                )
            else:
                found[run.seed] = hit
        at = sorted({s for s, _ in found.values()})
        if len(at) > 1:
            problems.append(
                f"mixed steps: {group.label} on {group.task}: "
                + ", ".join(f"seed {seed} at {s}" for seed, (s, _) in sorted(found.items()))
                + " (pass --step N)"
            )
        cells[(group.label, group.task)] = found
    for label in labels:
        have = [t for t in tasks if (label, t) in cells]
        if len(have) != len(tasks):
            lacking = [t for t in tasks if t not in have]
            problems.append(
                f"mixed tasks: {label} has no run on {', '.join(lacking)} (the run set covers {', '.join(tasks)})"
            )
            continue
        seed_sets = {t: set(cells[(label, t)]) for t in tasks}
        every = set().union(*seed_sets.values())
        for t in tasks:
            if seed_sets[t] != every:
                problems.append(
                    f"missing seeds: {label} on {t} lacks seed(s) {_seeds(every - seed_sets[t])} "
                    f"(its other tasks have {_seeds(every)})"
                )
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
    overall: dict[str, dict[str, Interval]]  # label -> estimator -> interval
    per_task: dict[tuple[str, str], dict[str, Interval]]  # (label, task) -> estimator -> interval
    improvement: dict[tuple[str, str], Interval]  # (x, y) -> P(x > y)
    profiles: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]
    reps: int
    seed: int


def compute(scores: Scores, reps: int = DEFAULT_REPS, seed: int = 0) -> Aggregates:
    """Intervals of every row overall and per task, the probability of improvement of every ordered pair
    of rows, and every row's performance profile; one generator seeded with ``seed`` draws them all."""
    reps = check_count("reps", reps)
    rng = np.random.default_rng(check_count("seed", seed, low=0))
    overall = {label: interval_estimates(scores.normalised[label], reps, rng=rng) for label in scores.labels}
    per_task = {
        (label, t): interval_estimates(scores.normalised[label][:, [j]], reps, rng=rng)
        for label in scores.labels
        for j, t in enumerate(scores.tasks)
    }
    improvement = {
        (x, y): improvement_interval(scores.normalised[x], scores.normalised[y], reps, rng=rng)
        for x in scores.labels
        for y in scores.labels
        if x != y
    }
    profiles = {
        label: profile_interval(scores.normalised[label], PROFILE_TAUS, reps, rng=rng) for label in scores.labels
    }
    return Aggregates(scores, overall, per_task, improvement, profiles, reps, seed)


def _abbrev(task: str) -> str:
    return TASK_ABBREV.get(task, task)


def markdown(agg: Aggregates, decimals: int = 3) -> str:
    """The aggregates as markdown: overall table, per-task table, probability-of-improvement matrix."""
    s = agg.scores
    bounds = sorted({f"{lo:g}–{hi:g}" for lo, hi in s.bounds.values()})
    lines = [
        "### Aggregates over tasks",
        "",
        f"*Normalised score: (return − low) / (high − low) per task (bounds {', '.join(bounds)}); "
        f"point estimate [{DEFAULT_CONFIDENCE:.0%} stratified-bootstrap CI, {agg.reps:,} replications, "
        f"seed {agg.seed}]; "
        f"{len(s.tasks)} task(s): {', '.join(map(_abbrev, s.tasks))}; the optimality gap is "
        f"1 − mean(min(score, 1)), lower is better.*",
        "",
        "| Method | seeds | "
        + " | ".join(ESTIMATOR_LABEL[e] for e in ("iqm", "mean", "median", "optimality_gap"))
        + " |",
        "|:--|--:|" + "--:|" * 4,
    ]
    for label in s.labels:
        row = agg.overall[label]
        lines.append(
            f"| {label} | {len(s.seeds[label])} | "
            + " | ".join(row[e].text(decimals) for e in ("iqm", "mean", "median", "optimality_gap"))
            + " |"
        )
    lines += [
        "",
        "### Per task",
        "",
        "*Over one task the median is the mean; return mean ± std: the raw evaluation return over seeds "
        "(population std).*",
        "",
        "| Task | Method | IQM | Mean | Optimality gap | return mean ± std |",
        "|:--|:--|--:|--:|--:|--:|",
    ]
    for j, task in enumerate(s.tasks):
        for label in s.labels:
            row, raw = agg.per_task[(label, task)], s.raw[label][:, j]
            lines.append(
                f"| {_abbrev(task)} | {label} | {row['iqm'].text(decimals)} | {row['mean'].text(decimals)} | "
                f"{row['optimality_gap'].text(decimals)} | {raw.mean():.1f} ± {raw.std():.1f} |"
            )
    lines += [
        "",
        "### Probability of improvement",
        "",
        f"*Row over column: P(row > column), averaged over tasks [{DEFAULT_CONFIDENCE:.0%} CI].*",
        "",
        "| P(row > column) | " + " | ".join(s.labels) + " |",
        "|:--|" + "--:|" * len(s.labels),
    ]
    for x in s.labels:
        lines.append(
            f"| {x} | " + " | ".join("—" if x == y else agg.improvement[(x, y)].text(2) for y in s.labels) + " |"
        )
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


def aggregate_runs(
    roots: PathLike | Iterable[PathLike],
    step: int | None = None,
    reps: int = DEFAULT_REPS,
    seed: int = 0,
    bounds: dict[str, tuple[float, float]] | None = None,
) -> Aggregates:
    """Find, group and aggregate the runs under ``roots`` (see the module doc)."""
    if step is not None:
        check_count("step", step, low=0)
    check_count("reps", reps)
    check_count("seed", seed, low=0)
    return compute(score_matrices(group_runs(find_runs(roots)), step, bounds), reps, seed)
