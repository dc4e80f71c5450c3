"""Couplings: entangled (north-west corner, Rosenblatt), independent, optimal."""

import numpy as np
import ot
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st

from bisimkit.couplings import entangled_cells, entangled_coupling, independent_coupling, optimal_coupling
from validation.reference import nw_corner


def test_hand_computed_north_west_corner():
    g = entangled_coupling([0.5, 0.5], [0.25, 0.75])
    np.testing.assert_allclose(g, [[0.25, 0.25], [0.0, 0.5]])
    g = entangled_coupling([0.2, 0.0, 0.8], [0.6, 0.4, 0.0])
    np.testing.assert_allclose(g, [[0.2, 0, 0], [0, 0, 0], [0.4, 0.4, 0]])


def test_identical_laws_couple_on_the_diagonal():
    p = np.array([0.1, 0.0, 0.3, 0.6])
    np.testing.assert_allclose(entangled_coupling(p, p), np.diag(p))


histogram = st.integers(2, 7).flatmap(
    lambda n: st.lists(st.floats(0, 1), min_size=n, max_size=n).filter(lambda v: sum(v) > 0.1)
)


@given(histogram, histogram)
def test_entangled_is_a_coupling_with_few_cells(p, q):
    n = max(len(p), len(q))
    p = np.pad(np.array(p), (0, n - len(p)))
    q = np.pad(np.array(q), (0, n - len(q)))
    p, q = p / p.sum(), q / q.sum()
    g = entangled_coupling(p, q)
    np.testing.assert_allclose(g.sum(1), p, atol=1e-12)
    np.testing.assert_allclose(g.sum(0), q, atol=1e-12)
    assert (g > 0).sum() <= (p > 0).sum() + (q > 0).sum() - 1
    np.testing.assert_allclose(g, nw_corner(p, q), atol=1e-12)
    # Monotone: the support is a staircase, no two cells cross (i < i' with j > j').
    i, j = np.nonzero(g > 0)
    assert not np.any((i[:, None] < i[None, :]) & (j[:, None] > j[None, :]))


def test_entangled_is_optimal_for_convex_costs_in_1d():
    rng = np.random.default_rng(0)
    x = np.arange(6.0)
    for _ in range(20):
        p, q = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
        for cost in (np.abs(x[:, None] - x[None, :]), (x[:, None] - x[None, :]) ** 2):
            g = entangled_coupling(p, q)
            assert np.sum(g * cost) == pytest.approx(ot.emd2(p, q, cost), abs=1e-12)


def test_rosenblatt_is_product_of_1d_couplings_for_product_laws():
    rng = np.random.default_rng(1)
    for _ in range(10):
        p1, p2, q1, q2 = (rng.dirichlet(np.ones(k)) for k in (3, 4, 3, 4))
        p, q = np.outer(p1, p2).ravel(), np.outer(q1, q2).ravel()
        g = entangled_coupling(p, q, shape=(3, 4))
        expected = np.einsum("ac,bd->abcd", entangled_coupling(p1, q1), entangled_coupling(p2, q2))
        np.testing.assert_allclose(g, expected.reshape(12, 12), atol=1e-12)


def test_rosenblatt_follows_conditionals():
    # A correlated law on a 2x2 grid: x1 uniform, x2 = x1.
    p = np.array([0.5, 0.0, 0.0, 0.5])
    q = np.array([0.25, 0.25, 0.25, 0.25])
    g = entangled_coupling(p, q, shape=(2, 2))
    np.testing.assert_allclose(g.sum(1), p)
    np.testing.assert_allclose(g.sum(0), q)
    # First coordinate: identical marginals -> coupled diagonally; then given x1=0,
    # p's x2 is 0 while q's x2 is uniform.
    np.testing.assert_allclose(g[0], [0.25, 0.25, 0, 0])
    np.testing.assert_allclose(g[3], [0, 0, 0.25, 0.25])


def test_batched_cells_match_single_pairs():
    rng = np.random.default_rng(2)
    X = rng.dirichlet(np.ones(5), size=6) * (rng.random((6, 5)) < 0.7)
    X[:, 0] += 0.01
    X /= X.sum(1, keepdims=True)
    Xs = sp.csr_matrix(X)
    src, dst = np.array([0, 1, 2, 5, 5]), np.array([3, 4, 2, 0, 1])
    cells = entangled_cells(Xs, src, Xs, dst)
    for k, (a, b) in enumerate(zip(src, dst)):
        g = np.zeros((5, 5))
        sel = cells.problem == k
        np.add.at(g, (cells.i[sel], cells.j[sel]), cells.mass[sel])
        np.testing.assert_allclose(g, nw_corner(X[a], X[b]), atol=1e-12)


def test_independent_and_optimal():
    p, q = np.array([0.25, 0.75]), np.array([0.5, 0.5])
    np.testing.assert_allclose(independent_coupling(p, q), [[0.125, 0.125], [0.375, 0.375]])
    g = optimal_coupling(p, q, [[0.0, 1.0], [1.0, 0.0]])
    np.testing.assert_allclose(g, [[0.25, 0.0], [0.25, 0.5]])
    with pytest.raises(ValueError, match="summing to 1"):
        independent_coupling([0.5, 0.6], q)
