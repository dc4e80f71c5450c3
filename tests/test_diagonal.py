"""The self-distance figure draws the curves it is given, one line per metric."""

import numpy as np

import figures.diagonal as diagonal
from validation.figure_data import DiagonalCurves


def test_each_metric_is_a_line_over_the_entropy(tmp_path, monkeypatch):
    data = DiagonalCurves(
        np.array([0.0, 1.0]),
        np.array([0.0, 0.7]),
        {"dbc-sampled": np.array([0.0, 0.4]), "pi": np.array([0.0, 0.0])},
        mdps=2,
    )
    drawn = []
    monkeypatch.setattr(diagonal, "save", lambda fig, path, tight=False: drawn.append(fig) or path)
    diagonal.plot_sampled_diagonals(tmp_path / "d.png", data)
    lines = drawn[0].axes[0].get_lines()
    assert [line.get_label() for line in lines] == ["dbc-sampled", "pi"]
    assert np.array_equal(lines[0].get_xdata(), [0.0, 0.7]) and np.array_equal(lines[0].get_ydata(), [0.0, 0.4])
    assert "2 random MDPs" in drawn[0].axes[0].get_title()


def test_the_figure_is_written(tmp_path):
    data = DiagonalCurves(np.array([0.0, 1.0]), np.array([0.0, 0.7]), {"mico": np.array([0.0, 0.2])}, mdps=1)
    assert diagonal.plot_sampled_diagonals(tmp_path / "d.png", data).read_bytes()[:4] == b"\x89PNG"
