"""``bisimkit.cli``: the core commands' entry points under the core's name.

The command line is the package :mod:`bisimkit_cli`; the core commands (solve, relation, info,
examples, metrics) are :mod:`bisimkit_cli.core`. This module only names three of its functions for
code written against ``bisimkit.cli`` (``from bisimkit.cli import load_mdp_or_example, main``):
``main(argv)`` runs the core commands and returns the exit status, as before. No module of the
core imports it (``tests/test_layers.py``), so ``import bisimkit`` never loads the command line.
"""

from bisimkit_cli.core import build_parser, load_mdp_or_example, main

__all__ = ["build_parser", "load_mdp_or_example", "main"]
