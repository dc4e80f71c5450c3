"""The bound scatter: two panels, points per family, the count of pairs below the diagonal in each title."""

import numpy as np

import figures.scatter as scatter


def test_the_titles_count_the_pairs_below_the_diagonal(tmp_path, monkeypatch):
    data = {
        "pi": np.array([0.0, 1.0, 2.0]),
        "eps": np.array([1.0, 1.0, 3.0]),
        "eps-bar": np.array([2.0, 0.5, 3.0]),
        "family": np.array(["a", "a", "b"], dtype=object),
    }
    drawn = []
    monkeypatch.setattr(scatter, "save", lambda fig, path, tight=False: drawn.append(fig) or path)
    scatter.plot_bound_scatter(tmp_path / "s.png", data)
    left, right = drawn[0].axes
    assert left.get_title() == "d_eps-bar vs d_eps: 3 pairs, 1 below the diagonal"
    assert right.get_title() == "d_eps vs d_pi: 3 pairs, 0 below the diagonal"
    assert len(left.collections) == 2  # one scatter per family


def test_the_figure_is_written(tmp_path):
    data = {k: np.array([0.0, 1.0]) for k in ("pi", "eps", "eps-bar")}
    data["family"] = np.array(["a", "a"], dtype=object)
    assert scatter.plot_bound_scatter(tmp_path / "s.png", data).read_bytes()[:4] == b"\x89PNG"
