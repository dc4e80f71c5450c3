"""The heatmaps figure: state values placed on the layout's cells, walls masked; one panel per metric."""

import numpy as np

import figures.heatmaps as heatmaps
from validation.figure_data import Heatmaps

LAYOUT = ["..", "*."]  # "*" is a wall


def test_values_land_on_the_open_cells():
    image = heatmaps.grid_image(np.array([1.0, 2.0, 3.0]), LAYOUT)
    assert image.mask.tolist() == [[False, False], [True, False]]
    assert image[0, 0] == 1.0 and image[0, 1] == 2.0 and image[1, 1] == 3.0


def test_one_panel_per_metric_with_its_self_distance(tmp_path, monkeypatch):
    data = Heatmaps(
        LAYOUT, 0, [("pi", None), ("eps-bar", "reward")], [np.array([0.0, 1.0, 2.0])] * 2, [0.0, 0.5], 0.9, 0.3
    )
    drawn = []
    monkeypatch.setattr(heatmaps, "save", lambda fig, path, tight=False: drawn.append(fig) or path)
    heatmaps.plot_metric_heatmaps(tmp_path / "h.png", data)
    titles = [ax.get_title() for ax in drawn[0].axes if ax.get_title()]
    assert titles == ["pi", "eps-bar (reward)\nd(s,s) = 0.50"]
    assert np.array_equal(drawn[0].axes[0].images[0].get_array()[0], [0.0, 1.0])
