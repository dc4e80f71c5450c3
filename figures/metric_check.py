"""The learned metric against the exact one (``agents.metric_check``): scatter and heatmaps.

    python -m figures.metric_check RUN [RUN ...] --out metric_check.png

Each RUN is a folder written by ``python -m agents.metric_check`` (``learned.npy``,
``exact.npy``, ``summary.json``). :func:`plot_metric_check` draws the arrays it is
given: per run, learned against exact over the state pairs, and the two matrices
side by side.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from bisimkit.errors import InputError
from bisimkit.files import check_output

from .style import plt, save


def plot_metric_check(path, runs: list[dict]):
    """One row per run: scatter of learned vs exact over the pairs s < t (diagonal pairs marked apart), the
    exact matrix and the learned one on the same colour scale. Each run is a dict with ``learned``, ``exact``
    (n x n arrays) and ``title`` (a string); ``summary`` (a dict of the numbers) is written beside it if given."""
    fig, axes = plt.subplots(len(runs), 3, figsize=(11.5, 3.4 * len(runs)), squeeze=False)
    for row, run in zip(axes, runs):
        learned, exact = np.asarray(run["learned"]), np.asarray(run["exact"])
        n = len(exact)
        i, j = np.triu_indices(n, 1)
        ax = row[0]
        ax.scatter(exact[i, j], learned[i, j], s=8, alpha=0.7, label="pairs s < t")
        ax.scatter(np.diag(exact), np.diag(learned), s=8, marker="x", color="tab:red", label="s = t")
        hi = float(max(exact.max(), learned.max(), 1e-12))
        ax.plot([0, hi], [0, hi], "k--", lw=1)
        ax.set_xlabel("exact")
        ax.set_ylabel("learned")
        ax.set_title(run["title"], fontsize=9)
        s = run.get("summary")
        if s:
            ax.text(
                0.03,
                0.97,
                f"mean {100 * s['mean_relative_error']:.1f}%  "
                f"max {100 * s['max_relative_error']:.1f}%\n"
                f"Spearman {s['spearman']:.3f}\ninvariance {s['distractor_invariance']:.3f}",
                transform=ax.transAxes,
                va="top",
                fontsize=8,
            )
        ax.legend(fontsize=7, loc="lower right")
        for ax, values, name in ((row[1], exact, "exact"), (row[2], learned, "learned")):
            im = ax.imshow(values, vmin=0, vmax=hi, cmap="viridis")
            ax.set_title(f"{name} ({n} states)", fontsize=9)
            ax.set_xticks([])
            ax.set_yticks([])
            fig.colorbar(im, ax=ax, fraction=0.046)
    return save(fig, path, tight=True)


def load_run(folder) -> dict:
    """The arrays and summary of a run folder, titled ``scene method (mode)``."""
    folder = Path(folder)
    if not (folder / "summary.json").is_file():
        raise InputError(
            f"{folder} is not a folder written by python -m agents.metric_check (no summary.json)", param="runs"
        )
    summary = json.loads((folder / "summary.json").read_text())
    return {
        "learned": np.load(folder / "learned.npy"),
        "exact": np.load(folder / "exact.npy"),
        "summary": summary,
        "title": f"{summary['scene']} {summary['method']} ({summary['mode']}"
        f"{', no DrQ shifts' if summary.get('config', {}).get('augment') is False else ''})",
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="folders written by python -m agents.metric_check")
    parser.add_argument("--out", default="metric_check.png", help="the figure (default: metric_check.png)")
    args = parser.parse_args(argv)
    try:
        check_output(args.out)
        print(plot_metric_check(args.out, [load_run(r) for r in args.runs]))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
