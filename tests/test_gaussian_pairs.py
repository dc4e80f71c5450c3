"""Distances at given state pairs of a Gaussian MDP: reading the pairs, the exact series or Monte Carlo with
their error bars, the table and the JSON record."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bisimkit.errors import InputError
from bisimkit.gaussian.exact import distance
from bisimkit.gaussian.examples import gaussian_example
from bisimkit.gaussian.pairs import describe_gaussian, format_pairs, load_pairs, pairs_from_data, solve_pairs

PAIRS = [[[0, 0], [1, 0]], [[0.5, -0.5], [0.5, -0.5]]]


def test_numbers_stand_for_one_dimensional_states():
    z, z2 = pairs_from_data([[0, 1], [2.5, [3]]], 1)
    assert z.tolist() == [[0.0], [2.5]] and z2.tolist() == [[1.0], [3.0]]


def test_json_and_npy_files_give_the_same_pairs(tmp_path):
    (tmp_path / "p.json").write_text(json.dumps(PAIRS))
    np.save(tmp_path / "p.npy", np.array(PAIRS, dtype=float))
    from_json, from_npy = load_pairs(tmp_path / "p.json", 2), load_pairs(tmp_path / "p.npy", 2)
    assert all(np.array_equal(a, b) for a, b in zip(from_json, from_npy))
    assert from_json[0].tolist() == [[0.0, 0.0], [0.5, -0.5]]


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("p.json", "[[1, 2]", r"p\.json: invalid JSON at line 1 column 8"),
        ("p.txt", "[]", r"^pairs: unsupported file type '\.txt' \(use \.json or \.npy\)$"),
        ("p.json", "[[[0, 0], [1]]]", r"^pairs\[0\]\[1\]: expected 2 numbers \(the state dimension\), got 1 number$"),
    ],
)
def test_bad_pairs_files_are_refused_in_one_line(tmp_path, name, text, message):
    (tmp_path / name).write_text(text)
    with pytest.raises(InputError, match=message):
        load_pairs(tmp_path / name, 2)
    with pytest.raises(InputError, match=r"^pairs: .*missing\.json: no such file$"):
        load_pairs(tmp_path / "missing.json", 2)


def test_the_exact_series_with_its_certified_bar():
    model = gaussian_example("linear-2d")
    z, z2 = pairs_from_data(PAIRS, 2)
    result = solve_pairs(model, "pi", z, z2)
    series = distance(model, "pi", "reward", z, z2)
    assert result.method == "exact series" and np.array_equal(result.distances, series.values)
    assert result.distances[1] == 0 and (result.lower <= result.distances).all()
    assert (result.distances <= result.upper).all() and result.ground is None
    record = result.to_json()
    assert record["pairs"] == [[[0.0, 0.0], [1.0, 0.0]], [[0.5, -0.5], [0.5, -0.5]]] and "terms" in record
    table = format_pairs(model, result)
    assert table.startswith("linear-2d: metric pi; linear-Gaussian MDP n=2, k=1")
    assert len(table.splitlines()) == 5  # title, method, column heads, 2 rows
    assert format_pairs(model, result, limit=1).endswith("... 1 more pairs (use --out FILE.json)")


def test_monte_carlo_only_for_eps_bar():
    model = gaussian_example("linear-2d")
    z, z2 = pairs_from_data(PAIRS, 2)
    with pytest.raises(InputError, match=r"^method: 'mc': only eps-bar has a Monte Carlo estimator"):
        solve_pairs(model, "pi", z, z2, method="mc")
    with pytest.raises(InputError, match=r"^method: 'vi' does not apply to Gaussian MDPs"):
        solve_pairs(model, "pi", z, z2, method="vi")
    with pytest.raises(InputError, match=r"^ground: unknown ground metric 'state'"):
        solve_pairs(model, "eps-bar", z, z2, ground="state")
    result = solve_pairs(model, "eps-bar", z, z2, method="mc", samples=200, seed=1)
    assert result.method == "monte carlo" and (result.lower <= result.upper).all()
    assert result.to_json()["monte_carlo"]


def test_info_lists_the_exact_series():
    text = describe_gaussian(gaussian_example("linear-2d"))
    assert "state dimension 2, action dimension 1, discount 0.9" in text
    assert "exact series: " in text and text.endswith("Monte Carlo: eps-bar")
