"""The one exception type that bad input raises.

Every check on user input raises :class:`InputError` with a message that names
the offending field and index, so the command line can print one line and exit
with status 2 instead of a traceback.
"""

from __future__ import annotations

import numbers


class InputError(ValueError):
    """Input that bisimkit refuses: wrong shape, bad value, unreadable file.

    ``param`` names the function parameter at fault when there is one: the message
    then reads ``"metric: unknown metric 'x' (...)"`` for a Python caller, and the
    command line, which knows which flag fed that parameter, shows it as
    ``--metric: ...`` (:meth:`for_option`).
    """

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(f"{param}: {message}" if param else message)
        self.param = param
        self.detail = message

    def for_option(self, options: set[str] | frozenset[str] = frozenset()) -> str:
        """The message with the parameter shown as the command-line option ``--param``
        when ``--param`` (underscores as hyphens) is among ``options``."""
        flag = f"--{self.param.replace('_', '-')}" if self.param else None
        return f"{flag}: {self.detail}" if flag in options else str(self)


def check_count(name: str, value, low: int = 1) -> int:
    """``value`` as an int if it is an integer >= ``low`` (bools are refused); otherwise
    :class:`InputError` naming ``name`` ("is not a positive integer" for ``low=1``,
    "a non-negative integer" for 0, "an integer >= low" otherwise)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        kind = {1: "a positive integer", 0: "a non-negative integer"}.get(low, f"an integer >= {low}")
        raise InputError(f"{value!r} is not {kind}", param=name)
    return int(value)
