"""The pair index of the solvers: pairs of one MDP (with or without the diagonal) and cross pairs between two."""

from __future__ import annotations

import numpy as np
import pytest

from bisimkit import pairs as pairs_module
from bisimkit.pairs import PairSpace


def test_pairs_of_one_mdp_without_the_diagonal():
    pairs = PairSpace(3, diagonal=False)
    assert len(pairs) == 3 and list(zip(pairs.s, pairs.t)) == [(0, 1), (0, 2), (1, 2)]
    assert pairs.index[2, 1] == pairs.index[1, 2] == 2 and pairs.index[0, 0] == -1
    assert pairs.to_matrix(np.array([1.0, 2.0, 3.0])).tolist() == [[0, 1, 2], [1, 0, 3], [2, 3, 0]]


def test_matrix_round_trip_with_the_diagonal():
    pairs = PairSpace(3, diagonal=True)
    assert len(pairs) == 6
    x = np.arange(1.0, 7.0)
    D = pairs.to_matrix(x)
    assert np.array_equal(D, D.T) and np.array_equal(pairs.from_matrix(D), x)
    assert len(PairSpace.diagonal_only(3)) == 3 and PairSpace.diagonal_only(3).to_matrix(np.ones(3)).trace() == 3


def test_cross_pairs_between_two_mdps():
    pairs = PairSpace.cross(2, 3)
    assert len(pairs) == 6 and pairs.shape == (2, 3) and not pairs.symmetric
    assert pairs.index[1, 2] == 1 * 3 + 2
    D = pairs.to_matrix(np.arange(6.0))
    assert D.tolist() == [[0, 1, 2], [3, 4, 5]] and np.array_equal(pairs.from_matrix(D), np.arange(6.0))
    assert np.array_equal(pairs.zeros(), np.zeros(6))


def test_side_maxima_match_the_matrix():
    rng = np.random.default_rng(0)
    for pairs in (PairSpace(4, diagonal=False), PairSpace.cross(3, 4)):
        x = rng.normal(size=len(pairs))
        rows, cols = pairs.side_maxima(x)
        D = np.abs(pairs.to_matrix(x))
        assert np.array_equal(rows, D.max(axis=1)) and np.array_equal(cols, D.max(axis=0))
    assert [m.tolist() for m in PairSpace(1, diagonal=False).side_maxima(np.zeros(0))] == [[0.0], [0.0]]


def test_a_listed_space_finds_its_pairs_in_either_order_and_nothing_else():
    from bisimkit.pairs import PairSpace

    space = PairSpace.listed(5, np.array([0, 1, 3]), np.array([2, 4, 4]))
    assert len(space) == 3
    assert space.lookup(np.array([2, 0, 4, 1, 1, 3]), np.array([0, 2, 3, 2, 1, 4])).tolist() == [0, 0, 2, -1, -1, 2]
    assert space.lookup(np.array([1]), np.array([1]), missing=7).tolist() == [7]
    with pytest.raises(ValueError):
        space.to_matrix(np.zeros(3))
    with pytest.raises(ValueError):
        space.index
    with pytest.raises(ValueError):
        PairSpace.listed(5, np.array([2]), np.array([1]))


def test_the_successor_closure_follows_every_support_cell_stops_at_the_diagonal_and_at_dead_pairs():
    from bisimkit.pairs import successor_closure

    # 0 -> {1, 2}, 1 -> {1}, 2 -> {3}, 3 -> {3}, 4 -> {4}
    ptr = np.array([0, 2, 3, 4, 5, 6])
    cols = np.array([1, 2, 1, 3, 3, 4])
    s, t = successor_closure(ptr, cols, np.array([0]), np.array([4]), 5, 100)
    assert list(zip(s.tolist(), t.tolist())) == [(0, 4), (1, 4), (2, 4), (3, 4)]
    s, t = successor_closure(ptr, cols, np.array([2]), np.array([0]), 5, 100)
    assert list(zip(s.tolist(), t.tolist())) == [(0, 2), (1, 3), (2, 3)]  # (3, 3) is the diagonal
    s, t = successor_closure(ptr, cols, np.array([0]), np.array([4]), 5, 100, live=lambda i, j: i != 2)
    assert list(zip(s.tolist(), t.tolist())) == [(0, 4), (1, 4)]
    assert successor_closure(ptr, cols, np.array([0]), np.array([4]), 5, 2) == (None, None)


def test_queried_pairs_are_checked_entry_by_entry():
    from bisimkit.errors import InputError
    from bisimkit.pairs import check_state_pairs

    assert check_state_pairs([(1, 2)], 3).dtype == np.int64
    with pytest.raises(InputError, match="entry 1: state -1"):
        check_state_pairs([(1, 2), (0, -1)], 3)


@pytest.mark.parametrize("n, diagonal", [(700, False), (600, True), (3, False), (1, True)])
def test_the_row_fill_of_a_whole_triangle_is_the_scattered_matrix(monkeypatch, n, diagonal):
    monkeypatch.setattr(pairs_module, "ROW_FILL_PAIRS", 0)
    space = PairSpace(n, diagonal)
    x = np.random.default_rng(n).random(len(space))
    expected = np.zeros((n, n))
    expected[space.s, space.t] = x
    expected[space.t, space.s] = x
    assert np.array_equal(space.to_matrix(x), expected)
