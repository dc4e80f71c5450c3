"""One progress line for every long command (``bisimkit solve``, ``bisimkit verify``, training).

Usage::

    bar = Progress(total=40, label="verify", unit="cases", bar=True)
    for case in cases:
        ...
        bar.advance(1, {"": case.family})            # or bar.show(done, fields)
    bar.close()

API
---
``Progress(total, label, *, unit="", enabled=True, stream=None, tty=None, bar=False,
delay=0.0, redraw_seconds=0.5, log_fraction=0.05, log_seconds=5.0, initial=0,
rate_label=None, window_seconds=60.0, pause_seconds=5.0, eta_after_seconds=10.0,
eta_after_updates=3, clock=None)``
    ``total``: units of work (``None`` when unknown, e.g. solver iterations);
    ``label``: what runs (the line starts with it); ``unit``: the units' name;
    ``enabled=False`` makes every call a no-op (``--quiet``); ``stream`` defaults to
    ``sys.stderr``; ``tty`` overrides the terminal detection; ``bar`` draws a
    ``[####    ]`` bar; ``delay``: seconds before the first line (short runs stay
    silent); ``initial``: units already done before this process started (a resumed
    run: the rate counts this process's own work); ``rate_label`` (e.g. ``"steps/s"``)
    adds the smoothed rate to the line under that name; ``clock``: a function
    returning seconds (default ``time.monotonic``; tests pass a fake one). The other
    knobs tune the rate and the ETA (below).
``show(done, fields=None, force=False)``
    Report ``done`` units finished, with extra ``fields`` (a dict: ``{"return": 12.5,
    "eval": None}`` prints ``return 12.5``; ``None`` values are skipped; an empty key
    prints the value alone; floats with 4 significant digits, strings as they are).
    ``force`` prints whatever the throttling says (e.g. after an evaluation).
``advance(k=1, fields=None, force=False)``
    ``show(done + k, ...)``.
``rate()``
    The smoothed rate in units per second (``None`` until there is one).
``eta()``
    Seconds left, or ``None`` while no estimate is meaningful.
``close()``
    Ends the line on a terminal; in a log, prints the final state if it was not
    printed yet.

What is printed: on a terminal, one line redrawn in place at most every
``redraw_seconds`` (twice a second); in a log (not a terminal), the first update and
then a new line each time the work crosses another multiple of ``log_fraction`` (5%)
of ``total``, or every ``log_seconds`` when the total is unknown. The line is::

    LABEL DONE/TOTAL UNIT (PCT%) [bar] | RATE_LABEL rate | field value | ... | ELAPSED | ETA ...

Rate and ETA. Work comes in phases of very different speed (a training run's
random seed steps, its updates, its evaluation pauses; ``verify``'s first case,
which compiles the kernels), so neither is the average since the start:

* every ``show`` is a sample (time, done); the time before the first one is
  start-up (building, compiling, a first evaluation) and counts in neither;
* an interval between two samples is a *pause* when it lasted ``pause_seconds``
  or more and ran at under a tenth of the current rate (an evaluation between
  two training steps); slow but steady work (every interval long) is not a pause;
* the rate is the units over the time of the working (non-pause) intervals of
  the last ``window_seconds`` of working time: it follows a change of phase
  within that window and forgets the phase before;
* the ETA is ``left / rate + left * paused / done``: the pauses so far, per unit
  done, are spread over the units left (evaluations recur with the work);
* no ETA until ``eta_after_updates`` working intervals and ``eta_after_seconds``
  of working time were seen (so never on the first line), and none once done.
"""

from __future__ import annotations

import math
import sys
import time
from collections import deque
from typing import Any, Callable, Mapping, TextIO

#: Width a terminal line is padded to (so a shorter redraw wipes the longer one).
LINE_WIDTH = 110
#: A long interval is a pause when its rate is under this share of the current rate.
PAUSE_SHARE = 0.1
#: Working intervals are merged into chunks of this share of the window (the window drops whole chunks).
CHUNK_SHARE = 1 / 30


def _monotonic() -> float:
    return time.monotonic()  # looked up at each call (tests replace time.monotonic)


def format_seconds(seconds: float) -> str:
    """``12.3 s`` under two minutes, ``4.5 min`` under two hours, else ``3.2 h``."""
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def format_fields(fields: Mapping[str, Any] | None) -> list[str]:
    """``key value`` items (floats to 4 significant digits; ``None`` values left out)."""
    items = []
    for key, value in (fields or {}).items():
        if value is None:
            continue
        text = f"{value:.4g}" if isinstance(value, float) else str(value)
        items.append(f"{key} {text}" if key else text)
    return items


class Progress:
    """A single-line progress reporter on stderr (see the module docstring for the API)."""

    def __init__(
        self,
        total: int | None,
        label: str,
        *,
        unit: str = "",
        enabled: bool = True,
        stream: TextIO | None = None,
        tty: bool | None = None,
        bar: bool = False,
        delay: float = 0.0,
        redraw_seconds: float = 0.5,
        log_fraction: float = 0.05,
        log_seconds: float = 5.0,
        initial: int = 0,
        rate_label: str | None = None,
        window_seconds: float = 60.0,
        pause_seconds: float = 5.0,
        eta_after_seconds: float = 10.0,
        eta_after_updates: int = 3,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.total = None if total is None else max(int(total), 1)
        self.label, self.unit, self.enabled, self.bar, self.delay = label, unit, enabled, bar, delay
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(self.stream.isatty()) if tty is None else tty
        self.redraw_seconds, self.log_fraction, self.log_seconds = redraw_seconds, log_fraction, log_seconds
        self.rate_label, self.window_seconds, self.pause_seconds = rate_label, window_seconds, pause_seconds
        self.eta_after_seconds, self.eta_after_updates = eta_after_seconds, eta_after_updates
        self.clock = clock if clock is not None else _monotonic
        self.start = self.clock()
        self.done = self.initial = int(initial)
        self.fields: Mapping[str, Any] | None = None
        self._last_time = -math.inf
        self._last_bucket = -1  # log mode: index of the last log_fraction step logged
        self._printed_state: tuple | None = None
        self.shown = False
        # the rate (see the module doc): the last sample, working chunks in the window, pauses so far
        self._sample: tuple[float, int] | None = None  # (time, done) of the last show; None: start-up
        self._first_done = self.initial  # done at the first sample (start-up excluded)
        self._chunks: deque[tuple[float, int]] = deque()  # (seconds, units) of closed working chunks
        self._chunks_time, self._chunks_units = 0.0, 0
        self._open_time, self._open_units = 0.0, 0  # the chunk being filled
        self._work_time, self._work_updates = 0.0, 0  # working seconds and intervals seen in all
        self.paused_seconds = 0.0

    # ------------------------------------------------------------------ API
    def show(self, done: int, fields: Mapping[str, Any] | None = None, force: bool = False) -> None:
        """Report ``done`` units finished (see the module docstring)."""
        if not self.enabled:
            self.done, self.fields = done, fields
            return
        now = self.clock()
        self._record(now, done)
        self.done, self.fields = done, fields
        if not force and not self._due(now):
            return
        self._write(self.line(now), now)

    def advance(self, k: int = 1, fields: Mapping[str, Any] | None = None, force: bool = False) -> None:
        """``show(done + k, fields, force)``."""
        self.show(self.done + k, fields, force)

    def close(self) -> None:
        """Finish: end the terminal line, or log the final state if it is not logged yet."""
        if not self.enabled:
            return
        if self.tty:
            if self.shown:
                self.stream.write("\n")
                self.stream.flush()
        elif self.shown and self._printed_state != self._state():
            now = self.clock()
            self._write(self.line(now), now)

    # ------------------------------------------------------------- helpers
    def fraction(self) -> float | None:
        """Share of the work done (None when the total is unknown)."""
        return None if self.total is None else min(self.done / self.total, 1.0)

    def rate(self) -> float | None:
        """Units per second over the working time of the last ``window_seconds`` (None before any)."""
        seconds, units = self._chunks_time + self._open_time, self._chunks_units + self._open_units
        return units / seconds if seconds > 0 and units > 0 else None

    def eta(self) -> float | None:
        """Seconds left: the units left at :meth:`rate`, plus the pauses so far per unit done spread over
        them; None while not meaningful (too few intervals or seconds seen, unknown total, or done)."""
        rate = self.rate()
        if (
            self.total is None
            or rate is None
            or not self.initial <= self.done < self.total
            or self._work_updates < self.eta_after_updates
            or self._work_time < self.eta_after_seconds
        ):
            return None
        left = self.total - self.done
        return left / rate + left * self.paused_seconds / max(self.done - self._first_done, 1)

    def line(self, now: float | None = None) -> str:
        """The progress line for the current state."""
        elapsed = (self.clock() if now is None else now) - self.start
        head = f"{self.label} {self.done}" + (f"/{self.total}" if self.total is not None else "")
        head += f" {self.unit}" if self.unit else ""
        frac = self.fraction()
        if frac is not None:
            head += f" ({100 * frac:.0f}%)"
            if self.bar:
                head += f" [{'#' * int(30 * frac):<30}]"
        rate = self.rate() if self.rate_label else None
        parts = [
            head,
            *format_fields({self.rate_label: rate} if self.rate_label else None),
            *format_fields(self.fields),
            format_seconds(elapsed),
        ]
        eta = self.eta()
        if eta is not None:
            parts.append(f"ETA {format_seconds(eta)}")
        return " | ".join(parts)

    def _record(self, now: float, done: int) -> None:
        """Take the sample (now, done): classify the interval since the last one (module doc)."""
        if self._sample is None:  # the first sample ends the start-up
            self._sample, self._first_done = (now, done), done
            return
        seconds, units = now - self._sample[0], max(done - self._sample[1], 0)
        self._sample = (now, done)
        rate = self.rate()
        if seconds >= self.pause_seconds and rate is not None and units < PAUSE_SHARE * rate * seconds:
            self.paused_seconds += seconds
            return
        self._work_time += seconds
        self._work_updates += 1
        self._open_time += seconds
        self._open_units += units
        if self._open_time >= CHUNK_SHARE * self.window_seconds:
            self._chunks.append((self._open_time, self._open_units))
            self._chunks_time += self._open_time
            self._chunks_units += self._open_units
            self._open_time, self._open_units = 0.0, 0
            while self._chunks and self._chunks_time + self._open_time - self._chunks[0][0] >= self.window_seconds:
                old_time, old_units = self._chunks.popleft()
                self._chunks_time -= old_time
                self._chunks_units -= old_units

    def _state(self) -> tuple:
        return (self.done, tuple(format_fields(self.fields)))

    def _due(self, now: float) -> bool:
        if now - self.start < self.delay:
            return False
        if self.tty:
            return now - self._last_time >= self.redraw_seconds
        frac = self.fraction()
        if frac is None:
            return now - self._last_time >= self.log_seconds
        return int(frac / self.log_fraction + 1e-9) > self._last_bucket

    def _write(self, line: str, now: float) -> None:
        if self.tty:
            self.stream.write("\r" + line[:LINE_WIDTH].ljust(LINE_WIDTH))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        self._last_time = now
        frac = self.fraction()
        if frac is not None:
            self._last_bucket = int(frac / self.log_fraction + 1e-9)
        self._printed_state = self._state()
        self.shown = True


def solve_progress(metric: str, tol: float) -> tuple[Progress, Callable[[int, float, float], None]]:
    """A progress line for a long solve (silent for the first second) and the solver callback feeding it
    (a :data:`bisimkit.engine.ProgressCallback`)."""
    line = Progress(None, f"[{metric}] iteration", delay=1.0)

    def report(iteration: int, err: float, elapsed: float) -> None:
        line.show(iteration, {"certified error": f"{err:.3e} (target {tol:.0e})"})

    return line, report
