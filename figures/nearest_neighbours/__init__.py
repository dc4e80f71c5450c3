"""The paper's neighbour figure: query observations next to their nearest neighbours from other
episodes under the learned bisimulation distance, each labelled with its distance, episode, step
and background video. This module draws it from the rollouts :mod:`agents.neighbours` makes;
``python -m figures.nearest_neighbours`` (:mod:`figures.nearest_neighbours.__main__`) runs both.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..style import plt, save


def _last_frame(obs: np.ndarray) -> np.ndarray:
    return obs[-3:].transpose(1, 2, 0)


def plot_neighbours(data, matches: list[dict], out_png: str | os.PathLike, title: str, distance_name: str) -> Path:
    """One row per query: its last frame, then its neighbours labelled with distance and video. ``data`` holds the
    observations (``obs``, (N, 3F, H, W) uint8) with the ``episode`` and ``step`` of each and the ``videos`` of each
    episode (an :class:`agents.neighbours.Observations`); each of ``matches`` a ``query`` index with its
    ``neighbours`` and their ``distances``."""
    rows, cols = len(matches), 1 + len(matches[0]["neighbours"])
    fig, axes = plt.subplots(rows, cols, figsize=(2.1 * cols, 2.75 * rows), squeeze=False)
    for row, match in zip(axes, matches):
        q = match["query"]
        cells = [(q, f"query\nep {data.episode[q]} t={data.step[q]}\n{data.videos[data.episode[q]]}")]
        cells += [
            (j, f"d = {dist:.3g}\nep {data.episode[j]} t={data.step[j]}\n{data.videos[data.episode[j]]}")
            for j, dist in zip(match["neighbours"], match["distances"])
        ]
        for ax, (index, label) in zip(row, cells):
            ax.imshow(_last_frame(data.obs[index]), interpolation="nearest")
            ax.set_title(label, fontsize=8)
            ax.set_xticks([])
            ax.set_yticks([])
        for spine in row[0].spines.values():
            spine.set_edgecolor("tab:red")
            spine.set_linewidth(2.5)
    fig.suptitle(f"{title}\nnearest neighbours from other episodes under {distance_name}", fontsize=10)
    fig.tight_layout()
    return save(fig, out_png)
