"""Every metric's fixed point over the mirrored-rooms grid, as distance from one state.

    python -m figures.heatmaps --out heatmaps.png [--state 0]
"""

from __future__ import annotations

import argparse

import numpy as np

from bisimkit.examples import MIRRORED_ROOMS_POLICY, grid_cells, mirrored_rooms
from bisimkit.solvers import solve

from .style import plt, save

PANELS = [("bisim", None), ("pi", None), ("psm", None), ("dbc", None), ("mico", None), ("mico-reduced", None),
          ("psm-sampled", None), ("dbc-sampled", None), ("eps", "reward"), ("eps", "policy"),
          ("eps-avg", "reward"), ("eps-bar", "reward")]


def grid_image(values: np.ndarray, layout: list[str]) -> np.ma.MaskedArray:
    """State values placed on the layout's cells; walls masked."""
    img = np.full((len(layout), len(layout[0])), np.nan)
    for v, (r, c) in zip(values, grid_cells(layout)):
        img[r, c] = v
    return np.ma.masked_invalid(img)


def plot_metric_heatmaps(path, state: int = 0, discount: float = 0.9, noise: float = 0.3, tol: float = 1e-8):
    """Heatmaps of d(state, .) for every metric on the mirrored rooms.

    The policy is Castro's fixed policy blended with the uniform one
    (weight ``noise``), so that the sampled and entangled operators differ.
    """
    mdp = mirrored_rooms(policy=True, discount=discount)
    mdp = mdp.with_policy((1 - noise) * mdp.policy + noise / mdp.n_actions)
    layout = MIRRORED_ROOMS_POLICY
    r0, c0 = grid_cells(layout)[state]
    cols = 6
    rows = int(np.ceil(len(PANELS) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(2.3 * cols, 3.0 * rows))
    cmap = plt.get_cmap("viridis").with_extremes(bad="#404040")
    for ax, (metric, ground) in zip(axes.ravel(), PANELS):
        d = solve(mdp, metric, ground=ground, tol=tol).distances
        im = ax.imshow(grid_image(d[state], layout), cmap=cmap)
        ax.plot(c0, r0, marker="*", color="red", markersize=9)
        title = metric + (f" ({ground})" if ground else "")
        if abs(d[state, state]) > 1e-9:
            title += f"\nd(s,s) = {d[state, state]:.2f}"
        ax.set_title(title)
        ax.set_xticks([])
        ax.set_yticks([])
        fig.colorbar(im, ax=ax, fraction=0.05, pad=0.03)
    for ax in axes.ravel()[len(PANELS):]:
        ax.axis("off")
    fig.suptitle(f"Mirrored rooms, fixed policy with {noise:.0%} uniform noise, c = {discount}: "
                 "distance from the red state to every state (walls grey)", y=1.0)
    fig.tight_layout()
    return save(fig, path)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="heatmaps.png")
    parser.add_argument("--state", type=int, default=0, help="reference state (0..30)")
    parser.add_argument("--discount", type=float, default=0.9)
    parser.add_argument("--noise", type=float, default=0.3, help="weight of the uniform policy in the blend")
    args = parser.parse_args(argv)
    print(plot_metric_heatmaps(args.out, args.state, args.discount, args.noise))


if __name__ == "__main__":
    main()
