"""The slow reference of the tests: the north-west-corner coupling and one sweep of each operator, by hand."""

import numpy as np
import pytest

from bisimkit.mdp import FiniteMDP
from validation.reference import ReferenceModel, nw_corner, reference_fixed_point, reference_operator


def test_the_north_west_corner_coupling_by_hand():
    g = nw_corner([0.5, 0.5], [0.25, 0.75])
    assert g.tolist() == [[0.25, 0.25], [0.0, 0.5]]
    assert nw_corner([1.0], [0.2, 0.8]).tolist() == [[0.2, 0.8]]


def two_state_chain():
    """One action; state 0 stays, state 1 moves to 0; rewards 0 and 1."""
    P = np.array([[[1.0, 0.0]], [[1.0, 0.0]]])
    return FiniteMDP(P, np.array([[0.0], [1.0]]), 0.5, np.ones((2, 1)))


def test_one_sweep_of_each_operator_by_hand():
    mdp = two_state_chain()
    d = np.array([[0.0, 2.0], [2.0, 0.0]])
    # both states move to 0: every next-state term is d(0, 0) = 0, so F(d)(0, 1) = |r(0) - r(1)| = 1
    for metric in ("bisim", "pi", "mico", "eps-bar", "dbc"):
        assert reference_operator(mdp, metric, d)[0, 1] == pytest.approx(1.0), metric
    assert ReferenceModel(mdp).G(0, 0, 1, 0) == 1.0


def test_the_fixed_point_of_a_two_state_chain():
    # d(0, 1) = 1 + c d(0, 0) = 1
    assert reference_fixed_point(two_state_chain(), "pi")[0, 1] == pytest.approx(1.0, abs=1e-11)
    with pytest.raises(ValueError, match="nope"):
        reference_operator(two_state_chain(), "nope", np.zeros((2, 2)))
