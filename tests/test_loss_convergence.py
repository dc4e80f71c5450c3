"""The loss-convergence figure: a panel per loss that ran, the error relative to the largest distance."""

import numpy as np

import figures.loss_convergence as loss_convergence


def test_a_panel_per_loss_with_relative_errors(tmp_path, monkeypatch):
    runs = [
        ("psm", "chain", {"steps": [0, 10], "error": [2.0, 0.01], "scale": 4.0}),
        ("entangled-reward", "random-sparse", {"steps": [0, 10], "error": [1.0, 0.0], "scale": 1.0}),
    ]
    drawn = []
    monkeypatch.setattr(loss_convergence, "save", lambda fig, path, tight=False: drawn.append(fig) or path)
    loss_convergence.plot_loss_curves(tmp_path / "l.png", runs, tolerance=0.02)
    axes = drawn[0].axes
    assert [ax.get_title() for ax in axes] == [
        loss_convergence.TITLES["entangled-reward"],
        loss_convergence.TITLES["psm"],
    ]
    psm = axes[1].get_lines()[0]
    assert np.allclose(psm.get_ydata(), [0.5, 0.0025])
    assert np.allclose(axes[0].get_lines()[0].get_ydata(), [1.0, 1e-6])  # a zero error is drawn at 1e-6
    assert axes[0].get_lines()[-1].get_ydata()[0] == 0.02  # the pass mark


def test_the_figure_is_written_even_without_runs(tmp_path):
    assert loss_convergence.plot_loss_curves(tmp_path / "l.png", []).read_bytes()[:4] == b"\x89PNG"
