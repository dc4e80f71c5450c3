"""Comparison plots of several metrics on one MDP, drawn from a :class:`bisimkit.Comparison`.

    python -m bisimkit compare MDP --metrics pi,eps-bar,mico --out DIR      (bisimkit_cli.compare)

From Python::

    from bisimkit import compare, example
    from figures.compare import comparison_figures, write_comparison
    cmp = compare(example("mirrored-rooms-policy"), "pi,eps-bar,mico")   # the arrays (bisimkit core)
    figs = comparison_figures(cmp)          # name -> matplotlib Figure (heatmap-pi, scatter-matrix, ...)
    write_comparison(cmp, "out")            # every figure as PNG and PDF, and summary.csv

The numbers come from :mod:`bisimkit.comparison`; this module only draws. Figures are sized
for a paper column or page (3.5 to 7 inches wide, 8 pt text) with labelled colour scales.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from bisimkit.errors import InputError
from bisimkit.files import atomic_write, atomic_write_text, staged_folder

from .style import plt

#: Text size of the comparison figures (points), readable at paper size.
FONT = {"font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "xtick.labelsize": 7, "ytick.labelsize": 7}
FORMATS = ("png", "pdf")


def _grid(cmp) -> tuple[int, int] | None:
    """The 2-D grid the states lie on (None: draw pairs)."""
    shape = cmp.mdp.state_shape
    return tuple(shape) if shape is not None and len(shape) == 2 else None


def check_figure_options(cmp_metrics: list[str], n_states: int, diff: tuple[str, str] | None, state: int) -> None:
    """Refuse a ``diff`` pair not among the metrics or a reference ``state`` out of range."""
    if diff is not None:
        for m in diff:
            if m not in cmp_metrics:
                raise InputError(f"'{m}' is not among the metrics compared ({', '.join(cmp_metrics)})", param="diff")
        if diff[0] == diff[1]:
            raise InputError(f"needs two different metrics, got {diff[0]} twice", param="diff")
    if not 0 <= state < n_states:
        raise InputError(f"{state} is not a state (0..{n_states - 1})", param="state")


def _matrix_panel(fig, ax, cmp, values: np.ndarray, label: str, state: int, cmap: str, symmetric: bool):
    """``values`` (n x n) as a pairs heatmap, or row ``state`` on the grid when there is one."""
    grid = _grid(cmp)
    if grid is not None:
        img = values[state].reshape(grid)
        r, c = np.unravel_index(state, grid)
        label = label.replace("(s, t)", "(s*, s)")
    else:
        img = values
    lim = float(np.max(np.abs(img))) if img.size else 1.0
    kwargs = {"vmin": -lim, "vmax": lim} if symmetric else {}
    im = ax.imshow(img, cmap=cmap, interpolation="nearest", **kwargs)
    bar = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    bar.set_label(label)
    if grid is not None:
        ax.plot(c, r, marker="*", color="red", markersize=8, markeredgecolor="white", markeredgewidth=0.5)
        ax.set_xlabel("column")
        ax.set_ylabel("row")
    else:
        ax.set_xlabel("state t")
        ax.set_ylabel("state s")
    return im


def heatmap_figure(cmp, metric: str, state: int = 0):
    """One metric: d(s, t) over all pairs, or d(s*, s) on the grid (s* = ``state``, the red star)."""
    with plt.rc_context(FONT):
        fig, ax = plt.subplots(figsize=(3.5, 3.0))
        sol = cmp.solutions[metric]
        _matrix_panel(fig, ax, cmp, sol.distances, f"d_{metric}(s, t)", state, "viridis", False)
        ground = f", ground {sol.ground}" if sol.ground else ""
        where = f"distance from state {state}" if _grid(cmp) else "all pairs"
        ax.set_title(f"{cmp.mdp.label}: {metric}{ground}\n{where}; certified error {sol.certified_error:.1e}")
        fig.tight_layout()
    return fig


def difference_figure(cmp, a: str, b: str, state: int = 0):
    """d_a - d_b (red: a larger), over all pairs or from ``state`` on the grid, on a symmetric scale."""
    with plt.rc_context(FONT):
        fig, ax = plt.subplots(figsize=(3.5, 3.0))
        diff = cmp.solutions[a].distances - cmp.solutions[b].distances
        _matrix_panel(fig, ax, cmp, diff, f"d_{a}(s, t) - d_{b}(s, t)", state, "RdBu_r", True)
        where = f"from state {state}" if _grid(cmp) else "all pairs"
        ax.set_title(
            f"{cmp.mdp.label}: {a} - {b} ({where})\nmax |difference| over all pairs {np.max(np.abs(diff)):.3g}"
        )
        fig.tight_layout()
    return fig


def scatter_matrix_figure(cmp):
    """Every pair of metrics over the state pairs s < t, with the line y = x; histograms on the
    diagonal; Spearman's rank correlation in each panel."""
    metrics = cmp.metrics
    k = len(metrics)
    values = {m: cmp.pair_values(m) for m in metrics}
    rho = cmp.rank_correlation()
    side = min(7.0, 1.9 * k + 0.6)
    with plt.rc_context(FONT):
        fig, axes = plt.subplots(k, k, figsize=(side, side), squeeze=False)
        for i, my in enumerate(metrics):
            for j, mx in enumerate(metrics):
                ax = axes[i, j]
                if i == j:
                    ax.hist(values[mx], bins=30, color="0.45")
                    ax.set_yticks([])
                else:
                    ax.scatter(values[mx], values[my], s=4, alpha=0.5, color="C0", linewidths=0)
                    hi = max(float(np.max(values[mx], initial=0)), float(np.max(values[my], initial=0)), 1e-12)
                    lo = min(float(np.min(values[mx], initial=0)), float(np.min(values[my], initial=0)), 0.0)
                    ax.plot([lo, hi], [lo, hi], "k--", lw=0.8, label="y = x")
                    text = "rho n/a" if np.isnan(rho[i, j]) else f"rho = {rho[i, j]:.3f}"
                    ax.text(
                        0.03,
                        0.95,
                        text,
                        transform=ax.transAxes,
                        va="top",
                        fontsize=7,
                        bbox={"facecolor": "white", "alpha": 0.8, "linewidth": 0, "pad": 1},
                    )
                if i == k - 1:
                    ax.set_xlabel(f"d_{mx}")
                if j == 0:
                    ax.set_ylabel(f"d_{my}" if i != j else f"d_{my}\n(count)")
        if k > 1:
            axes[0, 1].legend(loc="lower right", fontsize=7, frameon=False)
        fig.suptitle(
            f"{cmp.mdp.label}: {len(next(iter(values.values())))} state pairs s < t (rho: Spearman rank correlation)"
        )
        fig.tight_layout()
    return fig


def comparison_figures(cmp, diff: tuple[str, str] | None = None, state: int = 0) -> dict:
    """name -> Figure: ``heatmap-METRIC`` for each metric and, with two or more metrics,
    ``scatter-matrix`` and ``difference-A-minus-B`` (d_A - d_B; ``diff`` = (A, B), default the first two)."""
    check_figure_options(cmp.metrics, cmp.mdp.n_states, diff, state)
    figs = {f"heatmap-{m}": heatmap_figure(cmp, m, state) for m in cmp.metrics}
    if len(cmp.metrics) >= 2:
        a, b = diff if diff is not None else cmp.metrics[:2]
        figs["scatter-matrix"] = scatter_matrix_figure(cmp)
        figs[f"difference-{a}-minus-{b}"] = difference_figure(cmp, a, b, state)
    return figs


def _save(fig, folder: Path, stem: str) -> list[Path]:
    paths = []
    try:
        for fmt in FORMATS:
            path = folder / f"{stem}.{fmt}"
            atomic_write(path, lambda fh, fmt=fmt: fig.savefig(fh, format=fmt, dpi=200, bbox_inches="tight"))
            paths.append(path)
    finally:
        plt.close(fig)
    return paths


def write_comparison(cmp, out: str | os.PathLike, diff: tuple[str, str] | None = None, state: int = 0) -> list[Path]:
    """Write every figure of :func:`comparison_figures` as PNG and PDF, and ``summary.csv``, into
    folder ``out``. They are written to a temporary folder beside it first and moved in at the end,
    so a failure leaves no partial folder. Returns the paths."""
    out = Path(out)
    check_figure_options(cmp.metrics, cmp.mdp.n_states, diff, state)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out} exists and is not a folder", param="out")
    with staged_folder(out, existing="merge") as tmp:
        names = ["summary.csv"]
        atomic_write_text(tmp / "summary.csv", cmp.to_csv())
        for stem, fig in comparison_figures(cmp, diff, state).items():
            names += [p.name for p in _save(fig, tmp, stem)]
    return [out / name for name in names]
