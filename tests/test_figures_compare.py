"""The figures of a comparison: heatmaps (on the grid for a 2-D state_shape), scatter matrix, difference map."""

import numpy as np
import pytest

from bisimkit import compare, example


def test_compare_python_api_on_a_grid():
    from figures.compare import comparison_figures

    cmp = compare(example("product-grid"), "pi,eps-bar,pi")
    assert cmp.metrics == ["pi", "eps-bar"]  # each metric solved once
    assert set(cmp.distances) == {"pi", "eps-bar"} and cmp.distances["pi"].shape == (16, 16)
    figs = comparison_figures(cmp, diff=("eps-bar", "pi"), state=5)
    assert set(figs) == {"heatmap-pi", "heatmap-eps-bar", "scatter-matrix", "difference-eps-bar-minus-pi"}
    image = figs["heatmap-pi"].axes[0].images[0].get_array()
    assert image.shape == (4, 4)  # distance from state 5 laid out on the 4 x 4 grid
    assert np.allclose(image.ravel(), cmp.distances["pi"][5])
    assert figs["heatmap-pi"].axes[1].get_ylabel() == "d_pi(s*, s)"  # labelled colour scale


def test_bad_figure_options_are_refused_in_one_line():
    from bisimkit.errors import InputError
    from figures.compare import check_figure_options

    check_figure_options(["pi", "mico"], 4, ("pi", "mico"), 3)
    with pytest.raises(InputError, match=r"^diff: 'eps' is not among the metrics compared \(pi, mico\)$"):
        check_figure_options(["pi", "mico"], 4, ("pi", "eps"), 0)
    with pytest.raises(InputError, match=r"^diff: needs two different metrics, got pi twice$"):
        check_figure_options(["pi", "mico"], 4, ("pi", "pi"), 0)
    with pytest.raises(InputError, match=r"^state: 4 is not a state \(0\.\.3\)$"):
        check_figure_options(["pi"], 4, None, 4)
