"""Every metric's fixed point over the mirrored-rooms grid, as distance from one state.

    python -m figures.heatmaps --out heatmaps.png [--state 0]

:func:`plot_metric_heatmaps` draws the distances it is given
(:func:`validation.figure_data.metric_heatmaps` computes them).
"""

from __future__ import annotations

import numpy as np

from bisimkit.examples import grid_cells
from validation.figure_data import metric_heatmaps

from .style import defaults_of, figure_parser, plt, save


def grid_image(values: np.ndarray, layout: list[str]) -> np.ma.MaskedArray:
    """State values placed on the layout's cells; walls masked."""
    img = np.full((len(layout), len(layout[0])), np.nan)
    for v, (r, c) in zip(values, grid_cells(layout)):
        img[r, c] = v
    return np.ma.masked_invalid(img)


def plot_metric_heatmaps(path, data):
    """Heatmaps of ``d(state, .)``, one panel per metric.

    ``data`` has ``layout`` (the grid's rows of characters), ``state``, ``panels``
    ((metric, ground) per panel), ``rows`` (the distances from ``state``, one array per
    panel), ``self_distances``, ``discount`` and ``noise`` (as
    :class:`validation.figure_data.Heatmaps`).
    """
    r0, c0 = grid_cells(data.layout)[data.state]
    cols = 6
    rows = int(np.ceil(len(data.panels) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(2.3 * cols, 3.0 * rows))
    cmap = plt.get_cmap("viridis").with_extremes(bad="#404040")
    for ax, (metric, ground), values, selfd in zip(axes.ravel(), data.panels, data.rows, data.self_distances):
        im = ax.imshow(grid_image(values, data.layout), cmap=cmap)
        ax.plot(c0, r0, marker="*", color="red", markersize=9)
        title = metric + (f" ({ground})" if ground else "")
        if abs(selfd) > 1e-9:
            title += f"\nd(s,s) = {selfd:.2f}"
        ax.set_title(title)
        ax.set_xticks([])
        ax.set_yticks([])
        fig.colorbar(im, ax=ax, fraction=0.05, pad=0.03)
    for ax in axes.ravel()[len(data.panels) :]:
        ax.axis("off")
    fig.suptitle(
        f"Mirrored rooms, fixed policy with {data.noise:.0%} uniform noise, c = {data.discount}: "
        "distance from the red state to every state (walls grey)",
        y=1.0,
    )
    return save(fig, path, tight=True)


def main(argv=None) -> None:
    parser = figure_parser(__doc__, "heatmaps.png", seed=False)
    default = defaults_of(metric_heatmaps)
    parser.add_argument("--state", type=int, default=default["state"], help="reference state (an index of the MDP's)")
    parser.add_argument("--discount", type=float, default=default["discount"], help="discount (default %(default)s)")
    parser.add_argument(
        "--noise", type=float, default=default["noise"], help="weight of the uniform policy in the blend"
    )
    args = parser.parse_args(argv)
    print(plot_metric_heatmaps(args.out, metric_heatmaps(args.state, args.discount, args.noise)))


if __name__ == "__main__":
    main()
