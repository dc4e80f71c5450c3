"""The entangled loss learns the exact d_eps-bar of a linear-Gaussian MDP (check L6)."""

import pytest

pytest.importorskip("torch")

from validation.learning import QUICK_CONFIG, linear_gaussian_case, train_linear_gaussian  # noqa: E402


def test_entangled_loss_learns_the_exact_series():
    curve = train_linear_gaussian(linear_gaussian_case(0), QUICK_CONFIG)
    assert curve.held and curve.final_error <= 1e-6 * curve.scale  # the target is noise-free here
    assert curve.learned_diagonal == 0.0
    assert curve.error[0] > 100 * curve.final_error  # it learned, it did not start there


def test_independent_noise_misses_it():
    curve = train_linear_gaussian(linear_gaussian_case(0), QUICK_CONFIG, coupling="independent")
    assert not curve.held and curve.final_error > 0.05 * curve.scale
