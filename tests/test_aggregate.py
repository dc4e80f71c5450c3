"""Aggregate estimators (``bisimkit_runs.aggregate``) against rliable's own numbers.

The reference numbers were printed by rliable 1.2.0 itself (``tests/make_rliable_reference.py``, run in
a separate virtual environment with arch 7.2.0, pandas 2.3.3, numpy 2.4.6: rliable does not import
with the project's pandas 3) on the score matrices that script builds from a fixed legacy
``RandomState`` stream. Given a ``RandomState`` seeded as rliable's global one was, our bootstrap draws
the same indices, so point estimates and interval ends must agree to rounding.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from bisimkit.errors import InputError
from bisimkit_runs import aggregate as ag

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_rliable_reference import score_matrices  # noqa: E402

# rliable 1.2.0: get_interval_estimates(..., reps=2000) after np.random.seed(11), per method;
# order median, IQM, mean, optimality gap
RLIABLE_INTERVALS = {
    "A": {
        "point": [0.63394144126807, 0.627959280208863, 0.6121750218895733, 0.4132339157760073],
        "low": [0.4510113858638119, 0.4473745641515423, 0.49565969429863094, 0.30799684918463577],
        "high": [0.7996080170885639, 0.7838654816861697, 0.7318373292529522, 0.5216076358967823],
    },
    "B": {
        "point": [0.7156557839566418, 0.7533779318985011, 0.7208198310094105, 0.30720790980797186],
        "low": [0.6039878307763404, 0.6316046855434964, 0.6159744096871441, 0.21293788722426196],
        "high": [0.8463295845986706, 0.8737574818753956, 0.8216552212126534, 0.404637167966725],
    },
    "C": {
        "point": [0.22511099610798257, 0.23054207249409173, 0.23650322566482904, 0.7634967743351709],
        "low": [0.16836884717966902, 0.16440773962077035, 0.18061518463281181, 0.7007116502189921],
        "high": [0.2968485204453484, 0.300372929636433, 0.2992883497810079, 0.8193848153671882],
    },
}
# probability_of_improvement through get_interval_estimates(..., reps=1000) after np.random.seed(12)
RLIABLE_IMPROVEMENT = {
    ("A", "B"): (0.395, 0.2197500000000002, 0.580125),
    ("B", "C"): (0.8833333333333333, 0.75, 1.0),
    ("C", "A"): (0.2, 0.05, 0.3833333333333333),
}


def rliable_profiles() -> dict:
    """create_performance_profile(A, B, C; taus 0, 0.1, ..., 1.2; reps=500) after np.random.seed(13)."""
    return json.loads((Path(__file__).parent / "rliable_profiles.json").read_text())


# ------------------------------------------------------------------ against rliable
@pytest.mark.parametrize("name", ["A", "B", "C"])
def test_intervals_equal_rliables(name):
    got = ag.interval_estimates(score_matrices()[name], reps=2000, rng=np.random.RandomState(11))
    ref = RLIABLE_INTERVALS[name]
    for i, estimator in enumerate(ag.ESTIMATORS):
        iv = got[estimator]
        assert iv.point == pytest.approx(ref["point"][i], rel=1e-12, abs=1e-14)
        assert iv.low == pytest.approx(ref["low"][i], rel=1e-12, abs=1e-14)
        assert iv.high == pytest.approx(ref["high"][i], rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("pair", list(RLIABLE_IMPROVEMENT))
def test_probability_of_improvement_equals_rliables(pair):
    scores = score_matrices()
    iv = ag.improvement_interval(scores[pair[0]], scores[pair[1]], reps=1000, rng=np.random.RandomState(12))
    assert (iv.point, iv.low, iv.high) == pytest.approx(RLIABLE_IMPROVEMENT[pair], rel=1e-12, abs=1e-14)


def test_performance_profiles_equal_rliables():
    ref = rliable_profiles()
    rng = np.random.RandomState(13)  # one stream over A, B, C in order, as rliable's one call
    for name, matrix in score_matrices().items():
        point, low, high = ag.profile_interval(matrix, ref["taus"], reps=500, rng=rng)
        np.testing.assert_allclose(point, ref[name]["point"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(low, ref[name]["low"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(high, ref[name]["high"], rtol=0, atol=1e-12)


# ------------------------------------------------------------------ by hand
def test_estimators_on_a_hand_computed_matrix():
    x = np.array([[0.0, 0.4], [0.2, 1.4], [0.1, 0.9], [0.3, 0.5]])  # 4 runs x 2 tasks
    assert ag.aggregate_mean(x) == pytest.approx(3.8 / 8)
    assert ag.aggregate_median(x) == pytest.approx((0.15 + 0.8) / 2)
    # sorted: 0, .1, .2, .3, .4, .5, .9, 1.4: drop 2 from each end, the mean of .2, .3, .4, .5
    assert ag.aggregate_iqm(x) == pytest.approx(0.35)
    assert ag.optimality_gap(x) == pytest.approx(1 - (3.8 - 0.4) / 8)  # 1.4 clipped to 1
    y = np.array([[0.1, 0.9], [0.1, 0.2]])
    # task 0: x beats 0.1 in 2 of 4 (0.2, 0.3), ties with 1 (0.1): (2*2 + 0.5*2) / 8 = 5/8
    # task 1: x vs 0.9: 1.4 wins, 0.9 ties -> 1.5; x vs 0.2: all 4 win -> (1.5 + 4) / 8 = 11/16
    assert ag.probability_of_improvement(x, y) == pytest.approx((5 / 8 + 11 / 16) / 2)
    assert ag.probability_of_improvement(x, y) + ag.probability_of_improvement(y, x) == pytest.approx(1.0)
    assert ag.score_distribution(x, [0.0, 0.35, 1.0]).tolist() == pytest.approx([7 / 8, 4 / 8, 1 / 8])


def test_a_constant_matrix_has_a_zero_width_interval_and_the_bootstrap_is_seeded():
    x = np.full((3, 2), 0.25)
    got = ag.interval_estimates(x, reps=200)
    assert all(iv.low == iv.point == iv.high for iv in got.values())
    assert [got[e].point for e in ag.ESTIMATORS] == pytest.approx([0.25, 0.25, 0.25, 0.75])
    rand = np.random.default_rng(5).uniform(size=(5, 3))
    assert ag.interval_estimates(rand, reps=300, rng=1) == ag.interval_estimates(rand, reps=300, rng=1)
    assert ag.interval_estimates(rand, reps=300, rng=1) != ag.interval_estimates(rand, reps=300, rng=2)


def test_interval_coverage_on_a_known_mean():
    """Runs drawn from a known distribution: the 95% interval of the mean covers the true mean in about 95%
    of 300 experiments (binomial: 270-297 is inside 4.5 standard deviations)."""
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(300):
        x = rng.beta(2.0, 3.0, (10, 3))  # true mean 0.4 on every task
        iv = ag.interval_estimates(x, reps=400, rng=rng)["mean"]
        hits += iv.low <= 0.4 <= iv.high
    assert 270 <= hits <= 297


@pytest.mark.parametrize(
    "call, field",
    [
        (lambda: ag.interval_estimates(np.zeros(3)), "scores"),
        (lambda: ag.interval_estimates(np.array([[np.nan, 1.0]])), "scores"),
        (lambda: ag.interval_estimates(np.zeros((2, 2)), reps=0), "reps"),
        (lambda: ag.interval_estimates(np.zeros((2, 2)), confidence=1.0), "confidence"),
        (lambda: ag.improvement_interval(np.zeros((2, 2)), np.zeros((2, 3))), "y"),
        (lambda: ag.normalise([1.0], 5.0, 5.0), "bounds"),
    ],
)
def test_bad_input_names_the_field(call, field):
    with pytest.raises(InputError, match=f"^{field}: "):
        call()
