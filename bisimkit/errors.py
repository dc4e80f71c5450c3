"""The one exception type that bad input raises.

Every check on user input raises :class:`InputError` with a message that names
the offending field and index, so the command line can print one line and exit
with status 2 instead of a traceback.
"""

from __future__ import annotations


class InputError(ValueError):
    """Input that bisimkit refuses: wrong shape, bad value, unreadable file."""


def check_count(name: str, value, low: int = 1) -> int:
    """``value`` as an int if it is an integer >= ``low`` (bools are refused); otherwise
    :class:`InputError` naming ``name`` ("is not a positive integer" for ``low=1``,
    "a non-negative integer" for 0, "an integer >= low" otherwise)."""
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        kind = {1: "a positive integer", 0: "a non-negative integer"}.get(low, f"an integer >= {low}")
        raise InputError(f"{name}: {value!r} is not {kind}")
    return int(value)
