"""The certificate is a proven upper bound: ``|distances - exact| <= certified_error``.

The exact fixed points come from ``tests/exact_reference.py`` (rational arithmetic, no code
shared with the solvers). The property runs over adversarial MDPs
(``validation.strategies.adversarial_mdps``): near-duplicate states, equal and absorbing
rewards, reward scales 1e-9 to 1e6, discounts up to 0.999, tolerances down to 1e-12, every
metric with an exact reference, both grounds, quotient on and off. ``-m slow`` runs
thousands of cases.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest
from exact_reference import EXACT_METRICS, exact_fixed_point
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bisimkit import FiniteMDP, solve
from bisimkit.solvers import PrecisionWarning, ZeroGroundWarning
from validation.strategies import adversarial_mdps

GROUNDS = {"eps": ("reward", "policy"), "eps-avg": ("reward", "policy"), "eps-bar": ("reward", "policy")}


def _check(mdp: FiniteMDP, metric: str, ground: str, tol: float, quotient: bool) -> None:
    try:
        truth = exact_fixed_point(mdp, metric, ground)
    except ValueError:  # a row that does not sum to exactly 1 in floating point
        assume(False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionWarning)
        warnings.simplefilter("ignore", ZeroGroundWarning)
        sol = solve(mdp, metric, ground=ground if metric in GROUNDS else None, tol=tol, quotient=quotient)
    # the reference is rounded to the nearest float once: allow that half ulp
    err = np.abs(sol.distances - truth) - np.spacing(np.abs(truth))
    worst = np.unravel_index(np.argmax(err), err.shape)
    assert err[worst] <= sol.certified_error, (
        f"{metric}/{ground} {mdp.name} c={mdp.discount} tol={tol:g} quotient={quotient}: error "
        f"{err[worst]:.3g} at {worst} beats the certificate {sol.certified_error:.3g}")
    if sol.converged:
        assert sol.certified_error <= tol


@st.composite
def cases(draw):
    mdp = draw(adversarial_mdps())
    metric = draw(st.sampled_from(EXACT_METRICS))
    ground = draw(st.sampled_from(GROUNDS.get(metric, ("reward",))))
    tol = draw(st.sampled_from([1e-6, 1e-9, 1e-12]))
    return mdp, metric, ground, tol, draw(st.booleans())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(cases())
def test_certificate_bounds_the_error(case):
    _check(*case)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(cases())
def test_certificate_bounds_the_error_thoroughly(case):
    _check(*case)


def _absorbing_pair(scale: float, dl: float) -> FiniteMDP:
    """States 0 and 1 move to absorbing states (2, 3) and (4, 5) with 1/2 each; huge rewards."""
    R = np.array([[0, 5], [0, -5], [0, 0], [1 + dl / scale, 0], [1, 0], [2, 0]]) * scale
    P = np.zeros((6, 2, 6))
    P[0, :, 2] = P[0, :, 3] = P[1, :, 4] = P[1, :, 5] = 0.5
    for s in range(2, 6):
        P[s, :, s] = 1.0
    return FiniteMDP(P, R, 0.5)


@pytest.mark.parametrize("quotient", [True, False])
def test_pricing_tolerance_is_charged_with_rewards_near_1e6(quotient):
    S, dl = 2.0 ** 20, 5e-7
    mdp = _absorbing_pair(S, dl)
    truth = float(11 * Fraction(S) - Fraction(dl) / 2)
    with pytest.warns(PrecisionWarning, match="below what float64 can certify"):
        sol = solve(mdp, "bisim", tol=1e-9, quotient=quotient)
    assert abs(sol.distances[0, 1] - truth) <= sol.certified_error
    # ulp(1.15e7) is 1.9e-9: a 1e-9 certificate is out of float64's reach here, and is not claimed
    assert not sol.converged and sol.certified_error > 1e-9
    np.testing.assert_allclose(sol.distances, exact_fixed_point(mdp, "bisim"), rtol=0, atol=sol.certified_error)


@pytest.mark.parametrize("quotient", [True, False])
def test_ordinary_rewards_at_0999_get_a_certificate_that_holds(quotient):
    """Found by the property on a solver that charged neither transport gaps nor round-off: it
    certified 0.0 here while its distances were 5.5e-12 off."""
    P = np.array([[[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]],
                  [[0.5, 0.5, 0.0], [0.25, 0.75, 0.0]],
                  [[0.25, 0.75, 0.0], [0.0, 0.0, 1.0]]])
    R = np.array([[0.3213717109575742, -7.682687750584593], [2.4697951107500082, 5.53366228684596],
                  [2.2600660210608092, 8.345954095818053]])
    mdp = FiniteMDP(P, R, 0.999, np.array([[0.75, 0.25], [0.75, 0.25], [0.25, 0.75]]))
    truth = exact_fixed_point(mdp, "bisim")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionWarning)
        sol = solve(mdp, "bisim", quotient=quotient)
    assert sol.certified_error > 0.0
    assert np.max(np.abs(sol.distances - truth)) <= sol.certified_error


def test_round_off_is_charged_at_discount_0999():
    mdp = _absorbing_pair(1.0, 0.0)
    mdp = FiniteMDP(mdp.transitions, mdp.rewards, 0.999)
    with pytest.warns(PrecisionWarning):
        sol = solve(mdp, "bisim", tol=1e-12)
    truth = exact_fixed_point(mdp, "bisim")
    assert sol.certified_error > 0.0 and not sol.converged
    assert np.max(np.abs(sol.distances - truth)) <= sol.certified_error
    # the floor is the stated multiple of eps * max|d| / (1 - c), no more
    assert sol.floor <= 64 * np.finfo(float).eps * 3 * np.max(truth) / (1 - 0.999)


def test_zero_ground_warning_names_the_spread_and_only_when_distances_vanish():
    mdp = _absorbing_pair(1.0, 0.0)
    tiny = np.full((6, 2), 2.22695e-13)
    tiny[3, 0] += 1e-12  # rewards differ by 1e-12: not all equal
    near = FiniteMDP(mdp.transitions, tiny, 0.98)
    truth = exact_fixed_point(near, "bisim")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ZeroGroundWarning)
        sol = solve(near, "bisim", tol=1e-13, quotient=False)  # distances up to 5e-11 are genuine: no warning
    assert sol.converged and np.max(sol.distances) > 4e-11
    assert np.max(np.abs(sol.distances - truth)) <= sol.certified_error
    with pytest.warns(ZeroGroundWarning, match=r"differ by at most 1e-12.*within the certificate"):
        solve(near, "bisim", tol=1e-6, quotient=False)  # everything is below a 1e-6 certificate
    equal = FiniteMDP(mdp.transitions, np.full((6, 2), 2.5), 0.9)
    with pytest.warns(ZeroGroundWarning, match="every reward equals 2.5, so every bisim distance is 0"):
        assert np.max(solve(equal, "bisim").distances) == 0.0
