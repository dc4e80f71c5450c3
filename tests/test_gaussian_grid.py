"""The grid-bridge figure and its table render (small settings)."""

from bisimkit.gaussian.discretize import refinement_study
from bisimkit.gaussian.examples import gaussian_example
from figures.gaussian_grid import markdown_table, plot_grid_convergence


def test_grid_figure_and_table(tmp_path):
    rows = refinement_study(gaussian_example("linear-1d"), "eps-bar", [([[-1.5, 1.5]], 6, 3), ([[-2, 2]], 12, 3)])
    studies = [("linear-1d", "eps-bar", "tab:green", rows)]
    assert markdown_table(studies).count("\n") == 3
    path = plot_grid_convergence(tmp_path / "grid.png", studies)
    assert path.read_bytes()[:4] == b"\x89PNG"
