"""Pseudometric checks name the worst offender."""

import numpy as np

from bisimkit import check_pseudometric


def test_metric_passes():
    x = np.random.default_rng(0).normal(size=(6, 2))
    d = np.abs(x[:, None] - x[None]).sum(-1)
    report = check_pseudometric(d)
    assert report.holds and report.worst_margin <= 1e-12


def test_each_violation_is_located():
    d = np.array([[0, 1, 5], [1, 0, 1], [5, 1, 0.0]])
    report = check_pseudometric(d)
    assert not report.holds
    assert report.triangle == 3.0 and report.triangle_triple in [(0, 1, 2), (2, 1, 0)]
    assert "triangle inequality fails by 3" in report.describe()
    d2 = np.array([[0.5, 1], [2, 0]])
    r2 = check_pseudometric(d2)
    assert r2.diagonal == 0.5 and r2.diagonal_index == 0
    assert r2.asymmetry == 1.0 and set(r2.asymmetry_pair) == {0, 1}
    r3 = check_pseudometric(np.array([[0, -1.0], [-1.0, 0]]))
    assert r3.min_value == -1.0 and "negative" in r3.describe()
