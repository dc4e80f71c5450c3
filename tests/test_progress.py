"""The one progress line (bisimkit.progress): throttling on a terminal, 5% steps in a log, ETA."""

import io

import pytest

import bisimkit.progress as progress
from bisimkit.progress import Progress, format_fields, format_seconds


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(progress.time, "monotonic", c)
    return c


def test_log_gets_one_line_per_five_percent_and_the_end(clock):
    out = io.StringIO()
    bar = Progress(200, "verify", unit="cases", stream=out, tty=False)
    for k in range(1, 201):
        clock.now += 0.1
        bar.show(k, {"": f"case {k}"})
    bar.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 21  # the start, then 5%, 10%, ..., 100%
    assert lines[0].startswith("verify 1/200 cases (0%)") and lines[1].startswith("verify 10/200 cases (5%)")
    # an ETA once 10 s of work were seen (the first case is start-up): 10 cases/s, exactly
    assert ["ETA" in line for line in lines] == [False] * 11 + [True] * 9 + [False]
    assert lines[11].startswith("verify 110/200 cases (55%)") and lines[11].endswith("| 11.0 s | ETA 9.0 s")
    assert lines[-1].startswith("verify 200/200 cases (100%)") and "ETA" not in lines[-1]


def test_terminal_redraws_at_most_twice_a_second(clock):
    out = io.StringIO()
    bar = Progress(1000, "train", stream=out, tty=True)
    for k in range(100):  # 100 updates in 0.99 s: two redraws
        bar.show(k)
        clock.now += 0.01
    assert out.getvalue().count("\r") == 2
    bar.show(100, force=True)  # forced: drawn at once
    assert out.getvalue().count("\r") == 3
    bar.close()
    assert out.getvalue().endswith("\n")


def test_unknown_total_logs_every_few_seconds_after_the_delay(clock):
    out = io.StringIO()
    bar = Progress(None, "[pi] iteration", stream=out, tty=False, delay=1.0, log_seconds=5.0)
    for it in range(1, 81):
        clock.now += 0.125  # 10 s in all
        bar.show(it, {"certified error": "1.000e-05 (target 1e-09)"})
    lines = out.getvalue().splitlines()
    assert len(lines) == 2  # at 1.0 s (after the delay) and 5 s later
    assert lines[0] == "[pi] iteration 8 | certified error 1.000e-05 (target 1e-09) | 1.0 s"


def test_short_runs_and_disabled_bars_stay_silent(clock):
    out = io.StringIO()
    quick = Progress(None, "solve", stream=out, tty=True, delay=1.0)
    quick.show(3)
    quick.close()
    off = Progress(10, "verify", stream=out, enabled=False)
    off.show(5, force=True)
    off.close()
    assert out.getvalue() == ""


def test_fields_and_times_are_formatted():
    assert format_fields({"return": 12.3456, "eval": None, "": "walker-walk", "steps/s": 3}) == [
        "return 12.35",
        "walker-walk",
        "steps/s 3",
    ]
    assert format_seconds(12.34) == "12.3 s" and format_seconds(600) == "10.0 min" and format_seconds(9000) == "2.5 h"


def eta_seconds(line: str) -> float | None:
    """The ETA of a progress line in seconds (None without one)."""
    if "ETA " not in line:
        return None
    value, unit = line.rsplit("ETA ", 1)[1].split()
    return float(value) * {"s": 1, "min": 60, "h": 3600}[unit]


def test_the_rate_follows_the_steady_phase_not_a_burst_or_a_pause():
    """A training run: 15 s of start-up, 400 random steps at 1000/s, then updates at 10 steps/s with a
    60 s evaluation every 400 steps: the rate is the updates' 10/s, the ETA spreads the evaluations."""
    clock = Clock()
    out = io.StringIO()
    bar = Progress(20_000, "train", unit="env steps", stream=out, tty=False, rate_label="steps/s", clock=clock)
    clock.now += 15.0
    done = 8
    bar.show(done)  # the start-up (building, the first evaluation) ends here
    while done < 400:
        clock.now += 0.008
        done += 8
        bar.show(done)
    assert bar.rate() == pytest.approx(1000)
    while done < 3200:
        clock.now += 0.8
        done += 8
        if done % 400 == 0:
            clock.now += 60.0  # an evaluation between two steps
        bar.show(done)
    assert bar.rate() == pytest.approx(10)  # the burst left the 60 s window, the pauses are not in it
    assert bar.paused_seconds == pytest.approx(7 * 60.8)
    left = 20_000 - 3200
    assert bar.eta() == pytest.approx(left / 10 + left * 7 * 60.8 / (3200 - 8))
    lines = out.getvalue().splitlines()
    assert "steps/s" not in lines[0] and "ETA" not in lines[0]  # no rate or ETA from the start-up alone
    assert "steps/s 10 |" in lines[-1]
    for line in lines:  # never an ETA of (almost) nothing while far from done
        eta = eta_seconds(line)
        assert eta is None or eta > 60, line


def test_a_slow_first_case_gives_no_absurd_first_eta():
    """``bisimkit verify``: the first case compiles for 30 s, then 1000 cases of 0.05 s."""
    clock = Clock()
    out = io.StringIO()
    bar = Progress(1001, "verify", unit="cases", stream=out, tty=False, clock=clock)
    clock.now += 30.0
    bar.advance(1)
    for _ in range(1000):
        clock.now += 0.05
        bar.advance(1)
    bar.close()
    lines = out.getvalue().splitlines()
    assert "ETA" not in lines[0]
    for line, k in zip(lines[1:-1], range(50, 1001, 50)):  # 5%, 10%, ...: cases 50, 100, ... (+1)
        eta = eta_seconds(line)
        assert eta is None or eta == pytest.approx((1000 - k) * 0.05, abs=0.1), line
    assert eta_seconds(lines[5]) == pytest.approx((1001 - 251) * 0.05, abs=0.1)


def test_slow_steady_work_is_not_a_pause():
    clock = Clock()
    bar = Progress(10, "solve", stream=io.StringIO(), tty=False, clock=clock)
    for k in range(1, 6):
        clock.now += 20.0  # every unit takes 20 s: long intervals at the steady rate
        bar.show(k)
    assert bar.paused_seconds == 0 and bar.rate() == pytest.approx(0.05)
    assert bar.eta() == pytest.approx(5 * 20.0)
