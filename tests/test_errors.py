"""The one exception of bad input: its message names the parameter, shown as the command-line flag
when the command has that flag; counts are checked in one place."""

from __future__ import annotations

import numpy as np
import pytest

from bisimkit.errors import InputError, check_count


def test_the_message_names_the_parameter():
    error = InputError("unknown metric 'x'", param="metric")
    assert str(error) == "metric: unknown metric 'x'" and error.detail == "unknown metric 'x'"
    assert isinstance(error, ValueError)


def test_the_command_line_shows_the_flag_only_when_it_has_one():
    error = InputError("must be positive", param="max_iter")
    assert error.for_option({"--max-iter"}) == "--max-iter: must be positive"
    assert error.for_option({"--metric"}) == "max_iter: must be positive"
    assert InputError("plain").for_option({"--x"}) == "plain"


@pytest.mark.parametrize(
    "value, low, kind",
    [
        (0, 1, "a positive integer"),
        (-1, 0, "a non-negative integer"),
        (2, 3, "an integer >= 3"),
        (True, 1, "a positive integer"),
        (1.0, 1, "a positive integer"),
    ],
)
def test_a_bad_count_is_refused_in_one_line(value, low, kind):
    with pytest.raises(InputError, match=rf"^seeds: {value!r} is not {kind}$"):
        check_count("seeds", value, low)


def test_a_good_count_comes_back_as_an_int():
    assert check_count("n", np.int64(3)) == 3 and type(check_count("n", np.int64(3))) is int
    assert check_count("n", 0, low=0) == 0
