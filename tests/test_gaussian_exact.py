"""Exact series on linear-Gaussian MDPs: closed forms, fixed-point equations, honest tails, refusals."""

import numpy as np
import pytest

from bisimkit.errors import InputError
from bisimkit.gaussian.exact import distance, exact_form, independent_policy_series, tail_bound
from bisimkit.gaussian.examples import gaussian_example
from bisimkit.gaussian.model import LinearGaussianMDP
from bisimkit.pseudometric import check_pseudometric


def test_one_dimensional_geometric_series():
    model = gaussian_example("linear-1d")  # M = 0.8 - 0.3 = 0.5, w = 1 + 0.5 * (-0.3) = 0.85
    z = np.array([[0.0], [1.0], [-2.0]])
    z2 = np.array([[1.0], [1.0], [3.0]])
    expected = 0.85 * np.abs(z - z2)[:, 0] / (1 - 0.9 * 0.5)
    for metric in ("pi", "eps", "eps-bar"):
        s = distance(model, metric, "reward", z, z2)
        assert np.allclose(s.values, expected, rtol=1e-14, atol=0)
        assert np.all(s.error <= 1e-13 * (1 + expected))
    psm = distance(model, "psm", "policy", z, z2).values
    assert np.allclose(psm, 0.3 * np.abs(z - z2)[:, 0] / (1 - 0.9 * 0.5), rtol=1e-14, atol=0)


@pytest.mark.parametrize("name, ground", [("linear-2d", "reward"), ("linear-2d", "policy"), ("quadratic-2d", "policy")])
def test_fixed_point_equation_of_deterministic_forms(name, ground):
    """f(Delta) = g(Delta) + c f(M Delta): the series solves the eps-bar (and pi / psm) equation."""
    model = gaussian_example(name)
    rng = np.random.default_rng(0)
    z, z2 = rng.normal(size=(20, 2)), rng.normal(size=(20, 2))
    f = distance(model, "eps-bar", ground, z, z2).values
    M, K = model.closed_loop, model.K
    nz, nz2 = z @ M.T, z2 @ M.T  # means of the next states: their difference is M Delta
    f_next = distance(model, "eps-bar", ground, nz, nz2).values
    if ground == "policy":
        g = np.abs((z - z2) @ K.T).sum(1)
    else:
        w = model.reward_terms.state + K.T @ model.reward_terms.action
        g = np.abs((z - z2) @ w)
    assert np.allclose(f, g + model.discount * f_next, rtol=1e-12, atol=0)


def test_exact_distances_are_pseudometrics():
    for name, metric, ground in (
        ("linear-2d", "pi", "reward"),
        ("quadratic-2d", "eps-bar", "reward"),
        ("quadratic-2d", "psm", "policy"),
    ):
        model = gaussian_example(name)
        pts = np.random.default_rng(1).normal(size=(12, 2)) * 2
        i, j = np.meshgrid(np.arange(12), np.arange(12), indexing="ij")
        D = distance(model, metric, ground, pts[i.ravel()], pts[j.ravel()]).values.reshape(12, 12)
        assert check_pseudometric(D, atol=1e-10).holds, (name, metric)


@pytest.mark.parametrize("name, ground", [("linear-2d", "reward"), ("quadratic-2d", "reward"), ("linear-2d", "policy")])
def test_certified_tail_is_honest(name, ground):
    model = gaussian_example(name)
    rng = np.random.default_rng(2)
    z, z2 = rng.normal(size=(10, 2)) * 2, rng.normal(size=(10, 2)) * 2
    full = distance(model, "eps-bar", ground, z, z2)
    loose = distance(model, "eps-bar", ground, z, z2, rtol=1e-4)
    assert loose.terms < full.terms
    assert np.all(np.abs(full.values - loose.values) <= loose.error + full.error)
    for H in (1, 5, 20):
        partial = distance(model, "eps-bar", ground, z, z2, terms=H)
        rest = full.values - partial.values
        assert np.all(rest >= -1e-12)
        assert np.all(rest <= tail_bound(model, ground, z, z2, H) + full.error)
        assert np.all(rest <= partial.error + full.error)


def test_policy_and_reward_forms_coincide_where_the_theory_says():
    model = gaussian_example("quadratic-2d")
    rng = np.random.default_rng(3)
    z, z2 = rng.normal(size=(5, 2)), rng.normal(size=(5, 2))
    assert np.array_equal(
        distance(model, "psm", "reward", z, z2).values, distance(model, "eps-bar", "policy", z, z2).values
    )
    lin = gaussian_example("linear-2d")
    assert np.array_equal(distance(lin, "pi", "reward", z, z2).values, distance(lin, "eps", "reward", z, z2).values)
    # the quadratic reward's eps-bar depends on where the pair is, not only on its difference
    shifted = distance(model, "eps-bar", "reward", z + 1.0, z2 + 1.0).values
    assert not np.allclose(shifted, distance(model, "eps-bar", "reward", z, z2).values)


def test_independent_series_breaks_self_similarity():
    model = gaussian_example("linear-2d")
    z = np.random.default_rng(4).normal(size=(3, 2))
    s = independent_policy_series(model, z, z)
    assert np.all(s.values > 0.1) and np.all(s.error < 1e-9)
    assert np.allclose(s.values, s.values[0])  # translation invariant: the same at every state


def test_refusals_say_why():
    with pytest.raises(InputError, match="tanh-squashed"):
        exact_form(gaussian_example("squashed-2d"), "eps-bar", "reward")
    with pytest.raises(InputError, match="quadratic reward"):
        exact_form(gaussian_example("quadratic-2d"), "pi", "reward")
    with pytest.raises(InputError, match="only for linear-Gaussian"):
        exact_form(gaussian_example("pendulum"), "eps-bar", "reward")
    with pytest.raises(InputError, match="no exact form"):
        exact_form(gaussian_example("linear-2d"), "bisim", "reward")
    unstable = LinearGaussianMDP(
        A=1.5, B=0.0, K=0.0, policy_std=0.1, transition_std=0.1, reward={"state": 1.0}, discount=0.9
    )
    with pytest.raises(InputError, match="diverges"):
        distance(unstable, "pi", "reward", [[0.0]], [[1.0]])
    marginal = LinearGaussianMDP(
        A=1.05,
        B=0.0,
        K=0.0,
        policy_std=0.1,
        transition_std=0.1,
        reward={"state": 1.0, "state_quadratic": 1.0},
        discount=0.9,
    )
    with pytest.raises(InputError, match="stable closed loop"):
        distance(marginal, "eps-bar", "reward", [[0.0]], [[1.0]])
    # c rho(M) < 1 with rho(M) > 1 is fine for the linear series
    ok = LinearGaussianMDP(
        A=1.05, B=0.0, K=0.0, policy_std=0.1, transition_std=0.1, reward={"state": 1.0}, discount=0.9
    )
    assert distance(ok, "pi", "reward", [[0.0]], [[1.0]]).values[0] == pytest.approx(1 / (1 - 0.945), rel=1e-13)
