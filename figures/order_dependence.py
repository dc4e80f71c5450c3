"""How the entangled metrics depend on the numbering of states and actions (claims C4, C11).

    python -m figures.order_dependence --out order_dependence.png [--mdps 10 --seed 0]

Left: per case, the largest d_eps-bar between E_eps-related states, with states in
index order (C4 fails where it is above 0) and with each E_eps class numbered
consecutively (C11: always 0). Right: per case, how far d_eps-bar moves over random
state orders, and d_eps / d_eps-bar over random action orders.
:func:`plot_order_dependence` draws the values it is given
(:func:`validation.figure_data.order_values` computes them).
"""

from __future__ import annotations

import numpy as np

from validation.figure_data import general_fixed_points, order_values

from .style import defaults_of, figure_parser, plt, save


def _strip(
    ax,
    families: list[str],
    values: np.ndarray,
    family: np.ndarray,
    offset: float,
    color: str,
    label: str,
    rng: np.random.Generator,
) -> None:
    for k, fam in enumerate(families):
        v = values[family == fam]
        x = k + offset + rng.uniform(-0.12, 0.12, size=len(v))
        ax.scatter(x, v, s=12, alpha=0.7, color=color, label=label if k == 0 else None, edgecolors="none")


def plot_order_dependence(path, data: dict[str, np.ndarray]):
    """Two strip panels per family (see the module docstring); ``data`` holds parallel arrays
    ``family``, ``index``, ``contiguous``, ``state_spread``, ``action_spread`` (one value per case)."""
    families = sorted(set(data["family"].tolist()))
    rng = np.random.default_rng(0)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), sharex=True)
    panels = [
        (
            axes[0],
            [
                ("index", "states in index order", "tab:red"),
                ("contiguous", "each E_eps class numbered consecutively", "tab:blue"),
            ],
            "max d_eps-bar on E_eps",
            "C4's zero part: index order vs class-contiguous",
        ),
        (
            axes[1],
            [
                ("state_spread", "d_eps-bar over random state orders", "tab:purple"),
                ("action_spread", "d_eps, d_eps-bar over random action orders", "tab:orange"),
            ],
            "spread (max - min per pair)",
            "C11: how much the distances move",
        ),
    ]
    for ax, series, ylabel, title in panels:
        for k, (key, label, color) in enumerate(series):
            _strip(ax, families, data[key], data["family"], -0.18 + 0.36 * k, color, label, rng)
        ax.axhline(0, color="k", lw=0.6)
        top = max(float(np.max(data[key], initial=0.0)) for key, _, _ in series)
        ax.set_ylim(-0.05 * max(top, 1e-3), 1.35 * max(top, 1e-3))  # headroom: the legend covers no point
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.set_xticks(range(len(families)))
        ax.set_xticklabels(families, rotation=25, ha="right", fontsize=8)
        ax.legend(fontsize=8, loc="upper left", framealpha=0.9)
    above = int(np.sum(data["index"] > 1e-8))
    still = int(np.sum(data["contiguous"] > 1e-8))
    fig.suptitle(
        f"{len(data['index'])} cases: d_eps-bar > 0 on E_eps in {above} with index order, "
        f"{still} with classes numbered consecutively",
        fontsize=10,
    )
    return save(fig, path, tight=True)


def main(argv=None) -> None:
    parser = figure_parser(__doc__, "order_dependence.png")
    parser.add_argument("--mdps", type=int, default=defaults_of(general_fixed_points)["mdps"], help="MDPs per family")
    args = parser.parse_args(argv)
    print(plot_order_dependence(args.out, order_values(general_fixed_points(args.mdps, args.seed))))


if __name__ == "__main__":
    main()
