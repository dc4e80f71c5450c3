"""The torch-free half of fitting: the loss names, the fixed point each loss learns, the schedule's checks."""

from __future__ import annotations

import numpy as np
import pytest

from bisimkit import example, solve
from bisimkit.errors import InputError
from bisimkit.fitting import DBC_TARGET_EVERY, FIT_LOSSES, FIXED_POINTS, FitSchedule, check_fit_loss, fixed_point


def test_every_loss_has_its_fixed_point():
    assert set(FIXED_POINTS) == set(FIT_LOSSES)
    assert [check_fit_loss(loss) for loss in FIT_LOSSES] == list(FIT_LOSSES)
    with pytest.raises(InputError, match=r"^loss: unknown loss 'entangled' \(choose from entangled-reward, "):
        check_fit_loss("entangled")


def test_the_fixed_point_is_the_operator_solution():
    mdp = example("chain")
    assert np.array_equal(
        fixed_point(mdp, "entangled-policy"), solve(mdp, "eps-bar", ground="policy", tol=1e-10).distances
    )
    assert np.array_equal(fixed_point(mdp, "mico"), solve(mdp, "mico", tol=1e-10).distances)


def test_the_target_period_resolves_per_loss():
    assert FitSchedule().target_period("dbc") == DBC_TARGET_EVERY and FitSchedule().target_period("psm") == 1
    assert FitSchedule(target_every=3).target_period("dbc") == 3


@pytest.mark.parametrize(
    "field, value",
    [
        ("steps", 0),
        ("batch", -3),
        ("samples", 1.5),
        ("decay_start", 0),
        ("log_every", 0),
        ("target_every", 0),
        ("seed", -1),
        ("step_size", 2.0),
        ("step_size", 0),
        ("decay_power", 0.5),
        ("decay_power", float("nan")),
        ("average_from", 1.5),
        ("steps", True),
    ],
)
def test_bad_schedule_values_name_the_field(field, value):
    from bisimkit.fitting import FitSchedule  # torch-free

    with pytest.raises(ValueError) as info:
        FitSchedule(**{field: value})
    message = str(info.value)
    assert message.startswith(f"{field}: ") and "\n" not in message
