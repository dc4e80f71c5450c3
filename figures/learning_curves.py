"""Learning curves of the pixel agents: evaluation return against environment steps.

One panel per task (the paper's order: ball_in_cup-catch, cartpole-swingup,
cheetah-run, finger-spin, reacher-easy, walker-walk; only those with runs), one
colour per method (the same in every panel), the line the mean over seeds and
the band ± one (population) standard deviation. Seeds are interpolated onto
the union of their evaluation steps, restricted to the range every seed covers
(runs evaluated on the same schedule are used as they are, no interpolation).

    python -m figures.learning_curves runs/ --out curves.png [--metric mean_return]

Runs are found by :func:`figures.runs.find_runs` (any folder under the root
holding ``eval.csv`` and ``config.json``); several roots or run folders may be
given. ``--metric`` is an ``eval.csv`` column (default ``mean_return``) or a
``train.csv`` one (e.g. ``episode_return``, ``bisim_loss``).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np
from matplotlib.ticker import FuncFormatter

from bisimkit.errors import InputError
from bisimkit.extras import report_missing

from .runs import METHOD_LABEL, METHOD_ORDER, TASK_ORDER, PathLike, Run, find_runs, ordered
from .style import plt, save

METHOD_COLOR: dict[str, str] = {"sac": "tab:gray", "drq": "tab:blue", "drq+dbc": "tab:green", "eps-r": "tab:red",
                                "drq+pse": "tab:purple", "eps-pi": "tab:orange"}
EXTRA_COLORS = ("tab:brown", "tab:pink", "tab:olive", "tab:cyan", "black")
METRIC_LABEL = {"mean_return": "evaluation return", "episode_return": "training episode return"}


@dataclass
class Curve:
    """Mean and std over seeds of one (task, method) on a common step grid."""

    task: str
    method: str
    steps: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    seeds: int


def seed_grid(series: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The union of the seeds' steps within the range that every seed covers (empty if none)."""
    nonempty = [s for s, _ in series if len(s)]
    if len(nonempty) < len(series) or not nonempty:
        return np.zeros(0)
    low, high = max(s[0] for s in nonempty), min(s[-1] for s in nonempty)
    grid = np.unique(np.concatenate(nonempty))
    return grid[(grid >= low) & (grid <= high)]


def aggregate(runs: list[Run], metric: str = "mean_return") -> Curve:
    """The :class:`Curve` of runs of one task and method: each seed interpolated onto :func:`seed_grid`."""
    series = [run.series(metric) for run in runs]
    grid = seed_grid(series)
    values = np.array([np.interp(grid, s, v) for s, v in series]) if len(grid) else np.zeros((len(runs), 0))
    return Curve(runs[0].task, runs[0].method, grid, values.mean(axis=0), values.std(axis=0), len(runs))


def curves(runs: list[Run], metric: str = "mean_return") -> list[Curve]:
    """One :class:`Curve` per (task, method) present, in the paper's task then method order."""
    out = []
    for task in ordered((r.task for r in runs), TASK_ORDER):
        for method in ordered((r.method for r in runs if r.task == task), METHOD_ORDER):
            out.append(aggregate([r for r in runs if r.task == task and r.method == method], metric))
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


def plot_learning_curves(runs_root: PathLike | Iterable[PathLike], out_png: PathLike,
                         metric: str = "mean_return") -> Path:
    """Plot the learning curves of every run under ``runs_root`` (a folder or a list of run folders /
    roots) to ``out_png``; returns the path written (see the module doc)."""
    all_curves = curves(find_runs(runs_root), metric)
    tasks = ordered((c.task for c in all_curves), TASK_ORDER)
    colors = method_colors(c.method for c in all_curves)
    cols = min(3, len(tasks))
    rows = -(-len(tasks) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.3 * rows), squeeze=False)
    for ax in axes.flat[len(tasks):]:
        ax.set_visible(False)
    for ax, task in zip(axes.flat, tasks):
        seeds = set()
        for curve in (c for c in all_curves if c.task == task):
            color = colors[curve.method]
            seeds.add(curve.seeds)
            if len(curve.steps) == 1:
                ax.errorbar(curve.steps, curve.mean, yerr=curve.std, fmt="o", color=color, capsize=3)
            ax.plot(curve.steps, curve.mean, color=color, lw=1.8)
            ax.fill_between(curve.steps, curve.mean - curve.std, curve.mean + curve.std, color=color, alpha=0.2,
                            lw=0)
        n = f"{min(seeds)}" if len(seeds) == 1 else f"{min(seeds)}–{max(seeds)}"
        ax.set_title(f"{task}  (seeds per method: {n})", fontsize=11)
        ax.set_xlabel("environment steps", fontsize=10)
        ax.set_ylabel(METRIC_LABEL.get(metric, metric), fontsize=10)
        ax.xaxis.set_major_formatter(FuncFormatter(_steps_formatter))
        ax.grid(True, alpha=0.3)
    handles = [plt.Line2D([], [], color=colors[m], lw=2.5) for m in colors]
    labels = [METHOD_LABEL.get(m, m) for m in colors]
    fig.legend(handles, labels, loc="lower center", ncol=len(handles), frameon=False, fontsize=10,
               bbox_to_anchor=(0.5, -0.02 - 0.02 / rows))
    fig.suptitle(f"{METRIC_LABEL.get(metric, metric).capitalize()} (mean ± std over seeds)", fontsize=12)
    fig.tight_layout(rect=(0, 0.05 / rows, 1, 1))
    return save(fig, out_png)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status (0, or 2 on bad input)."""
    parser = argparse.ArgumentParser(prog="python -m figures.learning_curves", description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="+", metavar="RUNS_ROOT", help="folder(s) to search for runs, or run folders")
    parser.add_argument("--out", default="curves.png", help="PNG to write")
    parser.add_argument("--metric", default="mean_return", help="eval.csv or train.csv column to plot")
    args = parser.parse_args(argv)
    try:
        print(plot_learning_curves(args.roots, args.out, args.metric))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        return report_missing(exc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
