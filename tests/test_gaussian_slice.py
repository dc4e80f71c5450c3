"""The Gaussian slice figure renders (small settings)."""

from figures.gaussian_slice import plot_gaussian_slice
from validation.figure_data import gaussian_slice_data


def test_slice_figure(tmp_path):
    path = plot_gaussian_slice(tmp_path / "slice.png", gaussian_slice_data(samples=50, points=11, mc_points=5))
    assert path.read_bytes()[:4] == b"\x89PNG" and path.stat().st_size > 20_000
