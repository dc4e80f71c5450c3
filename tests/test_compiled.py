"""The compiled assembly and products of the pair solvers, on systems small enough to write by hand."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from bisimkit.compiled import eps_bar_counts, eps_bar_matrix, eps_bar_product, matvec, pair_system_from_slots
from bisimkit.pairs import PairSpace


def test_the_pair_system_of_slots_by_hand():
    pairs = PairSpace(3, diagonal=False)  # pairs (0,1), (0,2), (1,2)
    offsets = np.array([0, 2, 4])  # problem 0: cells 0-1, problem 1: cells 2-3
    ci, cj = np.array([0, 1, 2, 2]), np.array([1, 1, 0, 1])
    mass = np.array([0.5, 0.5, 0.25, 0.0])  # (1,1) is on the diagonal, the last cell is empty
    T = pair_system_from_slots(offsets, ci, cj, mass, np.array([2, 0]), np.array([1.0, 4.0]), pairs.index, 3)
    assert T.toarray().tolist() == [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.5, 0.0, 0.0]]


def test_the_eps_bar_matrix_of_a_deterministic_chain_by_hand():
    # one action; 0 -> 1, 1 -> 2, 2 -> half 0, half 1; pairs (0,1), (0,2), (1,2)
    P = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.5, 0.5, 0.0]])
    policy, pairs = np.ones((3, 1)), PairSpace(3, diagonal=False)
    args = (pairs.s, pairs.t, pairs.index, policy, P, 1)
    assert eps_bar_counts(*args).tolist() == [1, 1, 2]
    T = eps_bar_matrix(*args, len(pairs))
    # (0,1): cell (1,2); (0,2): cells (1,0) 1/2 and (1,1) 1/2 on the diagonal; (1,2): cells (2,0), (2,1)
    assert T.toarray().tolist() == [[0.0, 0.0, 1.0], [0.5, 0.0, 0.0], [0.0, 0.5, 0.5]]
    x = np.array([1.0, 2.0, 4.0])
    assert np.array_equal(eps_bar_product(*args)(x), T @ x)
    assert eps_bar_matrix(*args, len(pairs), dtype=np.float32).dtype == np.float32


def test_matvec_is_the_sparse_product():
    rng = np.random.default_rng(0)
    T = sp.random(40, 40, density=0.2, random_state=1, format="csr")
    x = rng.normal(size=40)
    assert np.allclose(matvec(T)(x), T @ x, rtol=1e-14, atol=1e-14)
    assert np.allclose(matvec(T, np.float32)(x), T @ x, rtol=1e-5, atol=1e-5)
