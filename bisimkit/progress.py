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
delay=0.0, redraw_seconds=0.5, log_fraction=0.05, log_seconds=5.0, initial=0)``
    ``total``: units of work (``None`` when unknown, e.g. solver iterations);
    ``label``: what runs (the line starts with it); ``unit``: the units' name;
    ``enabled=False`` makes every call a no-op (``--quiet``); ``stream`` defaults to
    ``sys.stderr``; ``tty`` overrides the terminal detection; ``bar`` draws a
    ``[####    ]`` bar; ``delay``: seconds before the first line (short runs stay
    silent); ``initial``: units already done before this process started (a resumed
    run: the ETA uses the rate of this process's own work).
``show(done, fields=None, force=False)``
    Report ``done`` units finished, with extra ``fields`` (a dict: ``{"return": 12.5,
    "eval": None}`` prints ``return 12.5``; ``None`` values are skipped; an empty key
    prints the value alone; floats with 4 significant digits, strings as they are).
    ``force`` prints whatever the throttling says (e.g. after an evaluation).
``advance(k=1, fields=None, force=False)``
    ``show(done + k, ...)``.
``close()``
    Ends the line on a terminal; in a log, prints the final state if it was not
    printed yet.

What is printed: on a terminal, one line redrawn in place at most every
``redraw_seconds`` (twice a second); in a log (not a terminal), the first update and
then a new line each time the work crosses another multiple of ``log_fraction`` (5%)
of ``total``, or every ``log_seconds`` when the total is unknown. The line is::

    LABEL DONE/TOTAL UNIT (PCT%) [bar] | field value | ... | ELAPSED | ETA ...

with the ETA extrapolated from the average rate so far (only when ``total`` is known;
counted from ``initial``).
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any, Mapping, TextIO

#: Width a terminal line is padded to (so a shorter redraw wipes the longer one).
LINE_WIDTH = 110


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

    def __init__(self, total: int | None, label: str, *, unit: str = "", enabled: bool = True,
                 stream: TextIO | None = None, tty: bool | None = None, bar: bool = False, delay: float = 0.0,
                 redraw_seconds: float = 0.5, log_fraction: float = 0.05, log_seconds: float = 5.0,
                 initial: int = 0) -> None:
        self.total = None if total is None else max(int(total), 1)
        self.label, self.unit, self.enabled, self.bar, self.delay = label, unit, enabled, bar, delay
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(self.stream.isatty()) if tty is None else tty
        self.redraw_seconds, self.log_fraction, self.log_seconds = redraw_seconds, log_fraction, log_seconds
        self.start = time.monotonic()
        self.done = self.initial = int(initial)
        self.fields: Mapping[str, Any] | None = None
        self._last_time = -math.inf
        self._last_bucket = -1  # log mode: index of the last log_fraction step logged
        self._printed_state: tuple | None = None
        self.shown = False

    # ------------------------------------------------------------------ API
    def show(self, done: int, fields: Mapping[str, Any] | None = None, force: bool = False) -> None:
        """Report ``done`` units finished (see the module docstring)."""
        self.done, self.fields = done, fields
        if not self.enabled:
            return
        now = time.monotonic()
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
            self._write(self.line(time.monotonic()), time.monotonic())

    # ------------------------------------------------------------- helpers
    def fraction(self) -> float | None:
        """Share of the work done (None when the total is unknown)."""
        return None if self.total is None else min(self.done / self.total, 1.0)

    def line(self, now: float | None = None) -> str:
        """The progress line for the current state."""
        elapsed = (time.monotonic() if now is None else now) - self.start
        head = f"{self.label} {self.done}" + (f"/{self.total}" if self.total is not None else "")
        head += f" {self.unit}" if self.unit else ""
        frac = self.fraction()
        if frac is not None:
            head += f" ({100 * frac:.0f}%)"
            if self.bar:
                head += f" [{'#' * int(30 * frac):<30}]"
        parts = [head, *format_fields(self.fields), format_seconds(elapsed)]
        if frac is not None and self.initial < self.done < self.total:
            parts.append(f"ETA {format_seconds(elapsed * (self.total - self.done) / (self.done - self.initial))}")
        return " | ".join(parts)

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
