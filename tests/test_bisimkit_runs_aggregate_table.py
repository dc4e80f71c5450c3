"""The aggregate report of run folders: the score matrices behind it."""

from pathlib import Path

import numpy as np
import pytest
from run_folders import make_runs


@pytest.fixture
def runs(tmp_path) -> Path:
    return make_runs(tmp_path)


def test_score_matrices_normalise_dcs_returns_by_1000(runs):
    from bisimkit_runs.aggregate_table import score_matrices
    from bisimkit_runs.runs import find_runs, group_runs

    scores = score_matrices(group_runs(find_runs(runs)))
    assert scores.labels == ["DrQ", "ε-R"] and scores.tasks == ["cartpole-swingup", "walker-walk"]
    np.testing.assert_allclose(scores.normalised["DrQ"], [[0.3, 0.6], [0.5, 0.7], [0.4, 0.8]])
    assert scores.seeds["ε-R"] == (0, 1, 2) and scores.steps["DrQ"] == (200, 200)
    assert scores.bounds == {"cartpole-swingup": (0.0, 1000.0), "walker-walk": (0.0, 1000.0)}
