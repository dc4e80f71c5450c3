"""The float32 tolerances of the reference comparisons, by hand: fan-ins, the rounding of a loss and of a sum,
Adam's step bound and drift, and the checks built on them."""

import math

import pytest

torch = pytest.importorskip("torch")

from benchmarks.tolerance import (  # noqa: E402
    EPS32,
    Check,
    adam_drift,
    adam_step_bound,
    check_loss,
    check_weights,
    fan_ins,
    loss_rtol,
    reduction_rtol,
)


def test_fan_ins_and_the_rounding_of_a_loss():
    net = torch.nn.Sequential(torch.nn.Conv2d(2, 5, 3), torch.nn.ReLU(), torch.nn.Linear(7, 4))
    assert fan_ins(net, torch.nn.Linear(4, 1)) == [2 * 3 * 3, 7, 4]
    assert loss_rtol(net, torch.nn.Linear(4, 1)) == pytest.approx(3 * math.sqrt(18) * EPS32)
    assert reduction_rtol(10) == 10 * EPS32 and reduction_rtol(10**9) == 1.0


def test_adams_step_bound_and_drift():
    assert adam_step_bound(1) == pytest.approx(1.0)  # m_hat / sqrt(v_hat) = g / |g|
    assert adam_step_bound(10) > 1.0  # a sign flip after small gradients can exceed 1
    assert adam_drift(0.5, 1) == pytest.approx(1.0)  # 2 lr x 1
    assert adam_drift(1e-3, 3) == pytest.approx(2e-3 * sum(adam_step_bound(t) for t in (1, 2, 3)))


def test_checks_compare_against_their_tolerance():
    assert Check("x", 1.0, 2.0).ok and Check("x", 1.0, 2.0).ratio == 0.5 and not Check("x", 3.0, 2.0).ok
    check = check_loss("critic", torch.tensor(1.0001), torch.tensor(1.0), scale=2.0, rtol=1e-4)
    assert check.tolerance == pytest.approx(2e-4) and check.ok
    same = torch.ones(3)
    largest, mean = check_weights([("w", same, same.clone())], lr=1e-3, steps=2, share=0.5)
    assert largest.measured == 0 and largest.ok and mean.ok and largest.what == "w (largest entry)"
    far = check_weights([("w", same + 1.0, same)], lr=1e-3, steps=2, share=0.5)
    assert not far[0].ok and not far[1].ok
