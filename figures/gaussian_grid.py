"""The grid bridge converging: finite fixed points on discretised linear-Gaussian MDPs
against the exact continuous values at the grid points, as the grid refines.

In 1-D, box and resolution grow together (the error has a clipping part from the
box and a snapping part from the cells); in 2-D the box is fixed at [-2, 2]^2 and
only the cells shrink (2-D grids are costly: the Rosenblatt couplings have up to
(2K - 1)^2 cells per pair). For each grid: the largest actual error over all
pairs of cell centres (solid) and the a-posteriori bound ``|F(D) - D| / (1 - c)``
with D the exact values (dashed). Prints the table as Markdown.

    python -m figures.gaussian_grid --out gaussian_grid.png
"""

from __future__ import annotations

import argparse

import numpy as np

from bisimkit.gaussian.discretize import refinement_study
from bisimkit.gaussian.examples import gaussian_example

from .style import plt, save

GRIDS_1D = [([[-1.5, 1.5]], 6, 3), ([[-2.0, 2.0]], 12, 3), ([[-2.5, 2.5]], 20, 5), ([[-3.0, 3.0]], 36, 5),
            ([[-3.5, 3.5]], 56, 7)]
GRIDS_2D = [([[-2.0, 2.0]] * 2, 4, 3), ([[-2.0, 2.0]] * 2, 6, 3), ([[-2.0, 2.0]] * 2, 8, 3),
            ([[-2.0, 2.0]] * 2, 12, 3)]
STUDIES = [("linear-1d", "pi", GRIDS_1D, "tab:blue"), ("linear-1d", "eps-bar", GRIDS_1D, "tab:green"),
           ("quadratic-1d", "eps-bar", GRIDS_1D, "tab:orange"),
           ("contracting-2d", "pi", GRIDS_2D[:3], "tab:red"), ("contracting-2d", "eps-bar", GRIDS_2D, "tab:purple")]


def run_studies() -> list[tuple[str, str, str, list[dict]]]:
    """Every refinement study of the figure."""
    return [(name, metric, color, refinement_study(gaussian_example(name), metric, grids))
            for name, metric, grids, color in STUDIES]


def markdown_table(studies) -> str:
    """The studies as one Markdown table."""
    lines = ["| model | metric | box | cells | nodes | outside mass | max error | bound | solve (s) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, metric, _, rows in studies:
        for r in rows:
            box = "[{:g}, {:g}]".format(*r["box"][0]) + ("²" if len(r["box"]) == 2 else "")
            lines.append(f"| {name} | {metric} | {box} | {'x'.join(map(str, r['cells']))} | {r['nodes']} | "
                         f"{r['outside_mass']:.1e} | {r['max_error']:.2e} | {r['bound']:.2e} | {r['seconds']:.2f} |")
    return "\n".join(lines)


def plot_grid_convergence(path, studies=None):
    """Errors and bounds against the cell width; returns the written path."""
    studies = studies if studies is not None else run_studies()
    fig, ax = plt.subplots(figsize=(7, 4.8))
    for name, metric, color, rows in studies:
        h = np.array([r["width"] for r in rows])
        style = "x:" if (name, metric) == ("linear-1d", "pi") else "o-"  # coincides with linear-1d eps-bar
        ax.loglog(h, [r["max_error"] for r in rows], style, color=color, ms=7 if style == "x:" else 5,
                  label=f"{name}, {metric}: actual error")
        ax.loglog(h, [r["bound"] for r in rows], "s--", color=color, alpha=0.6, ms=4, label="  a-posteriori bound")
    ax.invert_xaxis()
    ax.set_xlabel("cell width (right = finer; 1-D: the box grows too)")
    ax.set_ylabel("max over grid pairs |d_grid - d_exact|")
    ax.set_title("Finite solvers on discretised linear-Gaussian MDPs approach the exact values")
    ax.legend(fontsize=7.5, ncol=2)
    fig.tight_layout()
    return save(fig, path)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="gaussian_grid.png")
    args = parser.parse_args(argv)
    studies = run_studies()
    print(markdown_table(studies))
    print(plot_grid_convergence(args.out, studies))


if __name__ == "__main__":
    main()
