"""Learning curves of the pixel agents: evaluation return against environment steps.

One panel per task (the paper's order: ball_in_cup-catch, cartpole-swingup,
cheetah-run, finger-spin, reacher-easy, walker-walk; only those with runs), one
line per configuration (:func:`bisimkit_runs.runs.group_runs`: the runs of a group
share every learning field of ``config.json`` but the seed), one colour per
method (the same in every panel) and one line style per configuration of a
method, labelled by the fields that tell it apart (``ε-R (env_steps=4000)``; a
method with one configuration keeps its plain label). The line is the mean over
the seeds and the band ± one (population) standard deviation. Seeds are
interpolated onto the union of their evaluation steps, each only inside the
range it was evaluated on (runs evaluated on the same schedule are used as they
are); a curve is never cut to its shortest seed: each step averages the seeds
that reach it, and where that count changes the line is marked ``n=K``. A seed
met twice in one configuration counts once (the run evaluated furthest; the
other is reported).

    python -m figures.learning_curves runs/ --out curves.png [--metric mean_return] [--reference drq]

Next to the PNG, ``curves.runs.txt`` (the PNG's name with ``.runs.txt``) lists
the run folders behind every line, per task with the fields that differ between
its lines and any duplicate left out; the same listing goes to stderr.

Runs are found by :func:`bisimkit_runs.runs.find_runs` (any folder under the root
holding ``eval.csv`` and ``config.json``); several roots or run folders may be
given. ``--metric`` is an ``eval.csv`` column (default ``mean_return``) or a
``train.csv`` one (e.g. ``episode_return``, ``bisim_loss``).

``--reference drq`` draws DrQ's own runs under ours on every panel of the six
PlaNet-benchmark tasks (:mod:`figures.reference_runs`: DrQ's published curves,
10 seeds, no distractions; mean ± std over its seeds, grey, dashed), up to the
panel's last step: a DrQ baseline trained here without distractions should
fall inside that band. Evaluation returns only.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np
from matplotlib.ticker import FuncFormatter

from bisimkit.errors import InputError
from bisimkit.extras import report_missing
from bisimkit.files import atomic_write_text
from bisimkit_runs.runs import (
    METHOD_ORDER,
    TASK_ORDER,
    Group,
    PathLike,
    Run,
    describe_groups,
    duplicate_note,
    find_runs,
    group_runs,
    ordered,
)

from .reference_runs import DRQ_SOURCE, drq_band, drq_runs, has_drq_runs
from .style import plt, save

METHOD_COLOR: dict[str, str] = {
    "sac": "tab:gray",
    "drq": "tab:blue",
    "drq+dbc": "tab:green",
    "eps-r": "tab:red",
    "drq+pse": "tab:purple",
    "eps-pi": "tab:orange",
}
EXTRA_COLORS = ("tab:brown", "tab:pink", "tab:olive", "tab:cyan", "black")
#: Line styles of a method's configurations, in their order (then repeated).
VARIANT_STYLES = ("-", "--", ":", "-.")
METRIC_LABEL = {"mean_return": "evaluation return", "episode_return": "training episode return"}


@dataclass
class Curve:
    """Mean and std over the seeds of one configuration (a :class:`~bisimkit_runs.runs.Group`) on a step grid."""

    task: str
    method: str
    steps: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    seeds: int  # seeds in the group
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))  # seeds averaged per step
    label: str = ""  # the legend's label (the method's, plus what differs)
    group: Group | None = None  # the runs behind the curve


def seed_grid(series: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The union of the seeds' evaluation steps (empty if none)."""
    nonempty = [s for s, _ in series if len(s)]
    return np.unique(np.concatenate(nonempty)) if nonempty else np.zeros(0)


def on_grid(grid: np.ndarray, steps: np.ndarray, values: np.ndarray) -> np.ndarray:
    """One seed's values interpolated onto ``grid`` inside the range it covers, NaN outside."""
    out = np.full(len(grid), np.nan)
    if len(steps):
        inside = (grid >= steps[0]) & (grid <= steps[-1])
        out[inside] = np.interp(grid[inside], steps, values)
    return out


def aggregate(runs: list[Run], metric: str = "mean_return") -> Curve:
    """The :class:`Curve` of the seeds ``runs`` of one configuration: at each step of :func:`seed_grid`,
    mean and std over the seeds evaluated up to (and from) it, and how many they are."""
    series = [run.series(metric) for run in runs]
    grid = seed_grid(series)
    values = np.array([on_grid(grid, s, v) for s, v in series]).reshape(len(runs), len(grid))
    counts = np.isfinite(values).sum(axis=0)
    mean, std = np.full(len(grid), np.nan), np.full(len(grid), np.nan)
    seen = counts > 0
    mean[seen] = np.nanmean(values[:, seen], axis=0)
    std[seen] = np.nanstd(values[:, seen], axis=0)
    return Curve(runs[0].task, runs[0].method, grid, mean, std, len(runs), counts)


def curves(runs: list[Run], metric: str = "mean_return") -> list[Curve]:
    """One :class:`Curve` per configuration (:func:`~bisimkit_runs.runs.group_runs`), in the paper's task then
    method order."""
    out = []
    for group in group_runs(runs):
        curve = aggregate(group.runs, metric)
        curve.label, curve.group = group.label, group
        out.append(curve)
    return out


def method_colors(methods: Iterable[str]) -> dict[str, str]:
    """A colour per method: the paper's six fixed, any other from a spare palette."""
    colors, spare = {}, iter(EXTRA_COLORS * 10)
    for method in ordered(methods, METHOD_ORDER):
        colors[method] = METHOD_COLOR.get(method) or next(spare)
    return colors


def _steps_formatter(value: float, _pos) -> str:
    if abs(value) >= 1e6:
        return f"{value / 1e6:g}M"
    if abs(value) >= 1e3:
        return f"{value / 1e3:g}k"
    return f"{value:g}"


def runs_listing_path(out_png: PathLike) -> Path:
    """Where the listing of a figure's runs goes: ``curves.png`` -> ``curves.runs.txt``."""
    return Path(out_png).with_suffix(".runs.txt")


def _mark_counts(ax, curve: Curve, color: str) -> None:
    """``n=K`` where the number of seeds averaged changes along the curve."""
    changes = np.flatnonzero(np.diff(curve.counts)) + 1
    for i in changes:
        if np.isfinite(curve.mean[i]):
            ax.annotate(
                f"n={curve.counts[i]}",
                (curve.steps[i], curve.mean[i]),
                textcoords="offset points",
                xytext=(3, 4),
                fontsize=8,
                color=color,
            )


REFERENCES = ("drq",)
REFERENCE_LABEL = "DrQ's own runs (10 seeds, no distractions)"


def plot_learning_curves(
    runs_root: PathLike | Iterable[PathLike],
    out_png: PathLike,
    metric: str = "mean_return",
    reference: str | None = None,
) -> Path:
    """Plot the learning curves of every run under ``runs_root`` (a folder or a list of run folders /
    roots) to ``out_png`` and list their runs in :func:`runs_listing_path`; returns the PNG's path (see
    the module doc). ``reference='drq'``: DrQ's published runs under ours where a task has them."""
    if reference is not None and reference not in REFERENCES:
        raise InputError(f"reference: {reference!r} is not one of {', '.join(REFERENCES)}")
    if reference is not None and metric != "mean_return":
        raise InputError(
            f"reference: DrQ's curves are evaluation returns; it goes with metric 'mean_return', not {metric!r}"
        )
    all_curves = curves(find_runs(runs_root), metric)
    tasks = ordered((c.task for c in all_curves), TASK_ORDER)
    colors = method_colors(c.method for c in all_curves)
    method_of = {c.label: c.method for c in all_curves}  # the labels in the curves' order
    styles: dict[str, str] = {}  # label -> line style: a method's configurations in order of appearance
    for label, method in method_of.items():
        styles[label] = VARIANT_STYLES[sum(method_of[seen] == method for seen in styles) % len(VARIANT_STYLES)]
    legend = sorted(styles, key=lambda label: list(colors).index(method_of[label]))  # stable: method order
    cols = min(3, len(tasks))
    rows = -(-len(tasks) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.3 * rows), squeeze=False)
    for ax in axes.flat[len(tasks) :]:
        ax.set_visible(False)
    referenced = []
    for ax, task in zip(axes.flat, tasks):
        if reference == "drq" and has_drq_runs(task):
            last = max(float(c.steps[-1]) for c in all_curves if c.task == task)
            grid, mean, std = drq_band(drq_runs(task), max(last, 1.0))
            ax.plot(grid, mean, color="0.35", lw=1.4, ls=(0, (4, 2)), zorder=1)
            ax.fill_between(grid, mean - std, mean + std, color="0.6", alpha=0.18, lw=0, zorder=0)
            referenced.append(task)
        seeds = set()
        for curve in (c for c in all_curves if c.task == task):
            color, style = colors[curve.method], styles[curve.label]
            seeds.add(curve.seeds)
            if len(curve.steps) == 1:
                ax.errorbar(curve.steps, curve.mean, yerr=curve.std, fmt="o", color=color, capsize=3)
            ax.plot(curve.steps, curve.mean, color=color, lw=1.8, ls=style)
            ax.fill_between(curve.steps, curve.mean - curve.std, curve.mean + curve.std, color=color, alpha=0.2, lw=0)
            _mark_counts(ax, curve, color)
        n = f"{min(seeds)}" if len(seeds) == 1 else f"{min(seeds)}–{max(seeds)}"
        ax.set_title(f"{task}  (seeds per line: {n})", fontsize=11)
        ax.set_xlabel("environment steps", fontsize=10)
        ax.set_ylabel(METRIC_LABEL.get(metric, metric), fontsize=10)
        ax.xaxis.set_major_formatter(FuncFormatter(_steps_formatter))
        ax.grid(True, alpha=0.3)
    handles = [plt.Line2D([], [], color=colors[method_of[label]], lw=2.5, ls=styles[label]) for label in legend]
    if referenced:
        handles.append(plt.Line2D([], [], color="0.35", lw=1.4, ls=(0, (4, 2))))
        legend = [*legend, REFERENCE_LABEL]
    ncol = min(len(handles), 6)
    fig.legend(
        handles,
        legend,
        loc="lower center",
        ncol=ncol,
        frameon=False,
        fontsize=10,
        bbox_to_anchor=(0.5, -0.02 - 0.02 / rows - 0.05 * (-(-len(handles) // ncol) - 1) / rows),
    )
    fig.suptitle(f"{METRIC_LABEL.get(metric, metric).capitalize()} (mean ± std over seeds)", fontsize=12)
    fig.tight_layout(rect=(0, 0.05 / rows, 1, 1))
    groups = [c.group for c in all_curves if c.group is not None]
    listing, note = describe_groups(groups), duplicate_note(groups)
    if reference is not None:
        listing += (
            f"reference: {REFERENCE_LABEL}, {DRQ_SOURCE}, drawn on "
            f"{', '.join(referenced) if referenced else 'none of these tasks (it has the six PlaNet ones)'}\n"
        )
    png = save(fig, out_png)
    atomic_write_text(runs_listing_path(png), listing + (f"note: {note}\n" if note else ""))
    return png


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status (0, or 2 on bad input)."""
    parser = argparse.ArgumentParser(prog="python -m figures.learning_curves", description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="+", metavar="RUNS_ROOT", help="folder(s) to search for runs, or run folders")
    parser.add_argument("--out", default="curves.png", help="PNG to write")
    parser.add_argument("--metric", default="mean_return", help="eval.csv or train.csv column to plot")
    parser.add_argument(
        "--reference",
        default=None,
        metavar="drq",
        help="draw a reference agent's published runs under ours: drq (DrQ's curves, 10 seeds, "
        "no distractions, on the six PlaNet-benchmark tasks)",
    )
    args = parser.parse_args(argv)
    try:
        png = plot_learning_curves(args.roots, args.out, args.metric, args.reference)
        print(png)
        print(
            f"runs per line (also in {runs_listing_path(png)}):\n{runs_listing_path(png).read_text()}",
            end="",
            file=sys.stderr,
        )
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        return report_missing(exc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
