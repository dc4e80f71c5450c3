"""The ``bisimkit`` program: the core commands of :mod:`bisimkit.cli` plus ``verify`` and ``compare``."""

from __future__ import annotations

import sys

from bisimkit import cli

from .compare import add_compare_command
from .verify import add_verify_command

#: The subcommands this program adds to the core ones.
COMMANDS = (add_verify_command, add_compare_command)


def main(argv: list[str] | None = None) -> int:
    """Run ``bisimkit`` with ``argv``; returns the exit status."""
    return cli.main(argv, commands=COMMANDS)


def run() -> None:
    """Console-script entry point (``[project.scripts] bisimkit``)."""
    sys.exit(main())


if __name__ == "__main__":
    run()
