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
    assert "ETA" in lines[1]
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
    assert format_fields({"return": 12.3456, "eval": None, "": "walker-walk", "steps/s": 3}) == \
        ["return 12.35", "walker-walk", "steps/s 3"]
    assert format_seconds(12.34) == "12.3 s" and format_seconds(600) == "10.0 min" and format_seconds(9000) == "2.5 h"
