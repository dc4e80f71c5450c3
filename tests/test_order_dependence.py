"""The order-dependence figure: the zero part in index and class-contiguous order, and the spreads."""

import numpy as np

import figures.order_dependence as order_dependence


def test_the_title_counts_the_cases_with_a_positive_zero_part(tmp_path, monkeypatch):
    data = {
        "family": np.array(["a", "a", "b"], dtype=object),
        "index": np.array([0.0, 2.0, 1.0]),
        "contiguous": np.array([0.0, 0.0, 0.5]),
        "state_spread": np.array([0.0, 1.0, 0.0]),
        "action_spread": np.zeros(3),
    }
    drawn = []
    monkeypatch.setattr(order_dependence, "save", lambda fig, path, tight=False: drawn.append(fig) or path)
    order_dependence.plot_order_dependence(tmp_path / "o.png", data)
    assert drawn[0]._suptitle.get_text() == (
        "3 cases: d_eps-bar > 0 on E_eps in 2 with index order, 1 with classes numbered consecutively"
    )
    left = drawn[0].axes[0]
    assert [t.get_text() for t in left.get_xticklabels()] == ["a", "b"]
    assert sorted(np.concatenate([c.get_offsets()[:, 1] for c in left.collections[:2]])) == [0.0, 1.0, 2.0]


def test_the_figure_is_written(tmp_path):
    data = {k: np.zeros(2) for k in ("index", "contiguous", "state_spread", "action_spread")}
    data["family"] = np.array(["a", "b"], dtype=object)
    assert order_dependence.plot_order_dependence(tmp_path / "o.png", data).read_bytes()[:4] == b"\x89PNG"
