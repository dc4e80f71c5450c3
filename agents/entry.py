"""How the command lines of ``agents`` end on an error: one line and an exit status, never a traceback.

:func:`run_command` runs a command's body and turns

* bad input (:class:`bisimkit.errors.InputError`, and whatever else the command counts as bad
  input) into ``error: <its first line>`` on stderr and exit status 2;
* a missing optional module into the line naming the extra that brings it
  (:func:`bisimkit.extras.report_missing`) and exit status 2;
* a file error during the work (a full disk; output paths are checked before the work by
  :func:`bisimkit.files.check_output`) into one line and exit status 4;
* Ctrl-C into the command's hint (how to resume, when it can) and exit status 130.
"""

from __future__ import annotations

import sys
from typing import Callable

from bisimkit.errors import InputError
from bisimkit.extras import report_missing
from bisimkit.files import file_error_line

EXIT_INPUT, EXIT_IO, EXIT_INTERRUPTED = 2, 4, 130


def one_line(exc: BaseException) -> str:
    """The first line of an exception's text (its type's name when it has none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def run_command(
    body: Callable[[], int], interrupted: str | None = None, bad_input: tuple[type[Exception], ...] = (InputError,)
) -> int:
    """``body()``'s exit status, or the one of its error (see the module doc); ``interrupted``: what
    to print after ``interrupted: `` on Ctrl-C (nothing when None)."""
    try:
        return body()
    except bad_input as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return EXIT_INPUT
    except ModuleNotFoundError as exc:
        return report_missing(exc)
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a file that failed during the work (disk full): output paths are checked up front
        print(f"error: {file_error_line(exc)}", file=sys.stderr)
        return EXIT_IO
    except KeyboardInterrupt:
        if interrupted:
            print(f"interrupted: {interrupted}", file=sys.stderr)
        return EXIT_INTERRUPTED
