"""The adversarial MDP generators (validation/strategies.py): exact rows, reproducible seeds, and the
round-off each family is built to produce."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings

from bisimkit.quotient import quotient
from validation.strategies import (
    ADVERSARIAL_FAMILIES,
    ALL_FAMILIES,
    UNIT,
    SeededChoices,
    adversarial_mdp,
    adversarial_mdps,
    assert_exactly_stochastic,
    cancelling_average,
    float_average,
    move_mass,
)


def _draw(seed: int, family: str, count: int = 20):
    rng = np.random.default_rng(seed)
    return [adversarial_mdp(SeededChoices(rng), (family,)) for _ in range(count)]


@pytest.mark.parametrize("family", ALL_FAMILIES)
def test_every_family_gives_exactly_stochastic_rows_and_the_same_mdps_for_the_same_seed(family):
    first, again = _draw(7, family), _draw(7, family)
    for a, b in zip(first, again):
        assert a.name == f"adversarial-{family}"
        assert np.array_equal(a.transitions, b.transitions) and np.array_equal(a.rewards, b.rewards)
        assert np.array_equal(a.policy, b.policy) and a.discount == b.discount
        assert_exactly_stochastic("transitions", a.transitions)
        assert_exactly_stochastic("policy", a.policy)
    assert any(not np.array_equal(a.rewards, b.rewards) for a, b in zip(first, _draw(8, family)))


def test_the_exactness_checks_refuse_what_is_not_exact():
    with pytest.raises(AssertionError, match="not a float"):
        move_mass(np.array([0.5, 0.5]), 0, 1, 2.0**-60)  # 0.5 + 2^-60 rounds
    with pytest.raises(AssertionError, match="negative"):
        move_mass(np.array([1.0, 0.0]), 1, 0, UNIT)
    with pytest.raises(AssertionError, match=r"policy\[1\]: a mass is not a multiple of 2\^-53"):
        assert_exactly_stochastic("policy", np.array([[0.5, 0.5], [0.1, 0.9]]))  # 0.1 + 0.9 is 1 only in float
    with pytest.raises(AssertionError, match=r"transitions\[0, 1\] sums to 1 \+ -1.11e-16, not exactly 1"):
        assert_exactly_stochastic("transitions", np.array([[[1.0, 0.0], [0.5, 0.5 - UNIT]]]))
    row = move_mass(np.array([0.5, 0.25, 0.25]), 2, 0, 9 * UNIT)
    assert sum(Fraction(x) for x in row) == 1 and row[0] == 0.5 + 9 * UNIT


def test_cancelling_averages_vanish_in_float64_and_not_in_rational_arithmetic():
    rng = np.random.default_rng(0)
    for scale in (10.0, 1e4, 6.8e7):
        p, r0, r1 = cancelling_average(rng, scale)
        assert float_average([p, 1.0 - p], [r0, r1]) == 0.0
        assert Fraction(p) * Fraction(r0) + Fraction(1.0 - p) * Fraction(r1) != 0
    for mdp in _draw(1, "cancelling-average"):
        pi, R = mdp.policy, mdp.rewards
        assert float_average(pi[1], R[1]) == 0.0 == float_average(pi[0], R[0])
        exact = sum(Fraction(x) * Fraction(y) for x, y in zip(pi[1], R[1]))
        assert exact != 0 and mdp.reward_pi[1] == float(exact)  # the library rounds the exact average once


@pytest.mark.parametrize("metric", ["pi", "psm", "bisim", "eps"])
def test_collapsed_mdps_collapse_to_one_block(metric):
    for mdp in _draw(2, "collapsed", 10):
        q = quotient(mdp, metric)
        assert q is not None and q.n_blocks == 1, (metric, mdp.n_states)


def test_ulp_policies_are_a_few_units_apart():
    for mdp in _draw(3, "ulp-policy"):
        gaps = np.abs(mdp.policy - mdp.policy[0]) / UNIT
        assert np.all(gaps <= 16) and np.array_equal(gaps, np.round(gaps))
        assert np.all(mdp.rewards == mdp.rewards[0])


@settings(max_examples=20)
@given(adversarial_mdps())
def test_the_default_strategy_keeps_the_original_families(mdp):
    assert mdp.name.removeprefix("adversarial-") in ADVERSARIAL_FAMILIES
    assert mdp.n_states <= 5 and mdp.n_actions <= 2
