"""The loss checks of ``bisimkit verify`` (L1-L6): their plan, and each loss trained from samples to the exact
fixed point of its operator (docs/losses.md). Seeded CPU trainings of about a second each."""

import importlib.util

import numpy as np
import pytest

from bisimkit.generators import random_mdp
from validation.learning import (
    LOSS_CHECKS,
    LOSSES,
    QUICK_CONFIG,
    RELATIVE_TOLERANCE,
    TABULAR_LOSSES,
    Curve,
    exact_fixed_point,
    linear_gaussian_case,
    loss_cases,
    loss_ids,
    loss_plan,
    random_embedding,
    train_linear_gaussian,
    train_tabular,
)

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the trainings need torch")


def small_mdp():
    return random_mdp(4, 2, np.random.default_rng(7), discount=0.8, max_support=2)


def test_the_checks_are_numbered_and_planned_per_case():
    assert loss_ids() == [f"L{i}" for i in range(1, len(LOSS_CHECKS) + 1)]
    quick = loss_plan(quick=True)
    assert [(check.loss, case.family) for check, case in quick] == [
        ("entangled-reward", "random-sparse"),
        ("psm", "random-sparse"),
        ("dbc", "random-sparse"),
        ("entangled-gaussian", "linear-gaussian"),
    ]
    assert [check.id for check, _ in loss_plan(ids=["L1"])] == ["L1"] * sum(
        "entangled-reward" in case.losses for case in loss_cases()
    )


def test_an_unknown_loss_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^loss: unknown loss 'nope' \(choose from "):
        exact_fixed_point(small_mdp(), "nope")


def test_a_curve_holds_within_one_percent_of_the_largest_distance():
    curve = Curve(
        "psm",
        "psm-sampled",
        "m",
        [0],
        [1.0],
        scale=2.0,
        final_error=0.02,
        exact_diagonal=0.0,
        learned_diagonal=0.0,
        seconds=0.0,
    )
    assert curve.tolerance == 0.02 and curve.held and curve.to_json()["held"] is True
    assert not Curve("psm", "psm-sampled", "m", [0], [1.0], 2.0, 0.0201, 0.0, 0.0, 0.0).held


def test_the_gaussian_case_has_a_diagonal_closed_loop():
    model = linear_gaussian_case(3)
    M = np.asarray(model.A) + np.asarray(model.B) @ np.asarray(model.K)
    assert np.count_nonzero(M - np.diag(np.diag(M))) == 0
    assert random_embedding(4, 3, seed=1).shape == (4, 3)


@needs_torch
@pytest.mark.parametrize("loss", TABULAR_LOSSES)
def test_tabular_training_converges_to_the_exact_fixed_point(loss):
    mdp = small_mdp()
    curve = train_tabular(mdp, loss, QUICK_CONFIG)
    # Within 1% of the largest exact distance, over all pairs and the diagonal, in under 30 s.
    assert curve.final_error <= RELATIVE_TOLERANCE * curve.scale, curve.final_error
    assert curve.final_error < 0.05 * curve.error[0]
    assert curve.seconds < 30
    if LOSSES[loss].metric == "eps-bar":
        assert curve.exact_diagonal == 0 and curve.learned_diagonal <= curve.tolerance
    else:  # the sampled operators' positive self-distances are learned too
        assert curve.exact_diagonal > 0.2 and curve.learned_diagonal > 0.2


@needs_torch
def test_entangled_loss_converges_on_embedded_states():
    mdp = small_mdp()
    curve = train_tabular(mdp, "entangled-reward", QUICK_CONFIG, embedding=random_embedding(4, 3, seed=1))
    assert curve.final_error <= RELATIVE_TOLERANCE * curve.scale


def test_the_tolerance_tells_the_fixed_points_apart():
    """Learning the wrong operator could not pass: the fixed points differ by far more than 1%."""
    mdp = small_mdp()
    fixed = {loss: exact_fixed_point(mdp, loss) for loss in LOSSES}
    for a in LOSSES:
        for b in LOSSES:
            if LOSSES[a].metric != LOSSES[b].metric or LOSSES[a].ground != LOSSES[b].ground:
                gap = np.max(np.abs(fixed[a] - fixed[b]))
                assert gap > 5 * RELATIVE_TOLERANCE * max(np.abs(fixed[a]).max(), np.abs(fixed[b]).max()), (a, b)


@needs_torch
def test_entangled_loss_learns_the_exact_series():
    curve = train_linear_gaussian(linear_gaussian_case(0), QUICK_CONFIG)
    assert curve.held and curve.final_error <= 1e-6 * curve.scale  # the target is noise-free here
    assert curve.learned_diagonal == 0.0
    assert curve.error[0] > 100 * curve.final_error  # it learned, it did not start there


@needs_torch
def test_independent_noise_misses_it():
    curve = train_linear_gaussian(linear_gaussian_case(0), QUICK_CONFIG, coupling="independent")
    assert not curve.held and curve.final_error > 0.05 * curve.scale
