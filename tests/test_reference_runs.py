"""DrQ's own evaluation curves: read from the stored CSV, interpolated at a step and on a grid."""

import numpy as np
import pytest

from bisimkit.errors import InputError
from figures.reference_runs import drq_at, drq_band, drq_env, drq_grid, drq_runs, has_drq_runs

RUNS = {0: (np.array([0, 100, 200]), np.array([0.0, 10.0, 30.0])), 1: (np.array([0, 100]), np.array([0.0, 20.0]))}


def test_task_names_and_coverage():
    assert drq_env("cartpole-swingup") == "cartpole_swingup"
    assert has_drq_runs("cartpole-swingup") and not has_drq_runs("carla-highway")
    with pytest.raises(InputError, match=r"^task: 'carla-highway' has no DrQ curves in "):
        drq_runs("carla-highway")
    runs = drq_runs("walker-walk")
    assert all(np.all(np.diff(steps) > 0) for steps, _ in runs.values())


def test_interpolation_by_hand():
    assert drq_at(RUNS, 50).tolist() == [5.0, 10.0]
    assert drq_at(RUNS, 150).tolist() == [20.0]  # the second run does not reach 150
    grid, values = drq_grid(RUNS, 1000, points=3)  # cut where the shortest run ends
    assert grid.tolist() == [0.0, 50.0, 100.0] and values.tolist() == [[0.0, 5.0, 10.0], [0.0, 10.0, 20.0]]
    _, mean, std = drq_band(RUNS, 100, points=3)
    assert mean.tolist() == [0.0, 7.5, 15.0] and std.tolist() == [0.0, 2.5, 5.0]
