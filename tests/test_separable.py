"""Separability of a distance on a grid: the axis slices, the lower bound from mixed differences, the Monge
and additivity measures of the coordinate terms."""

from __future__ import annotations

import numpy as np
import pytest

from bisimkit import example
from bisimkit.errors import InputError
from bisimkit.separable import axis_additivity, monge_violation, separability, separable_lower_bound, separable_parts


def _grid_distance(f_row: np.ndarray, f_col: np.ndarray) -> np.ndarray:
    h, w = len(f_row), len(f_col)
    rows, cols = np.unravel_index(np.arange(h * w), (h, w))
    return f_row[np.ix_(rows, rows)] + f_col[np.ix_(cols, cols)]


def test_a_sum_of_coordinate_terms_is_separable():
    f_row = np.abs(np.subtract.outer([0.0, 1.0, 3.0], [0.0, 1.0, 3.0]))
    f_col = np.abs(np.subtract.outer([0.0, 2.0], [0.0, 2.0]))
    d = _grid_distance(f_row, f_col)
    parts, error = separable_parts(d, (3, 2))
    assert error == 0 and np.array_equal(parts[0], f_row) and np.array_equal(parts[1], f_col)
    assert separable_lower_bound(d, (3, 2)) == 0


def test_a_mixed_difference_bounds_every_separable_fit():
    d = np.zeros((4, 4))  # 2 x 2 grid; only the pair ((0,0),(1,1)) is at distance 4
    d[0, 3] = d[3, 0] = 4.0
    # any separable f has f(0,3) + f(3,0) = f(1,2) + f(2,1); here d's sides differ by 8, so max |d - f| >= 2
    assert separable_lower_bound(d, (2, 2)) == pytest.approx(2.0)
    assert separable_parts(d, (2, 2))[1] == 4.0


def test_monge_and_additivity_by_hand():
    f = np.abs(np.subtract.outer([0.0, 1.0, 3.0], [0.0, 1.0, 3.0]))
    assert axis_additivity(f) == 0 and monge_violation(f) <= 0
    g = np.array([[0.0, 2.0], [2.0, 0.0]])
    assert monge_violation(g) == -4.0  # 0 + 0 - 2 - 2
    h = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    assert axis_additivity(h) == 1.0  # f(1, 2) = 1, |phi(2) - phi(1)| = 0
    assert monge_violation(np.zeros((1, 3))) == 0.0


def test_an_mdp_without_coordinates_is_refused():
    with pytest.raises(InputError, match=r"^mdp: the MDP has no state_shape"):
        separability(example("chain"))


def test_the_separable_lower_bound_is_the_best_fit_on_product_grid():
    """The info line's "at least" bound is below the best separable fit (a linear program), here equal to it."""
    from scipy.optimize import linprog

    from bisimkit import solve
    from bisimkit.separable import separable_lower_bound, separable_parts

    mdp = example("product-grid")
    d = solve(mdp, "eps-bar", ground="reward").distances
    h, w = mdp.state_shape
    rows, cols = np.unravel_index(np.arange(h * w), (h, w))
    # variables: f_row (h x h), f_col (w x w), eps; |f_row + f_col - d| <= eps on every pair
    A = np.zeros((h * w, h * w, h * h + w * w + 1))
    s, t = np.meshgrid(np.arange(h * w), np.arange(h * w), indexing="ij")
    A[s, t, rows[s] * h + rows[t]] = 1
    A[s, t, h * h + cols[s] * w + cols[t]] = 1
    A = A.reshape(-1, A.shape[-1])
    A_ub = np.vstack([A, -A])
    A_ub[:, -1] = -1
    best = linprog(np.eye(A.shape[1])[-1], A_ub=A_ub, b_ub=np.r_[d.ravel(), -d.ravel()], bounds=(None, None)).fun
    lower = separable_lower_bound(d, (h, w))
    assert lower <= best + 1e-9 and lower == pytest.approx(best, rel=1e-6)
    assert best <= separable_parts(d, (h, w))[1]
