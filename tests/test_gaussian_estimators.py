"""The Monte Carlo estimator of d_eps-bar: agreement with the exact series, honest truncation, C6."""

import numpy as np
import pytest

from bisimkit.errors import InputError
from bisimkit.gaussian.estimators import estimate_distance, rollout_sums, truncation_bound
from bisimkit.gaussian.exact import distance, independent_policy_series
from bisimkit.gaussian.examples import GAUSSIAN_EXAMPLES, gaussian_example


def test_monte_carlo_agrees_with_the_quadratic_series():
    """The quadratic reward makes every term random: the exact series must lie in the intervals."""
    model = gaussian_example("quadratic-2d")
    rng = np.random.default_rng(0)
    z, z2 = rng.normal(size=(8, 2)), rng.normal(size=(8, 2))
    truth = distance(model, "eps-bar", "reward", z, z2)
    est = estimate_distance(model, z, z2, "reward", samples=3000, seed=1, confidence=0.999)
    assert np.all(est.stderr > 0)
    assert np.all((est.lower <= truth.values) & (truth.values <= est.upper))
    assert np.all(est.truncation <= 1e-3)
    # and the intervals are tight: a 10% error in the truth would be caught
    assert np.all(est.upper - est.lower < 0.1 * truth.values)


@pytest.mark.parametrize("name, ground", [("linear-2d", "reward"), ("linear-2d", "policy"), ("quadratic-2d", "policy")])
def test_deterministic_forms_have_zero_variance(name, ground):
    model = gaussian_example(name)
    z = np.array([[0.0, 0.0], [1.0, -1.0]])
    z2 = np.array([[1.0, 0.0], [-0.5, 2.0]])
    truth = distance(model, "eps-bar", ground, z, z2).values
    est = estimate_distance(model, z, z2, ground, samples=20, horizon=40)
    assert np.allclose(est.stderr, 0, atol=1e-12)
    partial = distance(model, "eps-bar", ground, z, z2, terms=40).values
    assert np.allclose(est.mean, partial, rtol=1e-10, atol=0)
    assert np.all((est.lower <= truth + 1e-12) & (truth <= est.upper + 1e-12))


@pytest.mark.parametrize(
    "name, ground",
    [("squashed-2d", "reward"), ("squashed-2d", "policy"), ("pendulum", "reward"), ("pendulum", "policy")],
)
def test_truncation_bound_covers_every_sample(name, ground):
    """Common random numbers: the first H steps of a 3H-step run are the H-step run, so the
    difference of the two per-sample sums is the dropped tail, which the bound must cover."""
    model = gaussian_example(name)
    rng = np.random.default_rng(5)
    z, z2 = rng.normal(size=(4, 2)), rng.normal(size=(4, 2))
    H = 15
    short = rollout_sums(model, z, z2, ground, H, 200, np.random.default_rng(9))
    long = rollout_sums(model, z, z2, ground, 3 * H, 200, np.random.default_rng(9))
    bound = truncation_bound(model, ground, z, z2, H)
    assert np.all(np.isfinite(bound))
    assert np.all(long - short >= -1e-12)
    assert np.all((long - short).max(axis=1) <= bound)


@pytest.mark.parametrize("name", GAUSSIAN_EXAMPLES)
def test_every_entangled_sample_vanishes_at_identical_states(name):
    """C6: with shared noise, F-hat(d)(z, z) = 0 for every sample; independent noise does not."""
    model = gaussian_example(name)
    z = np.random.default_rng(6).normal(size=(5, model.state_dim))
    for ground in ("reward", "policy"):
        sums = rollout_sums(model, z, z, ground, 10, 50, np.random.default_rng(0))
        assert np.all(sums == 0)
    indep = rollout_sums(model, z, z, "reward", 10, 50, np.random.default_rng(0), coupling="independent")
    assert np.all(indep.mean(axis=1) > 0)


def test_independent_coupling_estimates_the_sampled_psm_fixed_point():
    model = gaussian_example("linear-2d")
    z = np.array([[0.0, 0.0], [1.0, 1.0]])
    truth = independent_policy_series(model, z, z).values
    est = estimate_distance(
        model, z, z, "policy", samples=4000, horizon=150, seed=2, coupling="independent", confidence=0.999
    )
    # no certified tail for the independent coupling here, but c^150 makes it negligible against the CI
    assert np.all(np.abs(est.mean - truth) <= 3.3 * est.stderr + 1e-5)
    assert np.all(est.lower > 0)


def test_estimator_input_checks():
    model = gaussian_example("linear-2d")
    z = np.zeros((1, 2))
    with pytest.raises(InputError, match="^samples:"):
        estimate_distance(model, z, z, samples=1)
    with pytest.raises(InputError, match="^ground:"):
        estimate_distance(model, z, z, ground="value")
    with pytest.raises(InputError, match="^confidence:"):
        estimate_distance(model, z, z, confidence=1.5)
    with pytest.raises(InputError, match="dimension 2"):
        estimate_distance(model, np.zeros((1, 3)), z)
    with pytest.raises(InputError, match="coupling"):
        estimate_distance(model, z, z, coupling="optimal")


def test_seed_fixes_the_estimate():
    model = gaussian_example("pendulum")
    z, z2 = np.array([[0.5, 0.0]]), np.array([[-0.5, 1.0]])
    a = estimate_distance(model, z, z2, samples=100, seed=3)
    b = estimate_distance(model, z, z2, samples=100, seed=3)
    assert np.array_equal(a.mean, b.mean) and a.horizon == b.horizon
