"""The round-off bounds: error-free transformations, twice-precision dot products, row defects, grids."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from bisimkit.roundoff import (
    U,
    dot_rows,
    gamma,
    gamma_array,
    grid_bits,
    row_defects,
    row_defects_csr,
    two_product,
    two_sum,
)


def test_gamma_by_hand():
    assert gamma(0) == 0 and gamma(1) == U / (1 - U)
    assert gamma(2**52) == float("inf")
    assert np.array_equal(gamma_array([1, 3]), [gamma(1), gamma(3)])


def test_two_sum_and_two_product_are_exact():
    s, e = two_sum(1.0, 1e-17)
    assert s == 1.0 and Fraction(s) + Fraction(e) == Fraction(1.0) + Fraction(1e-17)
    a, b = 1.0 + 2.0**-30, 1.0 - 2.0**-30
    p, e = two_product(a, b)
    assert Fraction(p) + Fraction(e) == Fraction(a) * Fraction(b) and e != 0


def test_twice_precision_dot_products_hold_the_exact_value():
    W = np.array([[1e16, 1.0, -1e16], [0.1, 0.2, 0.3]])
    X = np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
    value, rest, bound = dot_rows(W, X)
    assert value[0] == 1.0 and rest[0] == 0.0  # a plain sum gives 0 (1e16 + 1 rounds to 1e16)
    exact = sum(Fraction(w) for w in W[1])
    assert abs(Fraction(value[1]) + Fraction(rest[1]) - exact) <= Fraction(bound[1])
    assert [a.size for a in dot_rows(np.zeros((2, 0)), np.zeros((2, 0)))] == [2, 2, 2]


def test_row_defects_bound_the_exact_sums():
    assert row_defects(np.array([[0.5, 0.25, 0.25]])).tolist() == [0.0]  # on the 2^-52 grid: exact
    rows = np.array([[0.1, 0.2, 0.7], [0.3, 0.3, 0.3]])
    defects = row_defects(rows)
    for row, defect in zip(rows, defects):
        assert abs(sum(Fraction(x) for x in row) - 1) <= Fraction(defect)
    assert defects[1] == pytest.approx(0.1, rel=1e-12)


def test_csr_row_defects_bound_the_exact_sums():
    rng = np.random.default_rng(3)
    dense = rng.random((60, 7)) * (rng.random((60, 7)) < 0.6)
    dense[0] = [0.5, 0.25, 0.25, 0, 0, 0, 0]  # on the grid, summing to 1: defect 0
    dense[1] = 0.0  # an empty row sums to 0: defect 1
    dense[2] = [0.1, 0.2, 0.7, 0, 0, 0, 0]  # off the grid, nearly 1
    dense[3] = [1e16, 1.0, 1e-16, 3.0, 0, 0, 0]  # the small masses vanish in a plain sum
    dense[4] = 1 / 7
    dense[5:] /= np.maximum(dense[5:].sum(axis=1, keepdims=True), 1e-300)  # rows divided by their sums
    for index in (np.int32, np.int64):
        X = sp.csr_matrix(dense)
        X.indptr, X.indices = X.indptr.astype(index), X.indices.astype(index)
        for compensated in (True, False):
            defects = row_defects_csr(X, compensated)
            assert defects[0] == 0.0 and defects[1] == 1.0
            for r in range(X.shape[0]):
                row = X.data[X.indptr[r] : X.indptr[r + 1]]
                assert abs(sum(Fraction(x) for x in row) - 1) <= Fraction(defects[r]), (r, compensated)
        tight = row_defects_csr(X)
        for r in range(5, X.shape[0]):  # compensated: the bound exceeds the exact defect by far less than a unit
            row = X.data[X.indptr[r] : X.indptr[r + 1]]
            assert Fraction(tight[r]) - abs(sum(Fraction(x) for x in row) - 1) < Fraction(1e-30)


def test_one_product_is_exact():
    W, X = np.array([[0.1], [1.0], [3.0]]), np.array([[0.3], [0.7], [1e-320]])
    value, rest, bound = dot_rows(W, X)
    for w, x, v, r, b in zip(W[:, 0], X[:, 0], value, rest, bound):
        assert abs(Fraction(v) + Fraction(r) - Fraction(w) * Fraction(x)) <= Fraction(b)
    assert rest[0] != 0.0 and bound[0] == 2 * 2.0**-1074


def test_grid_bits_by_hand():
    assert grid_bits(np.array([0.0, 1.0])) == 0
    assert grid_bits(np.array([0.5, 0.25, 0.75])) == 2
    assert grid_bits(np.array([2.0**-52])) == 52
    assert grid_bits(np.array([0.5, 0.1])) == 53  # 0.1 needs 56 binary digits: on no grid up to 2^-52
    assert grid_bits(np.array([])) == 0 and grid_bits(np.zeros((3, 2))) == 0
    assert grid_bits(np.array([-0.375, 3.0, 2.0**60])) == 3  # signs, whole numbers, large ones
    assert grid_bits(np.array([5e-324])) == 53  # the smallest subnormal
    assert grid_bits(np.array([0.5, np.inf])) == 1 and grid_bits(np.array([0.5, np.nan])) == 53


@pytest.mark.parametrize("seed", range(6))
def test_grid_bits_are_those_of_testing_every_grid(seed):
    rng = np.random.default_rng(seed)

    def by_testing(x):  # the smallest k with x 2^k whole everywhere, by trying every k
        for k in range(53):
            if np.all(x * 2.0**k == np.floor(x * 2.0**k)):
                return k
        return 53

    for _ in range(60):
        size = int(rng.integers(1, 300))
        bits = rng.integers(0, 56, size)
        x = np.floor(rng.random(size) * 2.0**bits) / 2.0**bits  # on the 2^-bits grid, some entries 0
        x = x * rng.choice([1.0, -1.0, 2.0**-20], size) if rng.random() < 0.3 else x
        if rng.random() < 0.2:
            x[rng.integers(0, size)] = rng.random()  # one entry of 53 digits or so
        for chunk in (1_048_576, 7):
            assert grid_bits(x, chunk) == by_testing(x), (x, chunk)
