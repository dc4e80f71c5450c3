"""Shared figure set-up: headless backend, readable defaults, atomic PNG saving."""

from __future__ import annotations

import argparse
import inspect
import os
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from bisimkit.files import atomic_write  # noqa: E402

plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 130, "font.size": 10, "axes.titlesize": 10, "axes.grid": False})


def save(fig, path: str | os.PathLike, tight: bool = False) -> Path:
    """Save ``fig`` as PNG atomically (:func:`bisimkit.files.atomic_write`) and close it;
    ``tight`` lays it out with ``fig.tight_layout()`` first."""
    path = Path(path)
    if tight:
        fig.tight_layout()
    try:
        atomic_write(path, lambda fh: fig.savefig(fh, format="png", bbox_inches="tight"))
    finally:
        plt.close(fig)
    return path


def return_curve_axes(ax, title: str, ylabel: str = "episode return", legend_size: int = 9) -> None:
    """Label an evaluation-return-over-environment-steps axis: axis names, title, light grid, legend."""
    ax.set_xlabel("environment steps")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=legend_size)


def check_axes(
    ax,
    curves,
    random_mean: float,
    random_std: float,
    mark: float | None = None,
    random_label: str = "uniform random policy",
    mark_label: str = "pass mark",
) -> None:
    """The learning check's picture on ``ax``: evaluation curves with a band of one std each, the random
    policy's mean and band of one std, and the pass mark; ``curves``: (label, colour, steps, means,
    stds[, line style]) per run."""
    for label, colour, steps, means, stds, *style in curves:
        steps, means, stds = map(np.asarray, (steps, means, stds))
        ax.plot(steps, means, style[0] if style else "-", marker="o", color=colour, label=label)
        ax.fill_between(steps, means - stds, means + stds, color=colour, alpha=0.2)
    ax.axhline(random_mean, color="grey", ls="--", label=random_label)
    ax.axhspan(random_mean - random_std, random_mean + random_std, color="grey", alpha=0.2)
    if mark is not None:
        ax.axhline(mark, color="tab:red", ls=":", label=mark_label)


def defaults_of(function) -> dict:
    """The default of each of ``function``'s parameters that has one: what a figure's command line
    offers for the data function it calls."""
    return {
        name: p.default
        for name, p in inspect.signature(function).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


def figure_parser(doc: str, out: str, seed: bool = True) -> argparse.ArgumentParser:
    """The command line of a figure module: its docstring as help, ``--out`` (default
    ``out``) and, with ``seed``, ``--seed`` (default 0)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=out, help="the figure file (default %(default)s)")
    if seed:
        parser.add_argument("--seed", type=int, default=0, help="seed of the random MDPs or samples (default 0)")
    return parser
