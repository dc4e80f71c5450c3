"""The grid bridge converging: finite fixed points on discretised linear-Gaussian MDPs
against the exact continuous values at the grid points, as the grid refines.

In 1-D, box and resolution grow together (the error has a clipping part from the
box and a snapping part from the cells); in 2-D the box is fixed at [-2, 2]^2 and
only the cells shrink (2-D grids are costly: the Rosenblatt couplings have up to
(2K - 1)^2 cells per pair). For each grid: the largest actual error over all
pairs of cell centres (solid) and the a-posteriori bound ``|F(D) - D| / (1 - c)``
with D the exact values (dashed). Prints the table as Markdown.

    python -m figures.gaussian_grid --out gaussian_grid.png

The studies come from :func:`validation.figure_data.grid_studies`.
"""

from __future__ import annotations

import numpy as np

from validation.figure_data import grid_studies

from .style import figure_parser, plt, save


def markdown_table(studies) -> str:
    """The studies as one Markdown table."""
    lines = [
        "| model | metric | box | cells | nodes | outside mass | max error | bound | solve (s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, metric, _, rows in studies:
        for r in rows:
            box = "[{:g}, {:g}]".format(*r["box"][0]) + ("²" if len(r["box"]) == 2 else "")
            lines.append(
                f"| {name} | {metric} | {box} | {'x'.join(map(str, r['cells']))} | {r['nodes']} | "
                f"{r['outside_mass']:.1e} | {r['max_error']:.2e} | {r['bound']:.2e} | {r['seconds']:.2f} |"
            )
    return "\n".join(lines)


def plot_grid_convergence(path, studies):
    """Errors and bounds against the cell width, for ``studies`` as (model, metric, colour,
    rows of :func:`bisimkit.gaussian.discretize.refinement_study`); returns the written path."""
    fig, ax = plt.subplots(figsize=(7, 4.8))
    for name, metric, color, rows in studies:
        h = np.array([r["width"] for r in rows])
        style = "x:" if (name, metric) == ("linear-1d", "pi") else "o-"  # coincides with linear-1d eps-bar
        ax.loglog(
            h,
            [r["max_error"] for r in rows],
            style,
            color=color,
            ms=7 if style == "x:" else 5,
            label=f"{name}, {metric}: actual error",
        )
        ax.loglog(h, [r["bound"] for r in rows], "s--", color=color, alpha=0.6, ms=4, label="  a-posteriori bound")
    ax.invert_xaxis()
    ax.set_xlabel("cell width (right = finer; 1-D: the box grows too)")
    ax.set_ylabel("max over grid pairs |d_grid - d_exact|")
    ax.set_title("Finite solvers on discretised linear-Gaussian MDPs approach the exact values")
    ax.legend(fontsize=7.5, ncol=2)
    return save(fig, path, tight=True)


def main(argv=None) -> None:
    parser = figure_parser(__doc__, "gaussian_grid.png", seed=False)
    args = parser.parse_args(argv)
    studies = grid_studies()
    print(markdown_table(studies))
    print(plot_grid_convergence(args.out, studies))


if __name__ == "__main__":
    main()
