"""The round-off bounds: error-free transformations, twice-precision dot products, row defects, grids."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from bisimkit.roundoff import U, dot_rows, gamma, gamma_array, grid_bits, row_defects, two_product, two_sum


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


def test_grid_bits_by_hand():
    assert grid_bits(np.array([0.0, 1.0])) == 0
    assert grid_bits(np.array([0.5, 0.25, 0.75])) == 2
    assert grid_bits(np.array([2.0**-52])) == 52
    assert grid_bits(np.array([0.5, 0.1])) == 53  # 0.1 needs 56 binary digits: on no grid up to 2^-52
