"""The shared figure set-up: atomic PNG saving, the axes helpers, the figure modules' command line."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from figures.style import check_axes, defaults_of, figure_parser, return_curve_axes, save


def test_save_writes_a_png_atomically_and_closes_the_figure(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    path = save(fig, tmp_path / "a.png", tight=True)
    assert path.read_bytes()[:4] == b"\x89PNG" and not plt.fignum_exists(fig.number)
    assert [p.name for p in tmp_path.iterdir()] == ["a.png"]


def test_a_failed_save_leaves_no_file(tmp_path):
    fig, _ = plt.subplots()

    def broken(*args, **kwargs):
        raise ValueError("cannot draw")

    fig.savefig = broken
    with pytest.raises(ValueError, match="cannot draw"):
        save(fig, tmp_path / "a.png")
    assert list(tmp_path.iterdir()) == [] and not plt.fignum_exists(fig.number)


def test_the_check_axes_draw_the_curves_the_band_and_the_mark():
    fig, ax = plt.subplots()
    check_axes(ax, [("run", "tab:blue", [0, 10], [1.0, 3.0], [0.5, 0.5])], random_mean=0.5, random_std=0.1, mark=2.0)
    return_curve_axes(ax, "title")
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["run", "uniform random policy", "pass mark"]
    assert np.array_equal(ax.get_lines()[0].get_ydata(), [1.0, 3.0]) and ax.get_xlabel() == "environment steps"
    plt.close(fig)


def test_defaults_and_the_parser():
    def data(a, b=2, *, c="x"):
        return a

    assert defaults_of(data) == {"b": 2, "c": "x"}
    args = figure_parser("doc", "out.png").parse_args([])
    assert args.out == "out.png" and args.seed == 0
    assert not hasattr(figure_parser("doc", "o.png", seed=False).parse_args([]), "seed")
