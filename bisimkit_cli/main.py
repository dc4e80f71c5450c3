"""The ``bisimkit`` program: the core commands of :mod:`bisimkit_cli.core` plus ``verify`` and ``compare``."""

from __future__ import annotations

import argparse
import sys

from . import core


def add_verify(sub: argparse._SubParsersAction) -> None:
    """Add ``verify`` (:func:`bisimkit_cli.verify.add_verify_command`)."""
    from .verify import add_verify_command  # start-up cost: validation and hypothesis load in ~0.25 s

    add_verify_command(sub)


def add_compare(sub: argparse._SubParsersAction) -> None:
    """Add ``compare`` (:func:`bisimkit_cli.compare.add_compare_command`)."""
    from .compare import add_compare_command  # start-up cost: loads the comparison's modules

    add_compare_command(sub)


#: The subcommands this program adds to the core ones.
COMMANDS = (add_verify, add_compare)


def core_commands() -> set[str]:
    """The names of the commands :mod:`bisimkit_cli.core` defines itself."""
    parser = core.build_parser()
    return {
        name for action in parser._actions if isinstance(action, argparse._SubParsersAction) for name in action.choices
    }


def main(argv: list[str] | None = None) -> int:
    """Run ``bisimkit`` with ``argv``; returns the exit status. A core command (``solve``, ...) runs
    without the modules the added commands need, which would only slow its start."""
    args = sys.argv[1:] if argv is None else argv
    only_core = bool(args) and args[0] in core_commands()
    return core.main(argv, commands=() if only_core else COMMANDS)


def run() -> None:
    """Console-script entry point (``[project.scripts] bisimkit``)."""
    sys.exit(main())


if __name__ == "__main__":
    run()
