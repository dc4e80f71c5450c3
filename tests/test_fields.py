"""The shared checks of input fields: each names the field and the index of the first bad entry."""

from __future__ import annotations

import numpy as np
import pytest

from bisimkit.errors import InputError
from bisimkit.fields import check_finite, check_keys, format_index, to_float_array, validate_discount


def test_indices_are_named():
    assert format_index(("s", "a"), (np.int64(1), 2)) == "s=1, a=2"


def test_nested_lists_become_a_float_array():
    array = to_float_array("rewards", [[1, 2.5], [3, 4]])
    assert array.dtype == np.float64 and array.tolist() == [[1.0, 2.5], [3.0, 4.0]]
    assert to_float_array("x", np.array([1, 2])).dtype == np.float64


@pytest.mark.parametrize(
    "value, message",
    [
        ([[1, 2], [3]], r"^rewards\[1\]: has length 1, expected 2 \(ragged array\)$"),
        ([[1, "a"]], r'^rewards\[0\]\[1\]: expected a number, got "a"$'),
        ([[1, True]], r"^rewards\[0\]\[1\]: expected a number, got bool$"),
        ([1, [2]], r"^rewards\[1\]: expected a number, got a list \(ragged array\)$"),
        ([[1], 2], r"^rewards\[1\]: expected a list of length 1, got a number \(ragged array\)$"),
    ],
)
def test_the_first_bad_entry_is_named(value, message):
    with pytest.raises(InputError, match=message):
        to_float_array("rewards", value)


def test_an_array_of_strings_is_refused():
    with pytest.raises(InputError, match="^x: expected numbers, got an array of dtype <U1$"):
        to_float_array("x", np.array(["a"]))


def test_the_first_non_finite_entry_is_named():
    check_finite("rewards", np.zeros((2, 2)), ("s", "a"))
    array = np.array([[0.0, 1.0], [np.inf, np.nan]])
    with pytest.raises(InputError, match=r"^rewards\[s=1, a=0\] is not finite \(inf\)$"):
        check_finite("rewards", array, ("s", "a"))


@pytest.mark.parametrize("value", [0, 0.5, np.float32(0.25), np.array(0.9)])
def test_a_discount_in_the_unit_interval_is_kept(value):
    assert validate_discount(value) == float(value)


@pytest.mark.parametrize(
    "value, message",
    [
        (1.0, "must satisfy 0 <= discount < 1"),
        (-0.1, "must satisfy"),
        (float("nan"), "must satisfy"),
        ("0.9", 'expected a number, got "0.9"'),
        (True, "expected a number"),
        (np.zeros(2), "got an array"),
    ],
)
def test_a_bad_discount_is_refused(value, message):
    with pytest.raises(InputError, match=f"^discount.*{message}"):
        validate_discount(value)


def test_unknown_then_missing_keys_are_named():
    check_keys({"a": 1}, ("a", "b"), ("a",), "model.json")
    with pytest.raises(InputError, match=r"^model.json: unknown field 'c' \(allowed: a, b\)$"):
        check_keys({"a": 1, "c": 2}, ("a", "b"), ("a",), "model.json")
    with pytest.raises(InputError, match="^model.json: missing field 'b'$"):
        check_keys({"a": 1}, ("a", "b"), ("a", "b"), "model.json")
