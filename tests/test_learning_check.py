"""The pass rule of the CPU learning check (benchmarks/learning_check.py; the check itself is not a test)."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("dm_control")

from benchmarks.learning_check import CHECK_CONFIG, verdict  # noqa: E402


def test_the_last_three_evaluations_must_clear_the_random_policy():
    random = [120.0, 140.0]                      # mean 130, std 10: the margin of 100 dominates 3 std
    passed, last, mark = verdict([10, 50, 240, 250, 260], random)
    assert passed and last == 250 and mark == 230
    assert not verdict([10, 50, 400, 150, 100], random)[0]    # one lucky evaluation is not enough
    assert not verdict([240, 250, 260], random)[0]            # no untrained starting point: not a curve
    wide = [0.0, 200.0]                          # mean 100, std 100: 3 std dominates the margin
    assert verdict([0, 0, 390, 410, 400], wide) == (True, 400.0, 400.0)
    assert verdict([0, 0, 390, 410, 390], wide)[0] is False


def test_check_config_is_cpu_sized_and_valid():
    cfg = CHECK_CONFIG.validated()
    assert cfg.device == "cpu" and cfg.method == "drq" and cfg.stacked_frames
    assert not cfg.background and not cfg.camera
