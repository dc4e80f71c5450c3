"""The one exception type that bad input raises.

Every check on user input raises :class:`InputError` with a message that names
the offending field and index, so the command line can print one line and exit
with status 2 instead of a traceback.
"""

from __future__ import annotations


class InputError(ValueError):
    """Input that bisimkit refuses: wrong shape, bad value, unreadable file."""
