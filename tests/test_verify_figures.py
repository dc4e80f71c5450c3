"""The figures of ``bisimkit verify``, drawn from a quick run's data."""

import numpy as np
import pytest

from bisimkit import example as load_example
from validation import verify as V


def test_figures_are_written(tmp_path):
    from figures.verify_figures import draw_verify_figures
    from validation.figure_data import verify_figure_data

    rng = np.random.default_rng(0)
    fps = [("random-dense", V.FixedPoints(V.FAMILIES["random-dense"].make(rng))) for _ in range(2)]
    fps.append(("examples", V.FixedPoints(V.Case(load_example("coupling-order")))))
    data = verify_figure_data(fps, quick=True, loss_runs=[], loss_tolerance=0.01, order=True)
    # coupling-order: d_eps-bar(0, 5) = 9 on E_eps in index order, 0 class-contiguous, spread 9
    last = {k: v[-1] for k, v in data.order.items()}
    assert last["index"] == pytest.approx(9) and last["contiguous"] == 0 and last["state_spread"] == pytest.approx(9)
    paths = draw_verify_figures(tmp_path, data)
    assert [p.name for p in paths] == ["heatmaps.png", "scatter.png", "order_dependence.png", "diagonal.png"]
    for path in paths:
        assert path.read_bytes()[:4] == b"\x89PNG" and path.stat().st_size > 10_000
    assert not list(tmp_path.glob(".*"))  # no temporary files left behind
