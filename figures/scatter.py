"""d_eps-bar against d_eps and d_eps against d_pi over all state pairs of many MDPs.

    python -m figures.scatter --out scatter.png [--mdps 10 --seed 0]

:func:`plot_bound_scatter` draws the values it is given
(:func:`validation.figure_data.scatter_values` computes them).
"""

from __future__ import annotations

import numpy as np

from validation.figure_data import general_fixed_points, scatter_values

from .style import defaults_of, figure_parser, plt, save


def plot_bound_scatter(path, data: dict[str, np.ndarray]):
    """Two panels: d_eps-bar vs d_eps (Thm 4.5 upper bound) and d_eps vs d_pi (Lemma 4.4).

    ``data`` holds parallel arrays ``pi``, ``eps``, ``eps-bar`` (one value per state
    pair) and ``family`` (the family of each pair).
    """
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6))
    families = sorted(set(data["family"].tolist()))
    colors = plt.get_cmap("tab10")
    for ax, (x, y, xl, yl) in zip(axes, [("eps", "eps-bar", "d_eps", "d_eps-bar"), ("pi", "eps", "d_pi", "d_eps")]):
        for k, fam in enumerate(families):
            sel = data["family"] == fam
            ax.scatter(data[x][sel], data[y][sel], s=4, alpha=0.5, color=colors(k % 10), label=fam)
        hi = max(float(np.max(data[x], initial=1)), float(np.max(data[y], initial=1)))
        ax.plot([0, hi], [0, hi], "k--", lw=1, label="y = x")
        below = int(np.sum(data[y] < data[x] - 1e-8))
        ax.set_xlabel(xl)
        ax.set_ylabel(yl)
        ax.set_title(f"{yl} vs {xl}: {len(data[x])} pairs, {below} below the diagonal")
    axes[0].legend(fontsize=7, markerscale=3, loc="upper left")
    return save(fig, path, tight=True)


def main(argv=None) -> None:
    parser = figure_parser(__doc__, "scatter.png")
    parser.add_argument("--mdps", type=int, default=defaults_of(general_fixed_points)["mdps"], help="MDPs per family")
    args = parser.parse_args(argv)
    print(plot_bound_scatter(args.out, scatter_values(general_fixed_points(args.mdps, args.seed))))


if __name__ == "__main__":
    main()
